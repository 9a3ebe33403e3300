package monitor

import (
	"context"
	"time"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/kmsg"
)

// FollowKmsg follows the live kernel log with f (its cursor, start mode and trust rules).
func FollowKmsg(f *kmsg.Follower) KernelSource {
	return func(ctx context.Context, emit func(KernelLine)) error {
		err := f.Run(ctx, func(it kmsg.Item) error {
			if it.Gap != nil {
				emit(KernelLine{Lost: it.Gap.Lost()})
				return nil
			}
			emit(KernelLine{Text: it.Record.Message})
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

// SimKernel follows a simulated node's kernel log, checking for new lines every interval
// (its lines appear when their fault's time comes, or when a fault is injected); after a
// simulated reboot it follows the new boot's log from its start.
func SimKernel(b *sim.Backend, every time.Duration) KernelSource {
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	return func(ctx context.Context, emit func(KernelLine)) error {
		seen, boot := 0, b.BootID()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if id := b.BootID(); id != boot { // a reboot: the kernel log starts over
				seen, boot = 0, id
			}
			lines := b.KernelLog()
			for _, l := range lines[min(seen, len(lines)):] {
				emit(KernelLine{Time: l.Time, Text: l.Text, Boot: boot})
			}
			seen = max(seen, len(lines))
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}
