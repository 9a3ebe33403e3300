package remediation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// walk is one node driven by random facts: the real health engine (health.Next) for its
// GPUs, an agent that answers some requests late or never, an acceptance that passes or
// fails, a person who sometimes releases it, a fleet that admits it or not and a breaker
// that trips, and a controller that sometimes dies between persisting a decision and
// carrying it out.
type walk struct {
	t      *testing.T
	r      *rand.Rand
	p      Policy
	now    time.Time
	gpus   []health.State
	pods   []int
	facts  Facts
	step   *Action // the step request the agent has not answered
	evid   int64   // the evidence request the agent has not answered
	issued map[int64]bool
	starts map[Step][]time.Time
	n      int
}

func newWalk(t *testing.T, r *rand.Rand, p Policy) *walk {
	w := &walk{t: t, r: r, p: p, now: t0, issued: map[int64]bool{}, starts: map[Step][]time.Time{}}
	w.facts = Facts{Node: "gpu-1", Pool: "h100"}
	for range 8 {
		w.gpus = append(w.gpus, health.NewState(t0))
		w.pods = append(w.pods, 0)
	}
	return w
}

var walkFaults = []health.Finding{
	{Cause: "xid-95", Component: fault.ComponentMemory, Severity: fault.SeverityCritical, Action: fault.ActionResetGPU},
	{Cause: "xid-79", Component: fault.ComponentGPU, Severity: fault.SeverityFatal, Action: fault.ActionRebootNode},
	{Cause: health.CauseGPULost, Component: fault.ComponentGPU, Severity: fault.SeverityFatal, Action: fault.ActionRebootNode},
	{Cause: "nvlink-down-2", Component: fault.ComponentInterconnect, Severity: fault.SeverityCritical, Action: fault.ActionDrainP2P},
	{Cause: "xid-119", Component: fault.ComponentDriver, Severity: fault.SeverityCritical, Action: fault.ActionReloadDriver},
	{Cause: "xid-13", Component: fault.ComponentApplication, Severity: fault.SeverityWarning, Action: fault.ActionRestartApp},
	{Cause: "row-remap-failure", Component: fault.ComponentMemory, Severity: fault.SeverityFatal, Action: fault.ActionService},
}

var walkTicks = []time.Duration{0, time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}

// environment moves the world on: the clock, new faults, pods, the agent, acceptance.
func (w *walk) environment() {
	r := w.r
	w.now = w.now.Add(walkTicks[r.IntN(len(walkTicks))])
	if r.IntN(8) == 0 {
		f := walkFaults[r.IntN(len(walkFaults))]
		if f.Action == fault.ActionService && r.IntN(4) != 0 {
			f = walkFaults[0]
		}
		f.FirstSeen, f.LastSeen = w.now, w.now
		i := r.IntN(len(w.gpus))
		w.gpus[i] = health.Next(w.gpus[i], f, w.now)
	}
	if r.IntN(40) == 0 {
		w.facts.NodeFaults = []NodeFault{{Cause: CauseDriverNotLoaded, Action: fault.ActionReloadDriver, Since: w.now, Fatal: true}}
	}
	if r.IntN(6) == 0 {
		i := r.IntN(len(w.pods))
		w.pods[i]++
	}
	if w.step != nil && r.IntN(3) == 0 {
		res := OutcomeSucceeded
		if r.IntN(4) == 0 {
			res = OutcomeFailed
		} else if k := Step(w.step.Kind).Recovery(); k != "" {
			for _, i := range w.scope(w.step.GPUs) {
				w.gpus[i] = health.Next(w.gpus[i], health.Recovered{Kind: k}, w.now)
			}
			if Step(w.step.Kind).Rank() >= StepReloadDriver.Rank() {
				w.facts.NodeFaults = nil
			}
		}
		w.facts.Outcome = &Outcome{ID: w.step.ID, Result: res, At: w.now}
		w.step = nil
	}
	if w.evid != 0 && r.IntN(2) == 0 { // the agent answers evidence like any request
		if r.IntN(10) == 0 {
			w.facts.Outcome = &Outcome{ID: w.evid, Result: OutcomeRefused, At: w.now, Detail: "evidence capture is not enabled"}
		} else {
			w.facts.Outcome = &Outcome{ID: w.evid, Result: OutcomeSucceeded, At: w.now}
			w.facts.Evidence = &Evidence{ID: w.evid, SHA256: fmt.Sprintf("%064d", w.evid), At: w.now}
		}
		w.evid = 0
	}
	if a := &w.facts.Acceptance; a.Requested > a.Generation && r.IntN(2) == 0 {
		a.Generation, a.Passed, a.At = a.Requested, r.IntN(3) != 0, w.now
		for i := range w.gpus {
			if a.Passed {
				w.gpus[i] = health.Next(w.gpus[i], health.CheckPassed{}, w.now)
			} else if r.IntN(3) == 0 {
				w.gpus[i] = health.Next(w.gpus[i], health.CheckFailed{Check: "walk"}, w.now)
			}
		}
	}
	if r.IntN(30) == 0 {
		w.facts.ReleaseRequested = w.now
	}
	w.facts.GPUs = w.facts.GPUs[:0]
	for i, s := range w.gpus {
		w.facts.GPUs = append(w.facts.GPUs, GPU{Index: i, Health: s.Health, Action: s.Action, Causes: s.Causes, Since: s.Since, AwaitingCheck: s.AwaitingCheck, Pods: w.pods[i], Processes: w.pods[i]})
	}
}

func (w *walk) scope(gpus []int) []int {
	if len(gpus) > 0 {
		return gpus
	}
	all := make([]int, len(w.gpus))
	for i := range all {
		all[i] = i
	}
	return all
}

func (w *walk) admission() Admission {
	a := Admission{Admitted: w.r.IntN(3) != 0, Reason: AdmissionWithin, DomainLimit: -1}
	if w.r.IntN(6) == 0 {
		a.Admitted, a.Paused, a.PauseReason, a.Reason = false, true, "storm", AdmissionPaused
	}
	if !a.Admitted && !a.Paused {
		a.Reason = AdmissionOverBudget
	}
	return a
}

func (w *walk) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("step %d at %s: %s\nfacts: %+v", w.n, w.now.Sub(t0), fmt.Sprintf(format, args...), w.facts)
}

// decide makes one decision, checks every invariant, and carries it out unless the
// controller "dies" after persisting the state.
func (w *walk) decide() Decision {
	adm := w.admission()
	f := w.facts
	prev := f.State
	need := Assess(f, w.p.WithDefaults())
	d := Decide(f, w.p, adm, w.now)
	held := f.held(OwnerRemediation)

	// No action without remediation's hold.
	if len(d.Actions) > 0 && !held {
		w.fail("actions %v without remediation's hold", kinds(d.Actions))
	}
	// A started step is never issued again, not even after a crash.
	for _, a := range d.Actions {
		switch a.Kind {
		case ActionResetGPU, ActionReloadDriver, ActionRebootNode, ActionPowerCycle:
			if w.issued[a.ID] {
				w.fail("%s request %d issued twice", a.Kind, a.ID)
			}
			w.issued[a.ID] = true
			if e := d.State.Evidence; e.Step != Step(a.Kind) || !e.Recorded() {
				w.fail("%s request %d without recorded evidence for it (%+v)", a.Kind, a.ID, e)
			}
			if adm.Paused || w.p.Disabled {
				w.fail("%s started while the breaker is tripped or remediation disabled", a.Kind)
			}
		case ActionEvictPods:
			continuing := prev.Phase == PhaseRecovering && prev.Step == StepRestartApp && a.ID == prev.RequestID
			if (adm.Paused || w.p.Disabled) && !continuing {
				w.fail("eviction started while the breaker is tripped")
			}
		}
	}
	// No step past its limit within its window; no new step while the breaker is tripped.
	if d.Reason == ReasonReleased {
		w.starts = map[Step][]time.Time{}
	}
	for _, a := range d.State.Attempts {
		if slices.ContainsFunc(prev.Attempts, func(b Attempt) bool { return b.ID == a.ID }) {
			continue
		}
		if adm.Paused || w.p.Disabled {
			w.fail("%s attempt started while the breaker is tripped or remediation disabled", a.Step)
		}
		w.starts[a.Step] = append(w.starts[a.Step], a.Started)
		sp := w.p.WithDefaults().Step(a.Step)
		n := 0
		for _, s := range w.starts[a.Step] {
			if s.After(a.Started.Add(-sp.Window)) {
				n++
			}
		}
		if n > sp.MaxAttempts {
			w.fail("%s started %d times within %s, limit %d", a.Step, n, sp.Window, sp.MaxAttempts)
		}
	}
	// The breaker and the budget gate new holds, except for an unusable node.
	if d.Hold == HoldPlace && (prev.Phase == PhaseNone || prev.Phase == PhaseSuspect) && (!adm.Admitted || adm.Paused || w.p.Disabled) && !need.Unusable {
		w.fail("hold placed on a usable node without admission (%+v)", adm)
	}
	// Time never clears a fault: the hold is released only on a passing acceptance of the
	// episode's request, or when the facts show no fault before any step ran.
	if d.Hold == HoldRelease && held {
		answered := f.Acceptance.Generation >= prev.AcceptanceGeneration && prev.AcceptanceGeneration > 0 && f.Acceptance.Passed
		clearedBeforeStep := !need.Remediate && prev.EpisodeSteps == 0 && prev.Phase != PhaseMaintenance
		if (prev.Phase != PhaseAccepting || !answered) && !clearedBeforeStep {
			w.fail("hold released from %s without a passing acceptance (need %+v)", prev.Phase, need)
		}
	}
	// Maintenance ends only by a person's release.
	if prev.Phase == PhaseMaintenance && d.Phase != PhaseMaintenance && !f.ReleaseRequested.After(prev.PhaseSince) {
		w.fail("left maintenance for %q without a release", d.Phase)
	}

	w.facts.State = d.State // persisted before anything is carried out
	if w.r.IntN(10) == 0 {
		return d // the controller died: neither the hold nor the actions happened
	}
	switch d.Hold {
	case HoldPlace:
		w.facts.Holds = append(w.facts.Holds, Hold{Owner: OwnerRemediation, Since: w.now})
	case HoldRelease:
		w.facts.Holds = slices.DeleteFunc(w.facts.Holds, func(h Hold) bool { return h.Owner == OwnerRemediation })
	}
	for _, a := range d.Actions {
		switch a.Kind {
		case ActionCaptureEvidence:
			w.evid = a.ID
		case ActionEvictPods:
			if w.r.IntN(3) != 0 {
				for _, i := range w.scope(a.GPUs) {
					w.pods[i] = 0
				}
			}
		case ActionRequestAcceptance:
			w.facts.Acceptance.Requested = a.ID
		default:
			a := a
			w.step = &a
		}
	}
	return d
}

func TestPropertyRandomWalkKeepsEveryInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	phases := map[Phase]int{}
	policies := []Policy{DefaultPolicy(), {PowerCycleConfigured: true, RemediateDegraded: true}, {ResetGPU: StepPolicy{MaxAttempts: 5, Backoff: time.Minute}}, {Disabled: true}}
	for n := range 300 {
		w := newWalk(t, r, policies[n%len(policies)])
		for w.n = range 400 {
			w.environment()
			d := w.decide()
			phases[d.Phase]++
		}
	}
	for _, p := range []Phase{PhaseNone, PhaseSuspect, PhaseQuarantined, PhaseRecovering, PhaseAccepting, PhaseMaintenance} {
		if phases[p] == 0 {
			t.Errorf("the walk never reached phase %q: it tests too little (%v)", p, phases)
		}
	}
}

// A fault that stays, with nobody answering anything, is never released by time alone:
// every timeout escalates, and the node ends in maintenance.
func TestPropertyTimeNeverClearsAFault(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := range 200 {
		f := node(unhealthy(r.IntN(8), walkFaults[r.IntN(4)].Action, "xid-95"), heldBy(OwnerRemediation))
		now := t0
		for i := range 300 {
			now = now.Add(time.Duration(r.IntN(7200)) * time.Second)
			d := Decide(f, DefaultPolicy(), admitted, now)
			if d.Hold == HoldRelease {
				t.Fatalf("walk %d step %d: time alone released the node from %s", n, i, f.State.Phase)
			}
			f.State = d.State
		}
		if f.State.Phase != PhaseMaintenance {
			t.Fatalf("walk %d: after 300 unanswered decisions the node is %s, want Maintenance", n, f.State.Phase)
		}
	}
}

// A fault that returns after every step climbs the ladder once and ends in maintenance:
// the agent reports every step done and every acceptance passes, yet the GPU stays
// unhealthy.
func TestAFaultThatReturnsAfterEveryStepEndsInMaintenance(t *testing.T) {
	f := node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation))
	now := t0
	var steps []Step
	for range 100 {
		now = now.Add(time.Minute)
		d := Decide(f, DefaultPolicy(), admitted, now)
		f.State = d.State
		for _, a := range d.Actions {
			switch a.Kind {
			case ActionCaptureEvidence:
				f.Evidence = &Evidence{ID: a.ID, SHA256: "x", At: now}
			case ActionRequestAcceptance:
				f.Acceptance = Acceptance{Requested: a.ID, Generation: a.ID, Passed: true, At: now}
			case ActionResetGPU, ActionReloadDriver, ActionRebootNode, ActionPowerCycle:
				steps = append(steps, Step(a.Kind))
				f.Outcome = &Outcome{ID: a.ID, Result: OutcomeSucceeded, At: now}
			}
		}
		if d.Phase == PhaseMaintenance {
			break
		}
	}
	if f.State.Phase != PhaseMaintenance {
		t.Fatalf("phase %s after 100 decisions, want Maintenance", f.State.Phase)
	}
	if want := []Step{StepResetGPU, StepReloadDriver, StepRebootNode}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want each once: %v", steps, want)
	}
}
