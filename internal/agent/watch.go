package agent

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// watched is what the agent's watches keep between rounds, so that a round reads from the
// API server only what no watch follows: the GPUNode as the watch last delivered it, and
// whether a GPUNodePolicy changed since the policies were last listed.
type watched struct {
	// gpuNode is the GPUNode's latest version from the watch; nil while no watch is
	// established or after the GPUNode was deleted (the round then reads it).
	gpuNode atomic.Pointer[v1alpha1.GPUNode]
	// policiesWatched is set while the policy watch is established.
	policiesWatched atomic.Bool
	// policiesChanged is set by every policy event and by each start of the watch (what
	// happened before it is not known); the round that lists the policies clears it.
	policiesChanged atomic.Bool
}

// keepWatching runs once until ctx ends, starting it again after a capped backoff when it
// ends or fails; the interval's polling goes on regardless, so nothing depends on a watch.
func (a *Agent) keepWatching(ctx context.Context, what string, once func(context.Context) error) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := once(ctx)
		if ctx.Err() != nil {
			return
		}
		backoff = nextBackoff(backoff, a.cfg.MinBackoff, a.cfg.MaxBackoff)
		a.cfg.Log.Debug("watch ended; watching again", "node", a.cfg.NodeName, "watch", what, "in", backoff, "err", err)
		if !sleep(ctx, backoff, nil) {
			return
		}
	}
}

// watchSpec wakes the loop whenever the controller changes the GPUNode's spec (it asked
// for acceptance or a remediation step), so that a request is answered at once instead of
// at the next --interval. The agent's own status writes do not change the generation, so
// they do not wake it. Every version the watch delivers is kept for the next round (ensure),
// which then needs no read of its own.
func (a *Agent) watchSpec(ctx context.Context, w client.WithWatch) {
	var generation int64
	a.keepWatching(ctx, "GPUNode", func(ctx context.Context) error { return a.watchOnce(ctx, w, &generation) })
}

// watchOnce watches the node's GPUNode until the watch ends; generation is the last
// generation seen, across watches.
func (a *Agent) watchOnce(ctx context.Context, w client.WithWatch, generation *int64) error {
	wi, err := w.Watch(ctx, &v1alpha1.GPUNodeList{}, client.MatchingFields{"metadata.name": a.cfg.NodeName})
	if err != nil {
		return err
	}
	defer wi.Stop()
	defer a.watched.gpuNode.Store(nil) // not followed any more: the round reads it
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-wi.ResultChan():
			if !open {
				return nil
			}
			gn, isNode := ev.Object.(*v1alpha1.GPUNode)
			if !isNode {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				a.watched.gpuNode.Store(nil)
				continue
			case watch.Added, watch.Modified:
			default:
				continue
			}
			a.watched.gpuNode.Store(gn)
			if gn.Generation != *generation {
				*generation = gn.Generation
				a.poke()
			}
		}
	}
}
