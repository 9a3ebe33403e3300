package remediation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// future is a stamp far ahead of any clock.
const future = "2099-01-01T00:00:00Z"

func TestAResumeStampedInTheFutureDoesNotKeepTheBreakerFromTripping(t *testing.T) {
	one := intstrOf(1)
	a := newHarness(t, "rem-future-resume-a", 1, v1alpha1.RemediationPolicy{Breaker: &v1alpha1.BreakerPolicy{Threshold: &one}})
	b := a.sibling("rem-future-resume-b", 1)
	a.sibling("rem-future-resume-c", 1)
	pol := a.policy()
	pol.Annotations = map[string]string{v1alpha1.AnnotationResumeRemediation: future}
	if err := a.c.Update(t.Context(), pol); err != nil {
		t.Fatal(err)
	}
	a.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	b.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	a.pass(time.Second)
	pol = a.policy()
	c := findCondition(pol.Status.Conditions, v1alpha1.ConditionRemediationPaused)
	if pol.Status.Breaker == nil || c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("2 of 3 nodes faulting with a resume stamped %s: policy status %+v, want the breaker tripped", future, pol.Status)
	}
	if !a.sawEvent(v1alpha1.ReasonRequestRefused, v1alpha1.AnnotationResumeRemediation, future, "ahead of the controller's clock") {
		t.Error("no Warning Event named the refused resume annotation, its value and why")
	}
}

func TestAReleaseStampedInTheFutureIsRefusedAndTheNextValidReleaseWorks(t *testing.T) {
	h := newHarness(t, "rem-future-release", 2, v1alpha1.RemediationPolicy{})
	h.setGPU(0, v1alpha1.HealthUnhealthy, "service", "row-remap-failure")
	h.pass(time.Second) // straight to maintenance
	h.pass(time.Second)
	release := func(v string) {
		t.Helper()
		gn := h.get()
		gn.Annotations[v1alpha1.AnnotationRelease] = v
		if err := h.c.Update(t.Context(), gn); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{future, "tomorrow"} {
		release(bad)
		h.pass(time.Minute)
		if gn := h.get(); claim(gn) != v1alpha1.PhaseMaintenance || !h.state().ReleaseHandled.IsZero() {
			t.Fatalf("after a release stamped %q: phase %s, release handled %s; want Maintenance and none handled", bad, claim(gn), h.state().ReleaseHandled)
		}
		if !h.sawEvent(v1alpha1.ReasonRequestRefused, v1alpha1.AnnotationRelease, bad) {
			t.Errorf("no Warning Event named the refused release %q", bad)
		}
	}
	release(h.clock.Now().Add(time.Second).UTC().Format(time.RFC3339))
	h.pass(2 * time.Second)
	if gn := h.get(); gn.Spec.AcceptanceReason != v1alpha1.AcceptanceReasonReleased || claim(gn) != v1alpha1.PhaseAccepting {
		t.Fatalf("after a valid release: reason %q, phase %s; want %q and Accepting", gn.Spec.AcceptanceReason, claim(gn), v1alpha1.AcceptanceReasonReleased)
	}
}
