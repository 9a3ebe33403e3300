package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
)

// strip removes what a person with Node-patch rights removes from the harness's Node: the
// holds annotation, gpunode's taints, or both, in one update.
func (h *harness) strip(annotation, taints bool) {
	h.t.Helper()
	node := &corev1.Node{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: h.name}, node); err != nil {
		h.t.Fatal(err)
	}
	if annotation {
		delete(node.Annotations, v1alpha1.AnnotationHolds)
	}
	if taints {
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, nodeops.Owns)
	}
	if err := h.c.Update(h.t.Context(), node); err != nil {
		h.t.Fatalf("stripping the hold of Node %s: %v", h.name, err)
	}
}

// unschedulable reports whether the Node carries gpunode's unschedulable taint.
func (h *harness) unschedulable() bool {
	h.t.Helper()
	node := &corev1.Node{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: h.name}, node); err != nil {
		h.t.Fatal(err)
	}
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return nodeops.Owns(t) && t.Key == v1alpha1.TaintUnschedulable })
}

// maintenance brings the harness's node to Maintenance, held.
func (h *harness) maintenance() {
	h.t.Helper()
	h.setGPU(0, v1alpha1.HealthUnhealthy, "service", "row-remap-failure")
	h.pass(time.Second)
	h.pass(time.Second)
	if gn := h.get(); claim(gn) != v1alpha1.PhaseMaintenance || !h.held() || !h.unschedulable() {
		h.t.Fatalf("phase %s, held %v, tainted %v; want Maintenance, held and tainted", claim(gn), h.held(), h.unschedulable())
	}
}

func TestAHeldNodeStrippedOfItsHoldGetsItBackWithAnEvent(t *testing.T) {
	cases := []struct {
		name              string
		annotation, taint bool
		names             string // what the Event says was restored
	}{
		{"a stripped taint comes back", false, true, "taint gpunode.dev/unschedulable=maintenance"},
		{"a stripped holds annotation comes back", true, false, "the remediation hold"},
		{"a stripped taint and annotation come back", true, true, "the remediation hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "rem-strip", 2, v1alpha1.RemediationPolicy{})
			h.maintenance()
			h.strip(tc.annotation, tc.taint)
			h.pass(time.Second)
			if !h.held() || !h.unschedulable() {
				t.Fatalf("after a pass: held %v, tainted %v; want the hold and its taint back", h.held(), h.unschedulable())
			}
			if !h.sawEvent("Warning", EventHoldRestored, tc.names, "while remediation is Maintenance") {
				t.Errorf("no Warning %s Event naming %q", EventHoldRestored, tc.names)
			}
			if claim(h.get()) != v1alpha1.PhaseMaintenance {
				t.Errorf("phase %s after the restore, want Maintenance still", claim(h.get()))
			}
		})
	}
}

func TestAHoldReleasedByAReleaseAndAPassingAcceptanceIsNotRestored(t *testing.T) {
	h := newHarness(t, "rem-released", 2, v1alpha1.RemediationPolicy{})
	h.maintenance()
	gn := h.get()
	gn.Annotations[v1alpha1.AnnotationRelease] = h.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	if err := h.c.Update(t.Context(), gn); err != nil {
		t.Fatal(err)
	}
	h.pass(2 * time.Minute)
	h.setGPU(0, v1alpha1.HealthHealthy, "none") // serviced
	h.accept(v1alpha1.AcceptancePassed)
	h.pass(time.Second)
	if h.held() {
		t.Fatalf("phase %s: the hold stays after the release's acceptance passed", claim(h.get()))
	}
	for range 3 {
		h.pass(time.Minute)
	}
	if h.held() || h.unschedulable() {
		t.Error("a hold released the proper way came back")
	}
	if h.sawEvent(EventHoldRestored) {
		t.Error("a HoldRestored Event for a hold released the proper way")
	}
	if s := h.state(); s.Phase != remediation.PhaseNone {
		t.Errorf("phase %s after the passing acceptance, want none", s.Phase)
	}
}

func TestThroughAManagerTaintsStrippedFromARemediationHoldComeBack(t *testing.T) {
	h := newHarness(t, "rem-mgr-strip", 1, v1alpha1.RemediationPolicy{})
	runManager(t)
	h.setGPU(0, v1alpha1.HealthUnhealthy, "service", "row-remap-failure")
	waitFor(t, "the node held in Maintenance", func() bool { return h.state().Phase == remediation.PhaseMaintenance && h.held() && h.unschedulable() })

	h.strip(false, true) // a change the Node's metadata does not show
	waitFor(t, "the taint back", h.unschedulable)
	waitFor(t, "a HoldRestored Event on the GPUNode", func() bool {
		var list eventsv1.EventList
		if err := h.c.List(t.Context(), &list); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == EventHoldRestored && e.Regarding.Name == h.name && strings.Contains(e.Note, v1alpha1.TaintUnschedulable)
		})
	})
}
