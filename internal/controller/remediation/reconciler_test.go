package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

func TestAGPUThatNeedsAResetIsHeldCapturedResetAcceptedAndReleased(t *testing.T) {
	h := newHarness(t, "rem-reset", 4, v1alpha1.RemediationPolicy{})

	h.pass(time.Second)
	if h.held() || h.get().Spec.Remediation != nil {
		t.Fatal("a healthy node was held or asked for a step")
	}

	h.setGPU(3, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	h.pass(time.Second)
	if !h.held() {
		t.Fatal("the node is not held by remediation after one pass with an unhealthy GPU")
	}
	gn := h.get()
	req := gn.Spec.Remediation
	if req == nil || req.Step != v1alpha1.StepCaptureEvidence || !slices.Equal(req.GPUs, []string{uuid(3)}) {
		t.Fatalf("after the hold the agent was asked for %+v, want capture-evidence for GPU 3", req)
	}
	if s := h.state(); s.Evidence.ID != req.ID || s.Step != remediation.StepResetGPU {
		t.Fatalf("the persisted state %+v does not record the evidence request %d before reset-gpu", s, req.ID)
	}
	if claim(gn) != v1alpha1.PhaseQuarantined {
		t.Errorf("phase %q while capturing evidence, want Quarantined", claim(gn))
	}
	if !h.sawEvent("PlacingHold") {
		t.Error("no Event said the hold was placed")
	}

	h.pass(time.Second)
	if got := h.get().Spec.Remediation; got.ID != req.ID || got.Step != v1alpha1.StepCaptureEvidence {
		t.Fatalf("without an answer the request changed to %+v", got)
	}

	h.answer(v1alpha1.OutcomeSucceeded, true)
	h.pass(time.Second)
	gn = h.get()
	reset := gn.Spec.Remediation
	if reset.Step != v1alpha1.StepResetGPU || reset.ID <= req.ID || !slices.Equal(reset.GPUs, []string{uuid(3)}) {
		t.Fatalf("after the evidence the agent was asked for %+v, want reset-gpu of GPU 3 with a higher ID than %d", reset, req.ID)
	}
	if s := h.state(); s.RequestID != reset.ID || s.StepStarted.IsZero() || !s.Evidence.Recorded() {
		t.Fatalf("the persisted state %+v does not record reset-gpu %d as started after recorded evidence", s, reset.ID)
	}
	if st := gn.Status.Remediation; st == nil || st.Current == nil || st.Current.Step != v1alpha1.StepResetGPU || st.Evidence == nil || st.Evidence.SHA256 != sha {
		t.Fatalf("status.remediation %+v does not show the reset in progress and the evidence", st)
	}
	if claim(gn) != v1alpha1.PhaseRecovering {
		t.Errorf("phase %q while resetting, want Recovering", claim(gn))
	}

	gen := gn.Spec.AcceptanceGeneration
	h.answer(v1alpha1.OutcomeSucceeded, false)
	h.setGPU(3, v1alpha1.HealthHealthy, "none")
	h.pass(time.Second)
	gn = h.get()
	if gn.Spec.AcceptanceGeneration <= gen || claim(gn) != v1alpha1.PhaseAccepting {
		t.Fatalf("after a successful reset: acceptance generation %d (was %d), phase %q; want a new request and Accepting",
			gn.Spec.AcceptanceGeneration, gen, claim(gn))
	}
	if !h.held() {
		t.Fatal("the hold was released before acceptance answered")
	}

	h.accept(v1alpha1.AcceptancePassed)
	h.pass(time.Second)
	if h.held() {
		t.Fatal("the hold remains after a passing acceptance with the fault gone")
	}
	gn = h.get()
	if s := h.state(); s.Phase != remediation.PhaseNone || len(s.Attempts) != 1 || s.Attempts[0].Result != remediation.AttemptCleared {
		t.Fatalf("the persisted state %+v does not close the episode with the reset as cleared", s)
	}
	st := gn.Status.Remediation
	if st == nil || st.Current != nil || len(st.History) != 1 || st.History[0].Outcome != v1alpha1.OutcomeSucceeded {
		t.Fatalf("status.remediation %+v does not show one successful reset and nothing in progress", st)
	}
}

func TestAFaultThatSurvivesEveryAllowedStepEndsInMaintenanceStillHeld(t *testing.T) {
	h := newHarness(t, "rem-maint", 2, v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
		{Step: v1alpha1.StepReloadDriver, Disabled: true},
		{Step: v1alpha1.StepRebootNode, Disabled: true},
	}})
	h.setGPU(1, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	h.pass(time.Second) // hold, capture-evidence
	h.answer(v1alpha1.OutcomeSucceeded, true)
	h.pass(time.Second) // reset-gpu
	if got := h.get().Spec.Remediation; got.Step != v1alpha1.StepResetGPU {
		t.Fatalf("the agent was asked for %+v, want reset-gpu", got)
	}
	h.answer(v1alpha1.OutcomeSucceeded, false)
	h.pass(time.Second) // acceptance requested; the GPU stays unhealthy
	h.accept(v1alpha1.AcceptancePassed)
	h.pass(time.Second)

	gn := h.get()
	if claim(gn) != v1alpha1.PhaseMaintenance {
		t.Fatalf("phase %q after the only allowed step did not clear the fault, want Maintenance (state %+v)", claim(gn), h.state())
	}
	if !h.held() {
		t.Fatal("a node in maintenance is not held")
	}
	if s := h.state(); s.Phase != remediation.PhaseMaintenance || s.Attempts[0].Result != remediation.AttemptNotCleared {
		t.Fatalf("the persisted state %+v does not record the reset as not clearing the fault", s)
	}
	if req := gn.Spec.Remediation; req.Step != v1alpha1.StepResetGPU {
		t.Errorf("entering maintenance asked the agent for %+v; the reset's evidence serves the person", req)
	}
	if st := gn.Status.Remediation; st == nil || st.Evidence == nil || st.Evidence.SHA256 != sha {
		t.Errorf("status.remediation %+v in maintenance lost the evidence bundle", st)
	}

	h.pass(time.Hour)
	if !h.held() || claim(h.get()) != v1alpha1.PhaseMaintenance {
		t.Fatal("time alone took the node out of maintenance")
	}
}

func TestASecondFaultyNodeWaitsUnheldWhileThePoolsBudgetIsSpent(t *testing.T) {
	one := intstr.FromInt32(1)
	a := newHarness(t, "rem-budget-a", 1, v1alpha1.RemediationPolicy{Budget: &v1alpha1.BudgetPolicy{MaxUnavailable: &one}})
	b := a.sibling("rem-budget-b", 1)
	a.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	b.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")

	a.pass(time.Second)
	b.pass(time.Second)
	if !a.held() {
		t.Fatal("the first faulty node was not held within the budget of one")
	}
	if b.held() {
		t.Fatal("the second faulty node was held beyond the budget of one")
	}
	gn := b.get()
	if claim(gn) != v1alpha1.PhaseSuspect || gn.Spec.Remediation != nil {
		t.Fatalf("the waiting node is %q with request %+v; want Suspect and no request", claim(gn), gn.Spec.Remediation)
	}
	if st := gn.Status.Remediation; st == nil || !strings.Contains(st.Waiting, remediation.ReasonWaitingForBudget) {
		t.Fatalf("status.remediation %+v does not say the node waits for budget", st)
	}
}
