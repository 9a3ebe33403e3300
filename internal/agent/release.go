package agent

import (
	"context"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/health"
)

// CheckAcceptance names the check a GPU fails when the acceptance run after a release
// fails (its cause reads "check-failed/acceptance").
const CheckAcceptance = "acceptance"

// released is true when the controller asks for acceptance because a person released the
// node from Maintenance: the GPUs were serviced, and this run decides whether they are
// healthy again.
func released(gn *v1alpha1.GPUNode) bool {
	return gn.Spec.AcceptanceReason == v1alpha1.AcceptanceReasonReleased
}

// serviced records, before the acceptance run of a release, that a person serviced every
// GPU: a GPU whose action is at most "service" then awaits its check (health.Next).
func (a *Agent) serviced(ctx context.Context) {
	lines, err := a.coveredBy(ctx, nil, health.RecoveryServiced)
	if err != nil {
		a.cfg.Log.Warn("reading the XIDs a recovery covered failed; they will be judged", "node", a.cfg.NodeName, "err", err)
	}
	a.recovered(ctx, nil, health.RecoveryServiced, lines)
	a.cfg.Log.Info("released from Maintenance: every GPU counts as serviced until acceptance decides",
		"node", a.cfg.NodeName)
}

// afterRelease feeds the acceptance result of a release to every GPU: a passing run is
// the check that makes a serviced GPU healthy again; a failing one fails the check of each
// GPU that was awaiting it, so it stays unhealthy and no later check clears it by accident.
// A GPU that was healthy is left alone by a failing run (the failure may be the host's).
func (a *Agent) afterRelease(rec *v1alpha1.AcceptanceRecord) {
	passed := rec.Spec.Result == v1alpha1.AcceptancePassed
	healthy, unhealthy := 0, 0
	for _, g := range a.mon.Health() {
		var in health.Input = health.CheckPassed{}
		if !passed {
			if !g.AwaitingCheck {
				continue
			}
			in = health.CheckFailed{Check: CheckAcceptance}
		}
		if err := a.mon.Apply(g.UUID, in); err != nil {
			a.cfg.Log.Warn("recording the acceptance result on a GPU failed", "node", a.cfg.NodeName, "gpu", g.UUID, "err", err)
		}
	}
	for _, g := range a.mon.Health() {
		if g.Health == health.Unhealthy {
			unhealthy++
		} else {
			healthy++
		}
	}
	if a.cfg.OnHealthChange != nil {
		a.cfg.OnHealthChange()
	}
	a.cfg.Log.Info("acceptance after the release decided the GPUs' health", "node", a.cfg.NodeName,
		"record", rec.Name, "result", rec.Spec.Result, "healthy", healthy, "unhealthy", unhealthy)
}
