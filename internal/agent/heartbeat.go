package agent

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// MinHeartbeat is the shortest default heartbeat period, whatever the interval (the
// default interval is as long): every heartbeat changes the GPUNode's resourceVersion, and
// the controllers' writes guarded by it must then start again. A heartbeat every few
// hundred milliseconds on a loaded API server keeps them starting again (test/e2e's fleet
// of 50 agents at a 500 ms interval released no node in 4 minutes).
const MinHeartbeat = 30 * time.Second

// liveness is what the heartbeat knows of the publishing loop, shared between the loop
// and the heartbeat goroutine.
type liveness struct {
	// published is when a round last published the status (Unix nanoseconds; 0: never).
	published atomic.Int64
	// busy counts the long steps under way (an acceptance run, a remediation step): the
	// loop makes progress while they run, though no round ends.
	busy atomic.Int32
	// first is signalled once, after the first round that published the status.
	first chan struct{}
}

// roundPublished records a round that published (or found unchanged) the status.
func (a *Agent) roundPublished() {
	if a.live.published.Swap(a.cfg.Clock().UnixNano()) == 0 {
		select {
		case a.live.first <- struct{}{}:
		default:
		}
	}
}

// during runs step as a long step: the heartbeat goes on while it runs.
func (a *Agent) during(step func()) {
	a.live.busy.Add(1)
	defer a.live.busy.Add(-1)
	step()
}

// stalledAfter is how long after the last published round, with no long step under way,
// the publishing loop counts as stalled (a GPU read that hangs, say): the heartbeat then
// stops, and the controller holds the node once agentLostAfter passes.
func (a *Agent) stalledAfter() time.Duration {
	return 3*a.cfg.Interval + a.cfg.MaxBackoff
}

// alive reports whether the publishing loop makes progress at now.
func (a *Agent) alive(now time.Time) bool {
	last := a.live.published.Load()
	if last == 0 {
		return false // the GPUNode may not exist yet, and its status is not this run's
	}
	return a.live.busy.Load() > 0 || now.Sub(time.Unix(0, last)) <= a.stalledAfter()
}

// heartbeat writes status.agent.heartbeatTime once the first round published the status
// (so that a fresh heartbeat always comes with this run's status) and then every
// Config.Heartbeat while the loop is alive. It is its own goroutine, so that a long acceptance
// run does not silence it, and writes with its own field manager, so that the status
// apply of a round never removes it. A failed write is retried at the next tick.
func (a *Agent) heartbeat(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-a.live.first:
	}
	tick := time.NewTicker(a.cfg.Heartbeat)
	defer tick.Stop()
	for {
		now := a.cfg.Clock()
		if !a.alive(now) {
			a.cfg.Log.Warn("the publishing loop made no progress; no heartbeat", "node", a.cfg.NodeName,
				"since", time.Unix(0, a.live.published.Load()).UTC(), "stalledAfter", a.stalledAfter())
		} else if err := a.beat(ctx, now); err != nil && ctx.Err() == nil {
			a.cfg.Log.Warn("heartbeat failed; retrying at the next interval", "node", a.cfg.NodeName, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// beat applies the heartbeat alone to the GPUNode's status.
func (a *Agent) beat(ctx context.Context, now time.Time) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": a.cfg.NodeName},
		"status":   map[string]any{"agent": map[string]any{"heartbeatTime": now.UTC().Format(time.RFC3339)}},
	}}
	err := a.cfg.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerAgentHeartbeat), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("heartbeat of GPUNode %q: %w", a.cfg.NodeName, err)
	}
	return nil
}
