package dra

import (
	"context"
	"reflect"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// DefaultLayoutPoll is how often the GPUs' MIG layout is read, when the backend can read it
// alone (gpu.MIGLayoutSource): a MIG device created or destroyed outside the agent
// (nvidia-smi, mig-parted) is republished within this long and one slice write.
const DefaultLayoutPoll = 500 * time.Millisecond

// followLayout reads the MIG layout every LayoutPoll until ctx ends, and asks for the slice
// to be recomputed when it differs from the one before (the first, base, was read before
// the slice was first computed, so no change between the two is missed). A read that fails
// is skipped: the next one compares with the last layout read.
func (p *Plugin) followLayout(ctx context.Context, src gpu.MIGLayoutSource, base gpu.MIGLayout) {
	tick := time.NewTicker(p.cfg.LayoutPoll)
	defer tick.Stop()
	last := base
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l, err := src.MIGLayout(ctx)
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(l, last) {
			p.cfg.Log.Info("dra: the GPUs' MIG layout changed; the slice is recomputed")
			p.Notify()
		}
		last = l
	}
}

// layoutSource is the backend's MIG layout reader, and the layout now; nil when the backend
// has none (the slice then follows the layout at every Resync).
func (p *Plugin) layoutSource(ctx context.Context) (gpu.MIGLayoutSource, gpu.MIGLayout) {
	src, ok := p.cfg.Backend.(gpu.MIGLayoutSource)
	if !ok {
		return nil, nil
	}
	base, err := src.MIGLayout(ctx)
	if err != nil {
		p.cfg.Log.Warn("dra: the MIG layout cannot be read; it is followed at every resync", "err", err)
		base = nil
	}
	return src, base
}
