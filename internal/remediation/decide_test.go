package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

// Episode states the table starts from: GPU 3 reported XID 95 (reset-gpu) at t0.
var (
	resetChosen = State{Phase: PhaseQuarantined, PhaseSince: t0, FaultSince: t0, GPUs: []int{3},
		Causes: []string{"GPU 3: xid-95"}, Step: StepResetGPU}
	resetEvidenceAsked = func() State {
		s := resetChosen.clone()
		s.LastID, s.Evidence = 1, EvidenceState{ID: 1, Step: StepResetGPU, RequestedAt: t0}
		return s
	}()
	resetEvidenceRecorded = func() State {
		s := resetEvidenceAsked.clone()
		s.Evidence.SHA256, s.Evidence.RecordedAt = "abc123", t0
		return s
	}()
	resetStarted = func() State {
		s := resetEvidenceRecorded.clone()
		s.Phase, s.StepStarted, s.RequestID, s.LastID, s.EpisodeSteps = PhaseRecovering, t0, 2, 2, 1
		s.Attempts = []Attempt{{Step: StepResetGPU, ID: 2, GPUs: []int{3}, Started: t0, Result: AttemptPending}}
		return s
	}()
	resetAccepting = func() State {
		s := resetStarted.clone()
		s.Phase, s.AcceptanceGeneration, s.AcceptanceRequestedAt = PhaseAccepting, 5, t0
		s.Attempts[0].Result, s.Attempts[0].Ended = AttemptSucceeded, t0
		return s
	}()
	restartAppStarted = State{Phase: PhaseRecovering, PhaseSince: t0, FaultSince: t0, GPUs: []int{2}, Causes: []string{"GPU 2: xid-13"},
		Step: StepRestartApp, StepStarted: t0, RequestID: 1, LastID: 1, EpisodeSteps: 1,
		Attempts: []Attempt{{Step: StepRestartApp, ID: 1, GPUs: []int{2}, Started: t0, Result: AttemptPending}}}
	maintenance = State{Phase: PhaseMaintenance, PhaseSince: t0, FaultSince: t0.Add(-time.Hour), GPUs: []int{3}, Reason: "row-remap-failure",
		LastID: 7, Evidence: EvidenceState{ID: 7, Step: StepMaintenance, RequestedAt: t0, SHA256: "abc", RecordedAt: t0},
		Attempts: []Attempt{{Step: StepResetGPU, ID: 3, Started: t0.Add(-time.Hour), Result: AttemptNotCleared}}}
	releasedAccepting = State{Phase: PhaseAccepting, PhaseSince: t0, FaultSince: t0.Add(-time.Hour), AfterRelease: true,
		AcceptanceGeneration: 9, AcceptanceRequestedAt: t0, ReleaseHandled: t0, LastID: 7}
)

func used(step Step, n int, ago time.Duration) State {
	var s State
	for i := range n {
		s.Attempts = append(s.Attempts, Attempt{Step: step, ID: int64(i + 1), Started: t0.Add(-ago), Ended: t0.Add(-ago), Result: AttemptCleared})
	}
	s.LastID = int64(n)
	return s
}

// usedOn is used(step, n, ago) on the given GPUs.
func usedOn(step Step, n int, ago time.Duration, gpus ...int) State {
	s := used(step, n, ago)
	for i := range s.Attempts {
		s.Attempts[i].GPUs = gpus
	}
	return s
}

type want struct {
	phase   Phase
	hold    HoldOp
	actions []ActionKind
	wait    Wait
	reason  string
	check   func(*testing.T, Decision)
}

type decideCase struct {
	name   string
	facts  Facts
	policy *Policy
	adm    Admission
	now    time.Time
	want   want
}

var remediateDegraded, withPowerCycle, disabled = func() (Policy, Policy, Policy) {
	a, b, c := DefaultPolicy(), DefaultPolicy(), DefaultPolicy()
	a.RemediateDegraded, b.PowerCycleConfigured, c.Disabled = true, true, true
	return a, b, c
}()

func TestDecideBeforeTheStepStarts(t *testing.T) {
	runDecide(t, []decideCase{
		// No episode.
		{"a node without a fault has no claim and asks for nothing",
			node(), nil, admitted, t0, want{phase: PhaseNone, wait: WaitNothing, reason: ReasonNoFault}},
		{"a stale remediation hold on a node without a fault is released",
			node(heldBy(OwnerRemediation)), nil, admitted, t0, want{phase: PhaseNone, hold: HoldRelease, reason: ReasonNoFault}},
		{"an admitted lost GPU places the hold first and asks for nothing else",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost", "xid-79")), nil, admitted, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, wait: WaitHold, reason: ReasonPlacingHold, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepRebootNode || !slices.Equal(d.State.GPUs, []int{3}) || !d.State.FaultSince.Equal(t0) {
					t.Errorf("state %+v, want step reboot-node for GPU 3 since t0", d.State)
				}
			}}},
		{"a fault waiting for budget is Suspect, places no hold and says the numbers",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95")), nil, overBudget, t0,
			want{phase: PhaseSuspect, wait: WaitBudget, reason: ReasonWaitingForBudget, check: func(t *testing.T, d Decision) {
				if !strings.Contains(d.Message, "holds 1 of 10 nodes (limit 1)") || !strings.Contains(d.Message, "position 2") {
					t.Errorf("message %q lacks the budget numbers", d.Message)
				}
			}}},
		{"a Suspect node keeps the time its fault was first seen",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), withState(State{Phase: PhaseSuspect, PhaseSince: t0.Add(-time.Hour), FaultSince: t0.Add(-time.Hour)})), nil, overBudget, t0,
			want{phase: PhaseSuspect, wait: WaitBudget, reason: ReasonWaitingForBudget, check: func(t *testing.T, d Decision) {
				if !d.State.FaultSince.Equal(t0.Add(-time.Hour)) {
					t.Errorf("fault since %s, want the earlier one", d.State.FaultSince)
				}
			}}},
		{"an unusable node is held even when the budget is full",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost")), nil, overBudget, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, wait: WaitHold, reason: ReasonPlacingHold}},
		{"a node whose driver is not loaded is unusable and held even when the budget is full",
			node(nodeFault(CauseDriverNotLoaded, fault.ActionReloadDriver, true)), nil, overBudget, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, reason: ReasonPlacingHold, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver || !d.State.NodeWide {
					t.Errorf("state %+v, want a node-wide reload-driver", d.State)
				}
			}}},
		{"a usable node's fault waits while the breaker is tripped",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95")), nil, paused, t0,
			want{phase: PhaseSuspect, wait: WaitPaused, reason: ReasonAutomationPaused}},
		{"a pool with remediation disabled records the fault and holds nothing",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95")), &disabled, admitted, t0,
			want{phase: PhaseSuspect, wait: WaitPaused, reason: ReasonRemediationDisabled}},
		{"a pool with remediation disabled still holds a node that cannot run work",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost")), &disabled, admitted, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, reason: ReasonPlacingHold}},
		{"a pool with remediation disabled starts no step on a held node",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost"), heldBy(OwnerRemediation), withState(State{Phase: PhaseQuarantined, PhaseSince: t0, FaultSince: t0,
				GPUs: []int{3}, Step: StepRebootNode, LastID: 1, Evidence: EvidenceState{ID: 1, Step: StepRebootNode, RequestedAt: t0, RecordedAt: t0}})), &disabled, admitted, t0,
			want{phase: PhaseQuarantined, wait: WaitPaused, reason: ReasonRemediationDisabled}},
		{"an unusable node is still held while the breaker is tripped",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost")), nil, paused, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, reason: ReasonPlacingHold}},
		{"a service fault goes straight to Maintenance and captures evidence once held",
			node(unhealthy(3, fault.ActionService, "row-remap-failure"), heldBy(OwnerRemediation)), nil, admitted, t0,
			want{phase: PhaseMaintenance, actions: []ActionKind{ActionCaptureEvidence}, wait: WaitRelease, reason: ReasonInMaintenance}},
		{"a reset-gpu fault starts at reset-gpu, not restart-app, with evidence first",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation)), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, wait: WaitEvidence, reason: ReasonCapturingEvidence, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepResetGPU || !slices.Equal(d.Actions[0].GPUs, []int{3}) || d.Actions[0].ID != t0.UnixMilli() {
					t.Errorf("step %s, action %+v: want evidence request %d (the time in ms) for GPU 3 before reset-gpu", d.State.Step, d.Actions[0], t0.UnixMilli())
				}
			}}},
		{"a drain-p2p fault on an unhealthy GPU drains and resets it",
			node(unhealthy(5, fault.ActionDrainP2P, "nvlink-down-2"), heldBy(OwnerRemediation)), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepResetGPU {
					t.Errorf("step %s, want reset-gpu", d.State.Step)
				}
			}}},
		{"a degraded GPU with an advisory restart-app is left alone by default",
			node(degraded(2, fault.ActionRestartApp, "xid-13")), nil, admitted, t0,
			want{phase: PhaseNone, reason: ReasonNoFault}},
		{"a degraded GPU with restart-app starts by evicting its pods when the policy remediates degraded GPUs",
			node(degraded(2, fault.ActionRestartApp, "xid-13"), busy(2, 1, 1), heldBy(OwnerRemediation)), &remediateDegraded, admitted, t0,
			want{phase: PhaseRecovering, actions: []ActionKind{ActionEvictPods}, wait: WaitOutcome, reason: ReasonStepStarted, check: func(t *testing.T, d Decision) {
				if !slices.Equal(d.Actions[0].GPUs, []int{2}) || lastAttempt(t, d.State).Step != StepRestartApp {
					t.Errorf("actions %+v attempts %+v: want restart-app evicting GPU 2 only", d.Actions, d.State.Attempts)
				}
			}}},
		{"a step with no attempts left in its window is skipped",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(used(StepResetGPU, 2, time.Hour))), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver {
					t.Errorf("step %s, want reload-driver", d.State.Step)
				}
			}}},
		{"another GPU's used-up resets do not send this GPU up the ladder",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(usedOn(StepResetGPU, 2, time.Hour, 5))), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepResetGPU {
					t.Errorf("step %s, want reset-gpu: GPU 5's resets are not GPU 3's", d.State.Step)
				}
			}}},
		{"this GPU's used-up resets send it up the ladder",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(usedOn(StepResetGPU, 2, time.Hour, 3))), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver {
					t.Errorf("step %s, want reload-driver", d.State.Step)
				}
			}}},
		{"attempts older than the window no longer count",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(used(StepResetGPU, 2, 25*time.Hour))), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepResetGPU || len(d.State.Attempts) != 0 {
					t.Errorf("step %s attempts %d, want reset-gpu with the old attempts pruned", d.State.Step, len(d.State.Attempts))
				}
			}}},
		{"a fault with every step used up in the window goes to Maintenance",
			node(unhealthy(3, fault.ActionRebootNode, "xid-79"), heldBy(OwnerRemediation), withState(used(StepRebootNode, 1, time.Hour))), nil, admitted, t0,
			want{phase: PhaseMaintenance, actions: []ActionKind{ActionCaptureEvidence}, wait: WaitRelease, reason: ReasonInMaintenance}},
		{"power-cycle follows reboot-node only when a hook is configured",
			node(unhealthy(3, fault.ActionRebootNode, "xid-79"), heldBy(OwnerRemediation), withState(used(StepRebootNode, 1, time.Hour))), &withPowerCycle, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepPowerCycle {
					t.Errorf("step %s, want power-cycle", d.State.Step)
				}
			}}},

		// Quarantined: the step is chosen, not started.
		{"an episode whose hold disappeared places it again before anything else",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), withState(resetEvidenceRecorded)), nil, overBudget, t0,
			want{phase: PhaseQuarantined, hold: HoldPlace, wait: WaitHold, reason: ReasonPlacingHold}},
		{"evidence not yet recorded keeps the reset waiting",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetEvidenceAsked)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, wait: WaitEvidence, reason: ReasonCapturingEvidence}},
		{"evidence never recorded sends the node to Maintenance, never to a reset",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetEvidenceAsked)), nil, admitted, at(5 * time.Minute),
			want{phase: PhaseMaintenance, wait: WaitRelease, reason: ReasonInMaintenance}},
		{"an evidence request the agent answered as failed sends the node to Maintenance at once",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetEvidenceAsked), outcome(1, OutcomeRefused)), nil, admitted, at(time.Minute),
			want{phase: PhaseMaintenance, wait: WaitRelease, check: func(t *testing.T, d Decision) {
				if !strings.Contains(d.State.Reason, "answered Refused") {
					t.Errorf("reason %q", d.State.Reason)
				}
			}}},
		{"recorded evidence for another request does not count",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetEvidenceAsked), evidence(99)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, wait: WaitEvidence}},
		{"with evidence recorded only the faulty GPU's pods are evicted before the reset",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), busy(3, 1, 1), busy(4, 2, 2), heldBy(OwnerRemediation), withState(resetEvidenceAsked), evidence(1)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionEvictPods}, wait: WaitDrain, reason: ReasonDraining, check: func(t *testing.T, d Decision) {
				if !slices.Equal(d.Actions[0].GPUs, []int{3}) || !d.State.Evidence.Recorded() || !d.State.DrainStarted.Equal(at(time.Minute)) {
					t.Errorf("action %+v state %+v: want eviction on GPU 3 only, evidence recorded, drain started", d.Actions[0], d.State)
				}
			}}},
		{"a process outside Kubernetes on the GPU also holds the reset back",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), busy(3, 0, 1), heldBy(OwnerRemediation), withState(resetEvidenceRecorded)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionEvictPods}, wait: WaitDrain}},
		{"with evidence recorded and the GPU idle the reset starts under a new request ID",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), busy(4, 2, 2), heldBy(OwnerRemediation), withState(resetEvidenceRecorded)), nil, admitted, at(time.Minute),
			want{phase: PhaseRecovering, actions: []ActionKind{ActionResetGPU}, wait: WaitOutcome, reason: ReasonStepStarted, check: func(t *testing.T, d Decision) {
				a := lastAttempt(t, d.State)
				id := at(time.Minute).UnixMilli()
				if d.Actions[0].ID != id || !slices.Equal(d.Actions[0].GPUs, []int{3}) || a.ID != id || a.Result != AttemptPending || d.State.RequestID != id {
					t.Errorf("action %+v attempt %+v: want reset of GPU 3 as request %d, recorded pending", d.Actions[0], a, id)
				}
				if !d.WaitUntil.Equal(at(6 * time.Minute)) {
					t.Errorf("wait until %s, want the 5m step timeout", d.WaitUntil)
				}
			}}},
		{"a GPU still busy after the drain timeout escalates the reset to a driver reload",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), busy(3, 1, 1), heldBy(OwnerRemediation), withState(func() State {
				s := resetEvidenceRecorded.clone()
				s.DrainStarted = t0
				return s
			}())), nil, admitted, at(10 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, wait: WaitEvidence, check: func(t *testing.T, d Decision) {
				a := lastAttempt(t, d.State)
				if d.State.Step != StepReloadDriver || a.Step != StepResetGPU || a.Result != AttemptFailed {
					t.Errorf("step %s attempt %+v: want reload-driver after a failed reset", d.State.Step, a)
				}
			}}},
		{"a reboot proceeds after the drain timeout",
			node(unhealthy(3, fault.ActionRebootNode, "xid-79"), busy(1, 1, 1), heldBy(OwnerRemediation), withState(State{Phase: PhaseQuarantined, PhaseSince: t0, FaultSince: t0,
				GPUs: []int{3}, Step: StepRebootNode, DrainStarted: t0, LastID: 1, Evidence: EvidenceState{ID: 1, Step: StepRebootNode, RequestedAt: t0, RecordedAt: t0}})), nil, admitted, at(10 * time.Minute),
			want{phase: PhaseRecovering, actions: []ActionKind{ActionRebootNode}, check: func(t *testing.T, d Decision) {
				if d.Actions[0].GPUs != nil {
					t.Errorf("reboot names GPUs %v, want the whole node", d.Actions[0].GPUs)
				}
			}}},
		{"while the breaker is tripped evidence is still captured",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetChosen)), nil, paused, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, wait: WaitEvidence}},
		{"while the breaker is tripped no step starts",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetEvidenceRecorded)), nil, paused, t0,
			want{phase: PhaseQuarantined, wait: WaitPaused, reason: ReasonAutomationPaused}},
		{"a step in backoff waits until the backoff ends",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(func() State {
				s := resetEvidenceRecorded.clone()
				s.Attempts = used(StepResetGPU, 1, 10*time.Minute).Attempts
				return s
			}())), nil, admitted, t0,
			want{phase: PhaseQuarantined, wait: WaitBackoff, reason: ReasonBackingOff, check: func(t *testing.T, d Decision) {
				if !d.WaitUntil.Equal(at(5 * time.Minute)) {
					t.Errorf("backoff until %s, want 15m after the last attempt", d.WaitUntil)
				}
			}}},
		{"another GPU's recent reset does not make this GPU's reset back off",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(func() State {
				s := resetEvidenceRecorded.clone()
				s.Attempts = usedOn(StepResetGPU, 1, 10*time.Minute, 5).Attempts
				return s
			}())), nil, admitted, t0,
			want{phase: PhaseRecovering, actions: []ActionKind{ActionResetGPU}}},
		{"this GPU's own recent reset makes its next reset back off",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(func() State {
				s := resetEvidenceRecorded.clone()
				s.Attempts = usedOn(StepResetGPU, 1, 10*time.Minute, 3).Attempts
				return s
			}())), nil, admitted, t0,
			want{phase: PhaseQuarantined, wait: WaitBackoff, reason: ReasonBackingOff}},
		{"a fault that clears before any step releases the hold",
			node(heldBy(OwnerRemediation), withState(resetEvidenceAsked)), nil, admitted, t0,
			want{phase: PhaseNone, hold: HoldRelease, reason: ReasonClearedWithoutStep}},
		{"a worse fault before the step starts moves straight to its step",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), unhealthy(6, fault.ActionRebootNode, "gpu-lost"), heldBy(OwnerRemediation), withState(resetEvidenceRecorded)), nil, admitted, t0,
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepRebootNode || !slices.Equal(d.State.GPUs, []int{3, 6}) {
					t.Errorf("step %s GPUs %v, want reboot-node for GPUs 3 and 6", d.State.Step, d.State.GPUs)
				}
			}}},
	})
}

func runDecide(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			if tt.policy != nil {
				p = *tt.policy
			}
			before := tt.facts.State.clone()
			d := Decide(tt.facts, p, tt.adm, tt.now)
			if d.Phase != tt.want.phase {
				t.Errorf("phase %q, want %q (%s: %s)", d.Phase, tt.want.phase, d.Reason, d.Message)
			}
			if d.Hold != tt.want.hold {
				t.Errorf("hold %q, want %q", d.Hold, tt.want.hold)
			}
			if !slices.Equal(kinds(d.Actions), tt.want.actions) {
				t.Errorf("actions %v, want %v (%s: %s)", kinds(d.Actions), tt.want.actions, d.Reason, d.Message)
			}
			if tt.want.wait != "" && d.Wait != tt.want.wait {
				t.Errorf("wait %q, want %q (%s)", d.Wait, tt.want.wait, d.Message)
			}
			if tt.want.reason != "" && d.Reason != tt.want.reason {
				t.Errorf("reason %q, want %q (%s)", d.Reason, tt.want.reason, d.Message)
			}
			if len(d.Actions) > 0 && !tt.facts.held(OwnerRemediation) {
				t.Errorf("actions %v without remediation's hold in the facts", kinds(d.Actions))
			}
			if d.Message == "" {
				t.Error("no message")
			}
			if tt.want.check != nil {
				tt.want.check(t, d)
			}
			if !stateEqual(tt.facts.State, before) {
				t.Error("Decide modified the facts' state")
			}
		})
	}
}

func stateEqual(a, b State) bool {
	return a.Phase == b.Phase && slices.Equal(a.GPUs, b.GPUs) && len(a.Attempts) == len(b.Attempts) &&
		slices.EqualFunc(a.Attempts, b.Attempts, func(x, y Attempt) bool { return x.Result == y.Result && x.ID == y.ID })
}
