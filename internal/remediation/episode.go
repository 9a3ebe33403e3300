package remediation

import (
	"fmt"
	"slices"
	"time"
)

// maxDepth bounds the episodes one decision enters: the first, one per escalation (each
// climbs the ladder of five steps), and one follow-up episode after a recovery; with room.
const maxDepth = 2 * (1 + 5 + 1)

// episode: remediation's hold is (or is to be) on the node and a step is chosen.
func (d *decider) episode() {
	d.depth++
	if d.depth > maxDepth { // unreachable while every transition climbs the ladder
		d.wait(WaitNothing, d.now.Add(time.Second), ReasonWaitingForOutcome, "decision chain cut at %d transitions", maxDepth)
		return
	}
	if !d.ensureHold() {
		return
	}
	switch d.s.Phase {
	case PhaseQuarantined:
		d.prepare()
	case PhaseRecovering:
		d.recovering()
	case PhaseAccepting:
		d.accepting()
	}
}

// prepare: the step is chosen and not started. Evidence, then the breaker, the backoff and
// the drain come before it starts.
func (d *decider) prepare() {
	step := d.s.Step
	switch {
	case d.need.Remediate:
		d.mergeNeed()
		if d.need.Start.Rank() > step.Rank() {
			d.escalateTo(d.need.Start, fmt.Sprintf("the fault needs %s (%s)", d.need.Start, d.faultText()))
			return
		}
	case d.s.EpisodeSteps == 0:
		// The health engine cleared the fault on evidence (a passing check) before any step.
		d.out.Hold = HoldRelease
		d.s = d.s.closeEpisode()
		d.wait(WaitNothing, time.Time{}, ReasonClearedWithoutStep, "the fault cleared before any step started; hold released")
		return
	}
	if step.Destructive() && !d.evidenceFor(step) {
		return
	}
	if reason, why := d.paused(); reason != "" {
		d.wait(WaitPaused, time.Time{}, reason, "%s not started: %s", step, why)
		return
	}
	if until := d.backoffUntil(step); d.now.Before(until) {
		d.wait(WaitBackoff, until, ReasonBackingOff, "%s backs off until %s after its last attempt", step, until.UTC().Format(time.RFC3339))
		return
	}
	gpus := d.scopeGPUs(step)
	if step == StepRestartApp { // the step is the eviction itself
		d.startStep(step, gpus)
		return
	}
	if busy := d.busy(step, gpus); len(busy) > 0 {
		if d.s.DrainStarted.IsZero() {
			d.s.DrainStarted = d.now
		}
		deadline := d.s.DrainStarted.Add(d.p.DrainTimeout)
		switch {
		case d.now.Before(deadline):
			d.act(Action{Kind: ActionEvictPods, GPUs: gpus})
			d.wait(WaitDrain, deadline, ReasonDraining, "evicting the pods on %s before %s (busy: %s)", gpuText(gpus), step, gpuText(busy))
			return
		case step == StepResetGPU || step == StepReloadDriver:
			// The driver refuses to reset or unload a GPU a process holds.
			d.failUnstarted(step, gpus, fmt.Sprintf("%s still busy after the %s drain timeout", gpuText(busy), d.p.DrainTimeout))
			return
		}
		// A reboot or a power cycle ends every process: the drain was a courtesy.
	}
	d.startStep(step, gpus)
}

// mergeNeed widens the episode to every GPU (or the node) that faults now.
func (d *decider) mergeNeed() {
	for _, g := range d.need.GPUs {
		if !slices.Contains(d.s.GPUs, g) {
			d.s.GPUs = append(d.s.GPUs, g)
		}
	}
	slices.Sort(d.s.GPUs)
	d.s.NodeWide = d.s.NodeWide || d.need.NodeWide
	d.s.Causes = slices.Clone(d.need.Causes)
}

// evidenceFor requests the bundle for step and reports whether it is recorded. A bundle
// that never comes sends the node to maintenance: nothing destroys evidence unrecorded.
func (d *decider) evidenceFor(step Step) bool {
	if d.s.Evidence.ID == 0 || d.s.Evidence.Step != step {
		d.s.Evidence = EvidenceState{ID: d.nextID(), Step: step, RequestedAt: d.now}
		d.act(Action{Kind: ActionCaptureEvidence, GPUs: d.scopeGPUs(step), ID: d.s.Evidence.ID})
		d.wait(WaitEvidence, d.now.Add(d.p.EvidenceTimeout), ReasonCapturingEvidence, "capturing evidence (request %d) before %s", d.s.Evidence.ID, step)
		return false
	}
	if d.recordEvidence() {
		return true
	}
	if o := d.f.Outcome; o != nil && o.ID == d.s.Evidence.ID && o.Result != OutcomeSucceeded {
		d.enterMaintenance(fmt.Sprintf("evidence request %d for %s answered %s (%s); nothing destructive runs without it", o.ID, step, o.Result, o.Detail))
		return false
	}
	deadline := d.s.Evidence.RequestedAt.Add(d.p.EvidenceTimeout)
	if !d.now.Before(deadline) {
		d.enterMaintenance(fmt.Sprintf("evidence request %d for %s not recorded within %s; nothing destructive runs without it", d.s.Evidence.ID, step, d.p.EvidenceTimeout))
		return false
	}
	d.wait(WaitEvidence, deadline, ReasonCapturingEvidence, "waiting for evidence request %d before %s", d.s.Evidence.ID, step)
	return false
}

// backoffUntil is when step may start again on the episode's scope: its last start there in
// the window plus the backoff, doubled for each further attempt there in the window.
func (d *decider) backoffUntil(step Step) time.Time {
	sp := d.p.Step(step)
	n, last := d.s.attemptsSince(step, d.now.Add(-sp.Window), d.scopeGPUs(step))
	if n == 0 {
		return time.Time{}
	}
	return last.Add(sp.Backoff << min(n-1, 16))
}

// busy lists the GPUs of scope (all when empty) that step must wait for: pods for every
// step, and processes too for a reset or a driver reload.
func (d *decider) busy(step Step, scope []int) []int {
	var out []int
	for _, g := range d.f.GPUs {
		if len(scope) > 0 && !slices.Contains(scope, g.Index) {
			continue
		}
		if g.Pods > 0 || ((step == StepResetGPU || step == StepReloadDriver) && g.Processes > 0) {
			out = append(out, g.Index)
		}
	}
	return out
}

// firstAvailable is the first enabled step from from on with attempts left in its window on
// the episode's scope (a per-GPU step counts the attempts on the episode's GPUs).
func (d *decider) firstAvailable(from Step) Step {
	r := from.Rank()
	if r < 0 || r >= len(Ladder) {
		return StepMaintenance
	}
	for _, s := range Ladder[r:] {
		sp := d.p.Step(s)
		if sp.Disabled {
			continue
		}
		if n, _ := d.s.attemptsSince(s, d.now.Add(-sp.Window), d.scopeGPUs(s)); n < sp.MaxAttempts {
			return s
		}
	}
	return StepMaintenance
}

var stepActions = map[Step]ActionKind{
	StepRestartApp: ActionEvictPods, StepResetGPU: ActionResetGPU, StepReloadDriver: ActionReloadDriver,
	StepRebootNode: ActionRebootNode, StepPowerCycle: ActionPowerCycle,
}

// startStep records the step as started, under a new request ID, and asks for it. The
// State that records it is persisted before the action runs: it is never asked again.
func (d *decider) startStep(step Step, gpus []int) {
	id := d.nextID()
	d.s.RequestID, d.s.StepStarted = id, d.now
	d.s.EpisodeSteps++
	d.s.Attempts = append(d.s.Attempts, Attempt{Step: step, ID: id, GPUs: slices.Clone(gpus), Started: d.now, Result: AttemptPending})
	d.setPhase(PhaseRecovering)
	d.act(Action{Kind: stepActions[step], GPUs: gpus, ID: id})
	deadline := d.now.Add(d.p.Step(step).Timeout)
	d.wait(WaitOutcome, deadline, ReasonStepStarted, "%s started on %s (request %d); timeout %s", step, gpuText(gpus), id, d.p.Step(step).Timeout)
}

// failUnstarted records a step that could not start as a failed attempt and escalates.
func (d *decider) failUnstarted(step Step, gpus []int, detail string) {
	d.s.EpisodeSteps++
	d.s.Attempts = append(d.s.Attempts, Attempt{Step: step, ID: d.nextID(), GPUs: slices.Clone(gpus), Started: d.now, Ended: d.now, Result: AttemptFailed, Detail: detail})
	d.escalate(fmt.Sprintf("%s failed: %s", step, detail))
}

// recovering: the step was started; wait for its outcome or its timeout, never restart it.
func (d *decider) recovering() {
	step, a := d.s.Step, d.s.current()
	timeout := d.p.Step(step).Timeout
	deadline := d.s.StepStarted.Add(timeout)
	if step == StepRestartApp {
		gpus := d.scopeGPUs(step)
		switch {
		case len(d.busy(step, gpus)) == 0:
			d.stepSucceeded(a, "no pod left on "+gpuText(gpus))
		case !d.now.Before(deadline):
			d.stepFailed(a, AttemptTimedOut, fmt.Sprintf("pods still on %s after %s", gpuText(gpus), timeout))
		default:
			d.act(Action{Kind: ActionEvictPods, GPUs: gpus, ID: d.s.RequestID})
			d.wait(WaitDrain, deadline, ReasonDraining, "restart-app: evicting the pods on %s (request %d)", gpuText(gpus), d.s.RequestID)
		}
		return
	}
	if o := d.f.Outcome; o != nil && o.ID == d.s.RequestID {
		if o.Result == OutcomeSucceeded {
			d.stepSucceeded(a, o.Detail)
		} else {
			d.stepFailed(a, AttemptFailed, o.Detail)
		}
		return
	}
	if !d.now.Before(deadline) {
		d.stepFailed(a, AttemptTimedOut, fmt.Sprintf("request %d did not report within %s", d.s.RequestID, timeout))
		return
	}
	d.wait(WaitOutcome, deadline, ReasonWaitingForOutcome, "waiting for the outcome of %s (request %d), started %s", step, d.s.RequestID, d.s.StepStarted.UTC().Format(time.RFC3339))
}

func (d *decider) stepSucceeded(a *Attempt, detail string) {
	if a != nil {
		a.Result, a.Ended, a.Detail = AttemptSucceeded, d.now, detail
	}
	gpus := d.scopeGPUs(d.s.Step)
	d.requestAcceptance(gpus)
}

func (d *decider) stepFailed(a *Attempt, r AttemptResult, detail string) {
	if a != nil {
		a.Result, a.Ended, a.Detail = r, d.now, detail
	}
	d.escalate(fmt.Sprintf("%s %s: %s", d.s.Step, r, detail))
}

// escalate moves to the step after the current one (or the one the fault needs, if
// higher): a step is never repeated within an episode.
func (d *decider) escalate(detail string) {
	from := StepMaintenance
	if r := d.s.Step.Rank() + 1; r < len(Ladder) {
		from = Ladder[r]
	}
	if d.need.Remediate && d.need.Start.Rank() > from.Rank() {
		from = d.need.Start
	}
	d.escalateTo(from, detail)
}

func (d *decider) escalateTo(from Step, detail string) {
	d.s.clearStep()
	d.s.Reason = detail
	next := d.firstAvailable(from)
	if next == StepMaintenance {
		d.enterMaintenance(detail + "; " + d.maintenanceReason(from))
		return
	}
	d.s.Step = next
	d.s.Phase, d.s.PhaseSince = PhaseQuarantined, d.now
	d.episode()
}
