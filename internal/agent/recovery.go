package agent

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// recovered tells the health monitor that a recovery was carried out on uuids (nil: every
// GPU): a GPU whose required action it covers then awaits its check; and lines, the XIDs the
// recovery covered, go into the cleared set (cleared.go), which the monitor and acceptance
// no longer judge. It returns a note for the answer when the set could not be kept.
func (a *Agent) recovered(ctx context.Context, uuids []string, kind health.RecoveryKind, lines []ClearedLine) string {
	note := ""
	if err := a.clear(ctx, lines, kind); err != nil {
		a.cfg.Log.Warn("keeping the cleared XIDs on the host failed; a restarted agent judges them again", "node", a.cfg.NodeName, "err", err)
		note = fmt.Sprintf("; %v", err)
	}
	if err := a.mon.Recovered(uuids, kind); err != nil {
		a.cfg.Log.Warn("recording a recovery failed", "node", a.cfg.NodeName, "err", err)
	}
	return note
}

// checkGPUs is the per-GPU check after a recovery (the health monitor's Check, the same one
// its own polls run when they see a recovery): a fresh snapshot judged against pre (the
// snapshot before the step; nil after a reboot). It returns a summary for the answer: how
// many of the GPUs are healthy after it. The controller's acceptance run comes after, and
// is the node's gate; this check is what lets the device plugin re-admit a GPU.
func (a *Agent) checkGPUs(ctx context.Context, pre *gpu.Snapshot, uuids []string) string {
	res, err := a.mon.Check(ctx, pre, uuids)
	if a.cfg.OnHealthChange != nil {
		a.cfg.OnHealthChange()
	}
	if err != nil {
		if res == (monitor.CheckResult{}) {
			return fmt.Sprintf("not run: %v", err)
		}
		a.cfg.Log.Warn("recording a GPU check failed", "node", a.cfg.NodeName, "err", err)
	}
	return res.String()
}
