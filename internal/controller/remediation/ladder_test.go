package remediation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

func TestOnlyTheFaultyGPUsPodsAreEvictedAndTheResetWaitsForItsProcesses(t *testing.T) {
	h := newHarness(t, "rem-pods", 4, v1alpha1.RemediationPolicy{})
	a := h.pod(h.name+"-on-gpu3", nil, true)
	b := h.pod(h.name+"-on-gpu2", nil, true)
	h.agent("publishes the pods on each GPU", func(gn *v1alpha1.GPUNode) {
		gn.Status.GPUHealth[3].Pods = []string{"default/" + a.Name}
		gn.Status.GPUHealth[2].Pods = []string{"default/" + b.Name}
	})
	h.setGPU(3, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-95")
	h.pass(time.Second) // hold, capture-evidence
	h.answer(v1alpha1.OutcomeSucceeded, true)
	h.pass(time.Second) // evict GPU 3's pods
	if !h.gone(a.Name) {
		t.Fatal("the pod on the faulty GPU was not evicted")
	}
	if h.gone(b.Name) {
		t.Fatal("the pod on a healthy GPU was evicted")
	}
	if r := h.get().Spec.Remediation; r.Step == v1alpha1.StepResetGPU {
		t.Fatal("the reset was asked for while the GPU still had a pod")
	}

	h.agent("sees the pod gone and one process left", func(gn *v1alpha1.GPUNode) {
		gn.Status.GPUHealth[3].Pods, gn.Status.GPUHealth[3].Processes = nil, ptr.To[int32](1)
	})
	h.pass(time.Second)
	if r := h.get().Spec.Remediation; r.Step == v1alpha1.StepResetGPU {
		t.Fatal("the reset was asked for while a process used the GPU")
	}
	h.agent("sees the process end", func(gn *v1alpha1.GPUNode) { gn.Status.GPUHealth[3].Processes = ptr.To[int32](0) })
	h.pass(time.Second)
	if r := h.get().Spec.Remediation; r.Step != v1alpha1.StepResetGPU {
		t.Fatalf("with the GPU idle the agent was asked for %+v, want reset-gpu", r)
	}
}

// unreadable plays the agent that cannot read its GPUs (the driver is not loaded).
func (h *harness) unreadable() {
	h.t.Helper()
	h.agent("cannot read the GPUs", func(gn *v1alpha1.GPUNode) {
		gn.Status.Conditions = append(gn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGPUHealthy,
			Status: metav1.ConditionUnknown, Reason: ReasonGPUsUnreadable, Message: "the GPUs cannot be read: driver not loaded",
			LastTransitionTime: metav1.NewTime(h.clock.Now())})
	})
}

func TestADriverThatIsNotLoadedIsReloadedByReplacingTheDriverPod(t *testing.T) {
	sel := &v1alpha1.PodSelector{Namespace: "default", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "rem-driver"}}}
	h := newHarness(t, "rem-driver", 2, v1alpha1.RemediationPolicy{DriverPodSelector: sel})
	old := h.pod(h.name+"-driver-old", map[string]string{"app": "rem-driver"}, true)
	h.unreadable()
	h.pass(time.Second) // the node cannot run work: held at once, evidence asked
	if !h.held() {
		t.Fatal("a node whose driver is not loaded is not held")
	}
	h.answer(v1alpha1.OutcomeSucceeded, true)
	h.pass(time.Second)
	if s := h.state(); s.Step != remediation.StepReloadDriver || s.RequestID == 0 {
		t.Fatalf("the state %+v does not show reload-driver started", s)
	}
	if !h.gone(old.Name) {
		t.Fatal("the driver pod on the node was not deleted")
	}
	cs, err := ReadControllerStep(h.get())
	if err != nil || cs == nil || len(cs.Pods) != 1 || cs.Pods[0].UID != old.UID || cs.Outcome != "" {
		t.Fatalf("the recorded step %+v (%v) does not name the deleted pod and wait", cs, err)
	}

	starting := h.pod(h.name+"-driver-new", map[string]string{"app": "rem-driver"}, false)
	h.r = &Reconciler{Client: h.c, Recorder: h.events, Clock: h.clock} // a restarted controller
	h.pass(time.Second)
	if cs, _ := ReadControllerStep(h.get()); cs.Outcome != "" {
		t.Fatalf("the step ended with %s before any new driver pod was Ready", cs.Outcome)
	}
	if h.gone(starting.Name) {
		t.Fatal("a restarted controller deleted the replacement driver pod")
	}
	starting.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := h.c.Status().Update(t.Context(), starting); err != nil {
		t.Fatal(err)
	}
	gen := h.get().Spec.AcceptanceGeneration
	h.pass(time.Second)
	gn := h.get()
	if cs, _ := ReadControllerStep(gn); cs.Outcome != v1alpha1.OutcomeSucceeded {
		t.Fatalf("with a new Ready driver pod the step is %+v, want Succeeded", cs)
	}
	if gn.Spec.AcceptanceGeneration <= gen || claim(gn) != v1alpha1.PhaseAccepting {
		t.Fatalf("after the reload: acceptance generation %d (was %d), phase %s; want acceptance requested", gn.Spec.AcceptanceGeneration, gen, claim(gn))
	}
}

func TestWithoutADriverPodSelectorTheReloadRungIsSkipped(t *testing.T) {
	h := newHarness(t, "rem-nodriver", 2, v1alpha1.RemediationPolicy{})
	h.unreadable()
	h.pass(time.Second)
	h.answer(v1alpha1.OutcomeSucceeded, true)
	h.pass(time.Second)
	if r := h.get().Spec.Remediation; r == nil || r.Step != v1alpha1.StepRebootNode {
		t.Fatalf("without a driver pod selector the agent was asked for %+v, want reboot-node", r)
	}
}

func TestAReleaseFromMaintenanceAsksForAcceptanceAsReleased(t *testing.T) {
	h := newHarness(t, "rem-release", 2, v1alpha1.RemediationPolicy{})
	h.setGPU(0, v1alpha1.HealthUnhealthy, "service", "row-remap-failure")
	h.pass(time.Second) // straight to maintenance
	h.pass(time.Second)
	if gn := h.get(); claim(gn) != v1alpha1.PhaseMaintenance {
		t.Fatalf("phase %s, want Maintenance", claim(gn))
	}
	gn := h.get()
	gn.Annotations[v1alpha1.AnnotationRelease] = h.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	if err := h.c.Update(t.Context(), gn); err != nil {
		t.Fatal(err)
	}
	h.pass(2 * time.Minute)
	gn = h.get()
	if gn.Spec.AcceptanceReason != v1alpha1.AcceptanceReasonReleased || claim(gn) != v1alpha1.PhaseAccepting {
		t.Fatalf("after the release: reason %q, phase %s; want %q and Accepting", gn.Spec.AcceptanceReason, claim(gn), v1alpha1.AcceptanceReasonReleased)
	}
	if !h.held() {
		t.Fatal("the hold was released before the acceptance after the release passed")
	}
}

func TestATrippedBreakerPausesThePoolWithAConditionAndAnEvent(t *testing.T) {
	one := intstrOf(1)
	a := newHarness(t, "rem-breaker-a", 1, v1alpha1.RemediationPolicy{Breaker: &v1alpha1.BreakerPolicy{Threshold: &one}})
	b := a.sibling("rem-breaker-b", 1)
	a.sibling("rem-breaker-c", 1)
	a.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	b.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	a.pass(time.Second)
	pol := a.policy()
	c := findCondition(pol.Status.Conditions, v1alpha1.ConditionRemediationPaused)
	if pol.Status.Breaker == nil || c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonCircuitBreakerOpen {
		t.Fatalf("policy status %+v does not show the tripped breaker with RemediationPaused True", pol.Status)
	}
	if !a.sawEvent("CircuitBreakerOpen") {
		t.Error("no Event said the breaker tripped")
	}

	pol.Annotations = map[string]string{v1alpha1.AnnotationResumeRemediation: a.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)}
	if err := a.c.Update(t.Context(), pol); err != nil {
		t.Fatal(err)
	}
	a.pass(2 * time.Minute)
	if c := findCondition(a.policy().Status.Conditions, v1alpha1.ConditionRemediationPaused); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonResumed {
		t.Fatalf("after the resume RemediationPaused is %+v, want False/Resumed", c)
	}
	if strings.Contains(a.get().Status.Remediation.Waiting, remediation.ReasonAutomationPaused) {
		t.Fatal("the node still waits for the paused automation after the resume")
	}
}
