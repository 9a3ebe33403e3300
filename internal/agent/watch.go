package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// watchSpec wakes the loop whenever the controller changes the GPUNode's spec (it asked
// for acceptance or a remediation step), so that a request is answered at once instead of
// at the next --interval. The agent's own status writes do not change the generation, so
// they do not wake it. A watch that ends or fails is started again after a capped backoff;
// the interval's polling goes on regardless, so nothing depends on the watch.
func (a *Agent) watchSpec(ctx context.Context, w client.WithWatch) {
	var generation int64
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := a.watchOnce(ctx, w, &generation)
		if ctx.Err() != nil {
			return
		}
		backoff = nextBackoff(backoff, a.cfg.MinBackoff, a.cfg.MaxBackoff)
		a.cfg.Log.Debug("GPUNode watch ended; watching again", "node", a.cfg.NodeName, "in", backoff, "err", err)
		if !sleep(ctx, backoff, nil) {
			return
		}
	}
}

// watchOnce watches the node's GPUNode until the watch ends; generation is the last
// generation seen, across watches.
func (a *Agent) watchOnce(ctx context.Context, w client.WithWatch, generation *int64) error {
	wi, err := w.Watch(ctx, &v1alpha1.GPUNodeList{}, client.MatchingFields{"metadata.name": a.cfg.NodeName})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-wi.ResultChan():
			if !open {
				return nil
			}
			gn, isNode := ev.Object.(*v1alpha1.GPUNode)
			if !isNode || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if gn.Generation != *generation {
				*generation = gn.Generation
				a.poke()
			}
		}
	}
}
