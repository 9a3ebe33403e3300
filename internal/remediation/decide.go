package remediation

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// decide is the next move for one node, from its facts, its pool's policy (defaults
// applied), its assessed need, the fleet's admission of it (PlanFleet) and the time. It is
// pure; DecideFleet calls it for every node.
func decide(f Facts, p Policy, need Need, adm Admission, now time.Time) Decision {
	d := &decider{f: f, p: p, adm: adm, now: now, need: need, s: f.State.clone()}
	d.s.prune(now, p.longestWindow())
	d.held = f.held(OwnerRemediation)
	switch d.s.Phase {
	case PhaseMaintenance:
		d.maintenance()
	case PhaseQuarantined, PhaseRecovering, PhaseAccepting:
		d.episode()
	default:
		d.idle()
	}
	d.out.State = d.s
	d.out.Phase = d.s.Phase
	return d.out
}

func (f Facts) held(owner string) bool {
	return slices.ContainsFunc(f.Holds, func(h Hold) bool { return h.Owner == owner })
}

// decider carries one decision's inputs and what it has decided so far.
type decider struct {
	f    Facts
	p    Policy
	adm  Admission
	now  time.Time
	need Need
	held bool
	s    State
	out  Decision
	// depth bounds the chain of transitions one decision makes.
	depth int
}

func (d *decider) wait(w Wait, until time.Time, reason, format string, args ...any) {
	d.out.Wait, d.out.WaitUntil, d.out.Reason = w, until, reason
	d.out.Message = fmt.Sprintf(format, args...)
}

func (d *decider) act(a Action) { d.out.Actions = append(d.out.Actions, a) }

// nextID is a new request ID: above every ID issued before, and at least the time in Unix
// milliseconds, so that a node whose persisted state was lost (its GPUNode recreated) never
// reuses an ID its agent already answered.
func (d *decider) nextID() int64 {
	d.s.LastID = max(d.s.LastID+1, d.now.UnixMilli())
	return d.s.LastID
}

func (d *decider) setPhase(p Phase) {
	if d.s.Phase != p {
		d.s.Phase, d.s.PhaseSince = p, d.now
	}
}

// idle: no episode (or a Suspect node waiting for admission).
func (d *decider) idle() {
	if !d.need.Remediate {
		if d.held {
			d.out.Hold = HoldRelease
		}
		d.s = d.s.closeEpisode()
		d.wait(WaitNothing, time.Time{}, ReasonNoFault, "no fault calls for remediation")
		return
	}
	d.adoptNeed()
	// A node remediation already holds (a hold left from before) needs no admission.
	if reason, why := d.paused(); reason != "" && !d.need.Unusable && !d.held {
		d.setPhase(PhaseSuspect)
		d.wait(WaitPaused, time.Time{}, reason, "fault recorded (%s); %s", d.faultText(), why)
		return
	}
	if !d.adm.Admitted && !d.need.Unusable && !d.held {
		d.setPhase(PhaseSuspect)
		d.wait(WaitBudget, time.Time{}, ReasonWaitingForBudget, "fault recorded (%s); waiting for budget: %s", d.faultText(), d.adm.Message())
		return
	}
	d.s.Reason = "fault: " + d.faultText()
	next := d.firstAvailable(d.need.Start)
	if next == StepMaintenance {
		d.enterMaintenance(d.maintenanceReason(d.need.Start))
		return
	}
	d.setPhase(PhaseQuarantined)
	d.s.Step = next
	d.episode()
}

// paused says whether no step may start: the pool's breaker tripped, or the pool's policy
// turned remediation off.
func (d *decider) paused() (reason, msg string) {
	switch {
	case d.adm.Paused:
		return ReasonAutomationPaused, "automation paused: " + d.adm.PauseReason
	case d.p.Disabled:
		return ReasonRemediationDisabled, "remediation is disabled for the pool"
	}
	return "", ""
}

// adoptNeed records the fault the episode is about (keeping the earliest start).
func (d *decider) adoptNeed() {
	if d.s.FaultSince.IsZero() || d.need.Since.Before(d.s.FaultSince) {
		d.s.FaultSince = d.need.Since
	}
	d.s.GPUs = slices.Clone(d.need.GPUs)
	d.s.NodeWide = d.need.NodeWide
	d.s.Causes = slices.Clone(d.need.Causes)
}

func (d *decider) faultText() string {
	if len(d.s.Causes) == 0 {
		return "no cause recorded"
	}
	return strings.Join(d.s.Causes, "; ")
}

func (d *decider) maintenanceReason(from Step) string {
	if from == StepMaintenance {
		return "the fault needs service by a person (" + d.faultText() + ")"
	}
	return fmt.Sprintf("no step from %s on has attempts left (%s)", from, d.faultText())
}

// holdReason is the reason of remediation's hold for the current phase.
func (d *decider) holdReason() string {
	if d.s.Phase == PhaseMaintenance {
		return "maintenance: " + d.s.Reason
	}
	return "remediation: " + d.faultText()
}

// ensureHold asks for remediation's hold when the facts do not show it yet; no action is
// given until they do.
func (d *decider) ensureHold() bool {
	d.out.HoldReason = d.holdReason()
	if d.held {
		return true
	}
	d.out.Hold = HoldPlace
	d.wait(WaitHold, time.Time{}, ReasonPlacingHold, "placing remediation's hold before any action (%s)", d.faultText())
	return false
}

// enterMaintenance ends the ladder: the node stays held until a person releases it.
func (d *decider) enterMaintenance(reason string) {
	d.s.clearStep()
	d.s.Step, d.s.AfterRelease, d.s.Reason = "", false, reason
	d.setPhase(PhaseMaintenance)
	d.maintenance()
}

// maintenance: terminal until a release request newer than the maintenance.
func (d *decider) maintenance() {
	if !d.ensureHold() {
		return
	}
	r, handled := d.f.ReleaseRequested, d.s.ReleaseHandled
	if inFuture(r, d.now) {
		r = time.Time{} // refused (ParseStamp): it would outlast every later release
	}
	if inFuture(handled, d.now) {
		handled = time.Time{} // recorded before future stamps were refused: no release is newer
	}
	if !r.IsZero() && r.After(d.s.PhaseSince) && r.After(handled) {
		// A person serviced the node: the old attempts say nothing about the new state.
		d.s.ReleaseHandled, d.s.Attempts, d.s.AfterRelease = r, nil, true
		d.s.Reason = "released from maintenance at " + r.UTC().Format(time.RFC3339)
		d.requestAcceptance(nil)
		d.out.Reason = ReasonReleased
		return
	}
	if d.s.Evidence.ID == 0 {
		d.s.Evidence = EvidenceState{ID: d.nextID(), Step: StepMaintenance, RequestedAt: d.now}
		d.act(Action{Kind: ActionCaptureEvidence, GPUs: d.scopeGPUs(StepMaintenance), ID: d.s.Evidence.ID})
	}
	d.recordEvidence()
	d.wait(WaitRelease, time.Time{}, ReasonInMaintenance, "in maintenance since %s: %s; release with `gpunode release %s` or the %s annotation",
		d.s.PhaseSince.UTC().Format(time.RFC3339), d.s.Reason, d.f.Node, "gpunode.dev/release")
}

// recordEvidence notes the agent's bundle when it answers the current capture request.
func (d *decider) recordEvidence() bool {
	e := d.f.Evidence
	if d.s.Evidence.Recorded() {
		return true
	}
	if e != nil && d.s.Evidence.ID != 0 && e.ID == d.s.Evidence.ID {
		d.s.Evidence.SHA256, d.s.Evidence.RecordedAt = e.SHA256, e.At
		return true
	}
	return false
}

// requestAcceptance asks for acceptance of gpus (the whole node when empty).
func (d *decider) requestAcceptance(gpus []int) {
	gen := max(d.f.Acceptance.Requested, d.f.Acceptance.Generation, d.s.AcceptanceGeneration) + 1
	d.s.AcceptanceGeneration, d.s.AcceptanceRequestedAt = gen, d.now
	d.setPhase(PhaseAccepting)
	d.act(Action{Kind: ActionRequestAcceptance, GPUs: gpus, ID: gen})
	d.wait(WaitAcceptance, d.now.Add(d.p.AcceptanceTimeout), ReasonAccepting, "acceptance generation %d requested for %s", gen, gpuText(gpus))
}

// scopeGPUs is what step acts on: the episode's GPUs for a per-GPU step of a GPU-only
// episode, otherwise the whole node (nil).
func (d *decider) scopeGPUs(step Step) []int {
	if step.PerGPU() && !d.s.NodeWide && len(d.s.GPUs) > 0 {
		return slices.Clone(d.s.GPUs)
	}
	return nil
}

func gpuText(gpus []int) string {
	if len(gpus) == 0 {
		return "the whole node"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprint(g)
	}
	return "GPU " + strings.Join(parts, ",")
}
