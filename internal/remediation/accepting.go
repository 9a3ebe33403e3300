package remediation

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/health"
)

// accepting: the step succeeded; the targeted acceptance decides.
func (d *decider) accepting() {
	if d.s.AfterRelease {
		d.acceptingAfterRelease()
		return
	}
	a, step := d.s.current(), d.s.Step
	if d.need.Remediate && d.need.Start.Rank() > step.Rank() {
		d.notCleared(a, fmt.Sprintf("a fault that needs %s appeared (%s)", d.need.Start, d.faultNow()))
		return
	}
	acc, gen := d.f.Acceptance, d.s.AcceptanceGeneration
	deadline := d.s.AcceptanceRequestedAt.Add(d.p.AcceptanceTimeout)
	switch {
	case acc.Generation >= gen && acc.Passed && d.healthLagging() && d.now.Before(deadline):
		d.wait(WaitAcceptance, deadline, ReasonAccepting, "acceptance generation %d passed; waiting for the GPUs' health to show it", gen)
	case acc.Generation >= gen && acc.Passed && !d.need.overlaps(d.s.GPUs, d.wholeNode()):
		if a != nil {
			a.Result = AttemptCleared
		}
		d.recovered(step, gen)
	case acc.Generation >= gen && acc.Passed:
		d.notCleared(a, fmt.Sprintf("acceptance generation %d passed but the fault remains (%s)", acc.Generation, d.faultNow()))
	case acc.Generation >= gen:
		d.notCleared(a, fmt.Sprintf("acceptance generation %d failed", acc.Generation))
	case !d.now.Before(deadline):
		d.notCleared(a, fmt.Sprintf("acceptance generation %d did not answer within %s", gen, d.p.AcceptanceTimeout))
	default:
		d.redeliverAcceptance()
		d.wait(WaitAcceptance, deadline, ReasonAccepting, "waiting for acceptance generation %d after %s", gen, step)
	}
}

// faultNow describes the faults the facts show now.
func (d *decider) faultNow() string {
	if len(d.need.Causes) == 0 {
		return "no fault in the GPUs' health"
	}
	return fmt.Sprint(d.need.Causes)
}

// wholeNode: the current step acted on the whole node, so every fault on it is its concern.
func (d *decider) wholeNode() bool { return d.s.NodeWide || (d.s.Step != "" && !d.s.Step.PerGPU()) }

// healthLagging: a passing acceptance has not reached the episode's GPUs' health yet.
func (d *decider) healthLagging() bool {
	return slices.ContainsFunc(d.f.GPUs, func(g GPU) bool {
		in := d.wholeNode() || len(d.s.GPUs) == 0 || slices.Contains(d.s.GPUs, g.Index)
		return in && g.Health == health.Unhealthy && g.AwaitingCheck
	})
}

// recovered closes the episode. Another fault that arrived meanwhile opens the next one
// at once under the same hold; otherwise the hold is released.
func (d *decider) recovered(step Step, gen int64) {
	msg := fmt.Sprintf("%s cleared the fault on %s; acceptance generation %d passed", step, gpuText(d.scopeGPUs(step)), gen)
	d.s = d.s.closeEpisode()
	if d.need.Remediate {
		d.adoptNeed()
		d.s.Reason = msg + "; another fault: " + d.faultText()
		next := d.firstAvailable(d.need.Start)
		if next == StepMaintenance {
			d.enterMaintenance(d.maintenanceReason(d.need.Start))
			return
		}
		d.setPhase(PhaseQuarantined)
		d.s.Step = next
		d.episode()
		return
	}
	d.out.Hold = HoldRelease
	d.wait(WaitNothing, time.Time{}, ReasonRecovered, "%s; hold released", msg)
}

// acceptingAfterRelease: a person released the node from maintenance; only a passing
// acceptance with no fault left returns it, anything else sends it back.
func (d *decider) acceptingAfterRelease() {
	acc, gen := d.f.Acceptance, d.s.AcceptanceGeneration
	deadline := d.s.AcceptanceRequestedAt.Add(d.p.AcceptanceTimeout)
	switch {
	case acc.Generation >= gen && acc.Passed && d.healthLagging() && d.now.Before(deadline):
		d.wait(WaitAcceptance, deadline, ReasonAccepting, "acceptance generation %d passed; waiting for the GPUs' health to show it", gen)
	case acc.Generation >= gen && acc.Passed && !d.need.Remediate:
		d.s = d.s.closeEpisode()
		d.out.Hold = HoldRelease
		d.wait(WaitNothing, time.Time{}, ReasonRecovered, "released from maintenance; acceptance generation %d passed; hold released", gen)
	case acc.Generation >= gen && acc.Passed:
		d.enterMaintenance(fmt.Sprintf("acceptance generation %d after the release passed but the fault remains (%s)", acc.Generation, d.faultNow()))
	case acc.Generation >= gen:
		d.enterMaintenance(fmt.Sprintf("acceptance generation %d after the release failed", acc.Generation))
	case !d.now.Before(deadline):
		d.enterMaintenance(fmt.Sprintf("acceptance generation %d after the release did not answer within %s", gen, d.p.AcceptanceTimeout))
	default:
		d.redeliverAcceptance()
		d.wait(WaitAcceptance, deadline, ReasonAccepting, "released from maintenance; waiting for acceptance generation %d", gen)
	}
}

// redeliverAcceptance asks again for an acceptance the facts do not show requested (the
// controller died between persisting the request and raising spec.acceptanceGeneration).
// Raising the generation to the same number twice is harmless.
func (d *decider) redeliverAcceptance() {
	if d.f.Acceptance.Requested < d.s.AcceptanceGeneration {
		d.act(Action{Kind: ActionRequestAcceptance, GPUs: d.scopeGPUs(d.s.Step), ID: d.s.AcceptanceGeneration})
	}
}

func (d *decider) notCleared(a *Attempt, detail string) {
	if a != nil {
		a.Result, a.Detail = AttemptNotCleared, detail
	}
	d.escalate(fmt.Sprintf("%s did not clear the fault: %s", d.s.Step, detail))
}
