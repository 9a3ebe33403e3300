package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
)

// recovered tells the health monitor that a recovery was carried out on uuids (nil: every
// GPU): a GPU whose required action it covers then awaits its check; and the XIDs the
// recovery covered are no longer counted by acceptance (cleared.go).
func (a *Agent) recovered(ctx context.Context, uuids []string, kind health.RecoveryKind) {
	a.noteRecovery(ctx, uuids, kind)
	for _, g := range a.mon.Health() {
		if uuids != nil && !slices.Contains(uuids, g.UUID) {
			continue
		}
		if err := a.mon.Apply(g.UUID, health.Recovered{Kind: kind}); err != nil {
			a.cfg.Log.Warn("recording a recovery failed", "node", a.cfg.NodeName, "gpu", g.UUID, "err", err)
		}
	}
}

// checkGPUs is the per-GPU check after a recovery: a fresh snapshot judged against pre (the
// snapshot before the step; nil after a reboot) by the health engine. A GPU with a finding
// that makes it unhealthy fails the check with that finding's action; the others pass. It
// returns a summary for the answer: how many of the GPUs are healthy after it (a passing
// check does not clear a GPU whose required action the step did not cover). The controller's acceptance run comes after, and is
// the node's gate; this check is what lets the device plugin re-admit a GPU.
func (a *Agent) checkGPUs(ctx context.Context, pre *gpu.Snapshot, uuids []string) string {
	cur, err := a.cfg.Backend.Snapshot(ctx)
	if err != nil {
		return fmt.Sprintf("not run: %v", err)
	}
	failed := map[string]health.Finding{}
	for _, f := range health.FromSnapshot(pre, cur, a.mon.Thresholds()) {
		if _, seen := failed[f.GPU]; !seen && f.Unhealthy() {
			failed[f.GPU] = f
		}
	}
	checked := map[string]bool{}
	for _, g := range a.mon.Health() {
		if uuids != nil && !slices.Contains(uuids, g.UUID) {
			continue
		}
		var in health.Input = health.CheckPassed{}
		if f, bad := failed[g.UUID]; bad {
			in = health.CheckFailed{Check: f.Cause, Action: f.Action}
		}
		if err := a.mon.Apply(g.UUID, in); err != nil {
			a.cfg.Log.Warn("recording a GPU check failed", "node", a.cfg.NodeName, "gpu", g.UUID, "err", err)
		}
		checked[g.UUID] = true
	}
	if a.cfg.OnHealthChange != nil {
		a.cfg.OnHealthChange()
	}
	healthy, unhealthy := 0, 0
	for _, g := range a.mon.Health() { // a check clears only a GPU whose action the step covered
		switch {
		case !checked[g.UUID]:
		case g.Health == health.Unhealthy:
			unhealthy++
		default:
			healthy++
		}
	}
	return fmt.Sprintf("%d healthy, %d still unhealthy", healthy, unhealthy)
}
