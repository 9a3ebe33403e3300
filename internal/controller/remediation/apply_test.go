package remediation

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// The state, the requests and the breaker are decided from the object read: an apply
// decided on a stale object must fail, as the optimistic-locking merge patches did.
func TestAnApplyDecidedOnAStaleObjectIsRefusedAndLeavesTheFieldsAlone(t *testing.T) {
	h := newHarness(t, "stale", 2, v1alpha1.RemediationPolicy{})
	ctx := t.Context()
	stale := h.get()
	fresh := stale.DeepCopy()
	upd := fresh.DeepCopy()
	upd.Annotations = map[string]string{AnnotationState: `{"phase":"Suspect"}`}
	if err := h.r.applyNode(ctx, fresh, upd); err != nil {
		t.Fatalf("applying on the object read: %v", err)
	}
	upd = stale.DeepCopy()
	upd.Annotations = map[string]string{AnnotationState: `{"phase":"Quarantined"}`}
	upd.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepResetGPU, Reason: "x"}
	if err := h.r.applyNode(ctx, stale, upd); !apierrors.IsConflict(err) {
		t.Fatalf("applying on a stale object: %v, want a conflict", err)
	}
	if gn := h.get(); gn.Annotations[AnnotationState] != `{"phase":"Suspect"}` || gn.Spec.Remediation != nil {
		t.Errorf("after the refused apply: state %q, request %+v", gn.Annotations[AnnotationState], gn.Spec.Remediation)
	}

	pol := &v1alpha1.GPUNodePolicy{}
	if err := h.c.Get(ctx, client.ObjectKey{Name: h.name}, pol); err != nil {
		t.Fatal(err)
	}
	trip := pol.DeepCopy()
	trip.Status.Breaker = &v1alpha1.BreakerStatus{TrippedAt: metav1.NewTime(at), Faulting: 3, Nodes: 4, Reason: "storm"}
	if err := h.r.applyBreaker(ctx, pol, trip); err != nil {
		t.Fatalf("recording the breaker on the policy read: %v", err)
	}
	again := pol.DeepCopy()
	again.Status.Breaker = &v1alpha1.BreakerStatus{TrippedAt: metav1.NewTime(at.Add(1e9)), Faulting: 1, Nodes: 4, Reason: "other"}
	if err := h.r.applyBreaker(ctx, pol, again); !apierrors.IsConflict(err) {
		t.Fatalf("recording the breaker on a stale policy: %v, want a conflict", err)
	}
}

// Each apply carries every field the controller owns: recording the controller step
// after the state must not drop the state, the request or the raised generation.
func TestApplyingTheControllerStepKeepsTheStateAndTheRequests(t *testing.T) {
	h := newHarness(t, "keep", 2, v1alpha1.RemediationPolicy{})
	ctx := t.Context()
	gn := h.get()
	upd := gn.DeepCopy()
	upd.Annotations = map[string]string{AnnotationState: `{"phase":"Recovering"}`}
	upd.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 7, Step: v1alpha1.StepResetGPU, Reason: "x"}
	upd.Spec.AcceptanceGeneration, upd.Spec.AcceptanceReason = 3, "after reset"
	if err := h.r.applyNode(ctx, gn, upd); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.recordStep(ctx, gn, &ControllerStep{Step: v1alpha1.StepReloadDriver, ID: 8}); err != nil {
		t.Fatal(err)
	}
	got := h.get()
	if got.Annotations[AnnotationState] != `{"phase":"Recovering"}` || got.Annotations[AnnotationControllerStep] == "" ||
		got.Spec.Remediation == nil || got.Spec.Remediation.ID != 7 || got.Spec.AcceptanceGeneration != 3 {
		t.Errorf("after recording the step: annotations %v, spec %+v", got.Annotations, got.Spec)
	}
}
