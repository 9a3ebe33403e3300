package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

func TestDecideAfterTheStepStarted(t *testing.T) {
	runDecide(t, []decideCase{
		// Recovering: the step was started.
		{"a started reset with no outcome waits and is not asked again",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted)), nil, admitted, at(time.Minute),
			want{phase: PhaseRecovering, wait: WaitOutcome, reason: ReasonWaitingForOutcome}},
		{"a started reset is not asked again even with the breaker tripped and the budget full",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted)), nil, paused, at(time.Minute),
			want{phase: PhaseRecovering, wait: WaitOutcome}},
		{"a started reset that never reports is escalated at its timeout, not repeated",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted)), nil, admitted, at(5 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver || d.State.Attempts[0].Result != AttemptTimedOut {
					t.Errorf("step %s attempts %+v, want reload-driver after a timed-out reset", d.State.Step, d.State.Attempts)
				}
			}}},
		{"an outcome for another request is ignored",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted), outcome(1, OutcomeSucceeded)), nil, admitted, at(time.Minute),
			want{phase: PhaseRecovering, wait: WaitOutcome}},
		{"a reset reported succeeded asks for acceptance of that GPU",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), awaitingCheck(3), requested(4), heldBy(OwnerRemediation), withState(resetStarted), outcome(2, OutcomeSucceeded)), nil, admitted, at(time.Minute),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}, wait: WaitAcceptance, reason: ReasonAccepting, check: func(t *testing.T, d Decision) {
				if a := d.Actions[0]; a.ID != 5 || !slices.Equal(a.GPUs, []int{3}) || d.State.AcceptanceGeneration != 5 {
					t.Errorf("action %+v, want acceptance generation 5 for GPU 3", a)
				}
			}}},
		{"a reset reported failed escalates to reload-driver",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted), outcome(2, OutcomeFailed)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver || d.State.Attempts[0].Result != AttemptFailed {
					t.Errorf("step %s attempts %+v", d.State.Step, d.State.Attempts)
				}
			}}},
		{"restart-app keeps evicting while pods remain",
			node(degraded(2, fault.ActionRestartApp, "xid-13"), busy(2, 1, 0), heldBy(OwnerRemediation), withState(restartAppStarted)), &remediateDegraded, admitted, at(time.Minute),
			want{phase: PhaseRecovering, actions: []ActionKind{ActionEvictPods}, wait: WaitDrain}},
		{"restart-app succeeds once the pods are gone and asks for acceptance",
			node(degraded(2, fault.ActionRestartApp, "xid-13"), heldBy(OwnerRemediation), withState(restartAppStarted)), &remediateDegraded, admitted, at(time.Minute),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}}},
		{"restart-app whose pods never leave escalates to reset-gpu",
			node(degraded(2, fault.ActionRestartApp, "xid-13"), busy(2, 1, 0), heldBy(OwnerRemediation), withState(restartAppStarted)), &remediateDegraded, admitted, at(10 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepResetGPU {
					t.Errorf("step %s, want reset-gpu", d.State.Step)
				}
			}}},

		// Accepting: the step succeeded.
		{"a passing acceptance with the fault gone releases the hold",
			node(heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, true)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseNone, hold: HoldRelease, reason: ReasonRecovered, check: func(t *testing.T, d Decision) {
				if d.State.Attempts[0].Result != AttemptCleared || d.State.Step != "" || d.State.LastID != 2 {
					t.Errorf("state %+v, want the episode closed with the attempt cleared and the IDs kept", d.State)
				}
			}}},
		{"an answer to an older acceptance generation is not this step's answer",
			node(heldBy(OwnerRemediation), withState(resetAccepting), accepted(4, true), requested(5)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseAccepting, wait: WaitAcceptance}},
		{"an acceptance request lost in a crash is asked again with the same generation",
			node(heldBy(OwnerRemediation), withState(resetAccepting), accepted(4, true)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}, wait: WaitAcceptance, check: func(t *testing.T, d Decision) {
				if d.Actions[0].ID != 5 || !slices.Equal(d.Actions[0].GPUs, []int{3}) {
					t.Errorf("action %+v, want generation 5 for GPU 3 again", d.Actions[0])
				}
			}}},
		{"a failing acceptance escalates to the next step",
			node(unhealthy(3, fault.ActionResetGPU, "check-failed"), heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, false)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver || d.State.Attempts[0].Result != AttemptNotCleared {
					t.Errorf("step %s attempts %+v", d.State.Step, d.State.Attempts)
				}
			}}},
		{"a passing acceptance with the fault returned escalates",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, true)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver {
					t.Errorf("step %s, want reload-driver", d.State.Step)
				}
			}}},
		{"a passing acceptance the GPU's health has not caught up with waits",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), awaitingCheck(3), heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, true)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseAccepting, wait: WaitAcceptance}},
		{"an acceptance that never answers escalates at its timeout",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), awaitingCheck(3), heldBy(OwnerRemediation), withState(resetAccepting)), nil, admitted, at(30 * time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepReloadDriver {
					t.Errorf("step %s, want reload-driver", d.State.Step)
				}
			}}},
		{"a worse fault during acceptance escalates at once to the step it needs",
			node(unhealthy(3, fault.ActionRebootNode, "gpu-lost"), heldBy(OwnerRemediation), withState(resetAccepting)), nil, admitted, at(time.Minute),
			want{phase: PhaseQuarantined, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if d.State.Step != StepRebootNode {
					t.Errorf("step %s, want reboot-node", d.State.Step)
				}
			}}},
		{"a passing acceptance with a new fault on another GPU opens a new episode under the same hold",
			node(unhealthy(6, fault.ActionResetGPU, "xid-48"), heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, true)), nil, admitted, at(2 * time.Minute),
			want{phase: PhaseQuarantined, hold: HoldKeep, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if !slices.Equal(d.State.GPUs, []int{6}) || d.State.Step != StepResetGPU || d.State.Attempts[0].Result != AttemptCleared {
					t.Errorf("state %+v, want a reset episode for GPU 6 and the first attempt cleared", d.State)
				}
			}}},
		{"a failed acceptance after the last step ends in Maintenance, not a loop",
			node(unhealthy(3, fault.ActionRebootNode, "xid-79"), heldBy(OwnerRemediation), withState(State{Phase: PhaseAccepting, PhaseSince: t0, FaultSince: t0, GPUs: []int{3},
				Step: StepRebootNode, StepStarted: t0, RequestID: 4, LastID: 4, EpisodeSteps: 3, AcceptanceGeneration: 5, AcceptanceRequestedAt: t0,
				Attempts: []Attempt{{Step: StepRebootNode, ID: 4, Started: t0, Result: AttemptSucceeded}}}), accepted(5, false)), nil, admitted, at(time.Minute),
			want{phase: PhaseMaintenance, wait: WaitRelease, actions: []ActionKind{ActionCaptureEvidence}, reason: ReasonInMaintenance}},

		// Maintenance.
		{"a node in maintenance stays held without a release, whatever the clock",
			node(heldBy(OwnerRemediation), withState(maintenance)), nil, admitted, at(1000 * time.Hour),
			want{phase: PhaseMaintenance, wait: WaitRelease, reason: ReasonInMaintenance}},
		{"a node in maintenance whose hold was removed gets it back",
			node(withState(maintenance)), nil, overBudget, t0,
			want{phase: PhaseMaintenance, hold: HoldPlace, wait: WaitHold}},
		{"a release older than the maintenance is ignored",
			node(heldBy(OwnerRemediation), withState(maintenance), released(t0.Add(-time.Minute))), nil, admitted, at(time.Hour),
			want{phase: PhaseMaintenance, wait: WaitRelease}},
		{"a release asks for acceptance of the whole node and forgets old attempts",
			node(heldBy(OwnerRemediation), withState(maintenance), released(at(time.Minute)), requested(8)), nil, admitted, at(time.Hour),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}, wait: WaitAcceptance, reason: ReasonReleased, check: func(t *testing.T, d Decision) {
				if a := d.Actions[0]; a.GPUs != nil || a.ID != 9 || len(d.State.Attempts) != 0 || !d.State.AfterRelease {
					t.Errorf("action %+v state %+v", a, d.State)
				}
			}}},
		{"a passing acceptance after the release returns the node to service",
			node(heldBy(OwnerRemediation), withState(releasedAccepting), accepted(9, true)), nil, admitted, at(time.Hour),
			want{phase: PhaseNone, hold: HoldRelease, reason: ReasonRecovered}},
		{"a failing acceptance after the release goes back to maintenance",
			node(heldBy(OwnerRemediation), withState(releasedAccepting), accepted(9, false)), nil, admitted, at(time.Hour),
			want{phase: PhaseMaintenance, wait: WaitRelease, actions: []ActionKind{ActionCaptureEvidence}, check: func(t *testing.T, d Decision) {
				if !strings.Contains(d.State.Reason, "after the release failed") {
					t.Errorf("reason %q", d.State.Reason)
				}
			}}},
		{"a release stamped in the future is refused and not remembered as handled",
			node(heldBy(OwnerRemediation), withState(maintenance), released(far)), nil, admitted, at(time.Hour),
			want{phase: PhaseMaintenance, wait: WaitRelease, reason: ReasonInMaintenance, check: func(t *testing.T, d Decision) {
				if !d.State.ReleaseHandled.IsZero() || d.State.AfterRelease {
					t.Errorf("state %+v remembers the refused release", d.State)
				}
			}}},
		{"a release stamped within the clock-skew allowance is acted on",
			node(heldBy(OwnerRemediation), withState(maintenance), released(at(time.Hour+MaxStampSkew))), nil, admitted, at(time.Hour),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}, wait: WaitAcceptance, reason: ReasonReleased}},
		{"a valid release after a future one was remembered as handled releases the node",
			node(heldBy(OwnerRemediation), withState(func() State {
				s := maintenance.clone()
				s.ReleaseHandled = far
				return s
			}()), released(at(time.Minute))), nil, admitted, at(time.Hour),
			want{phase: PhaseAccepting, actions: []ActionKind{ActionRequestAcceptance}, wait: WaitAcceptance, reason: ReasonReleased, check: func(t *testing.T, d Decision) {
				if !d.State.ReleaseHandled.Equal(at(time.Minute)) {
					t.Errorf("release handled %s, want the valid release's stamp", d.State.ReleaseHandled)
				}
			}}},
		{"a handled release does not release the node again",
			node(heldBy(OwnerRemediation), withState(func() State {
				s := maintenance.clone()
				s.PhaseSince, s.ReleaseHandled = at(time.Hour), at(time.Minute)
				return s
			}()), released(at(time.Minute))), nil, admitted, at(2 * time.Hour),
			want{phase: PhaseMaintenance, wait: WaitRelease}},
	})
}

func TestDecideScopes(t *testing.T) {
	rebootAccepting := State{Phase: PhaseAccepting, PhaseSince: t0, FaultSince: t0, GPUs: []int{3}, Step: StepRebootNode,
		StepStarted: t0, RequestID: 2, LastID: 2, EpisodeSteps: 1, AcceptanceGeneration: 5, AcceptanceRequestedAt: t0,
		Attempts: []Attempt{{Step: StepRebootNode, ID: 2, Started: t0, Result: AttemptSucceeded}}}
	tests := []struct {
		name      string
		facts     Facts
		wantPhase Phase
		wantHold  HoldOp
	}{
		{"after a reboot a fault on any GPU means the reboot did not clear it",
			node(unhealthy(6, fault.ActionResetGPU, "xid-48"), heldBy(OwnerRemediation), withState(rebootAccepting), accepted(5, true)), PhaseMaintenance, HoldKeep},
		{"after a reboot with every GPU healthy the hold is released",
			node(heldBy(OwnerRemediation), withState(rebootAccepting), accepted(5, true)), PhaseNone, HoldRelease},
		{"a fault on a node remediation already holds needs no admission",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation)), PhaseQuarantined, HoldKeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.facts, DefaultPolicy(), overBudget, at(time.Minute))
			if d.Phase != tt.wantPhase || d.Hold != tt.wantHold {
				t.Errorf("phase %q hold %q, want %q %q (%s: %s)", d.Phase, d.Hold, tt.wantPhase, tt.wantHold, d.Reason, d.Message)
			}
		})
	}
}
