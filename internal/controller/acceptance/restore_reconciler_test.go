package acceptance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// runs numbers the runs of a test in this process, so that a test run again (-count) on the
// package's one API server names objects of its own.
var runs atomic.Int64

// fresh is name with this run's number: the objects of an earlier run stay on the API server.
func fresh(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

// strip removes what a person with Node-patch rights removes from Node name: the holds
// annotation, gpunode's taints, or both, in one update.
func strip(t *testing.T, c client.Client, name string, annotation, taints bool) {
	t.Helper()
	if err := stripNode(t.Context(), c, name, annotation, taints); err != nil {
		t.Fatalf("stripping the hold of Node %s: %v", name, err)
	}
}

// stripNode is strip for a caller that is not the test's goroutine.
func stripNode(ctx context.Context, c client.Client, name string, annotation, taints bool) error {
	return retryOnConflict(ctx, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		if annotation {
			delete(node.Annotations, v1alpha1.AnnotationHolds)
		}
		if taints {
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, nodeops.Owns)
		}
		return c.Update(ctx, node)
	})
}

// nodeHolds is Node name's holds annotation, parsed, and its gpunode taints as key=value.
func nodeHolds(t *testing.T, c client.Client, name string) (nodeops.Holds, []string) {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("reading Node %s: %v", name, err)
	}
	holds, err := nodeops.ParseHolds(name, node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		t.Fatal(err)
	}
	return holds, taints(t, c, name)
}

// restoredEvents are the HoldRestored Events on GPUNode name.
func restoredEvents(t *testing.T, c client.Client, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool {
		return e.Reason != EventHoldRestored || e.Regarding.Kind != "GPUNode" || e.Regarding.Name != name
	})
}

// failAcceptance joins node name with 7 of the 8 GPUs its policy expects and waits until
// the failed verdict holds it.
func failAcceptance(t *testing.T, c client.Client, name string) {
	t.Helper()
	createPolicy(t, c, policy(name, 10, map[string]string{"fleet": name}, 8))
	join(t, c, name, 7, map[string]string{"fleet": name})
	waitGPUNode(t, c, name, "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answer(t, c, name, 1, v1alpha1.AcceptancePassed, 7)
	waitGPUNode(t, c, name, "the failed verdict held in status", func(gn *v1alpha1.GPUNode) bool {
		return condition(gn, v1alpha1.ConditionAccepted).Status == metav1.ConditionFalse &&
			slices.ContainsFunc(gn.Status.Holds, func(h v1alpha1.Hold) bool { return h.Owner == v1alpha1.HoldOwnerAcceptance })
	})
}

func TestAStrippedAcceptanceHoldOfAFailedNodeComesBackWithAnEvent(t *testing.T) {
	c := startController(t)
	const reason = "gpu-count: 7 GPUs found, 8 expected"
	cases := []struct {
		name              string
		node              string
		annotation, taint bool
		names             string // what the Event says was restored
	}{
		{"a stripped taint comes back", "strip-taint", false, true, v1alpha1.TaintNotAccepted + ":NoSchedule"},
		{"a stripped holds annotation comes back", "strip-annotation", true, false, "the acceptance hold"},
		{"a stripped taint and annotation come back", "strip-both", true, true, "the acceptance hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.node = fresh(tc.node)
			failAcceptance(t, c, tc.node)
			holds, _ := nodeHolds(t, c, tc.node)
			before, _ := holds.Find(v1alpha1.HoldOwnerAcceptance)

			strip(t, c, tc.node, tc.annotation, tc.taint)
			deadline := time.Now().Add(waitTimeout)
			for {
				holds, ts := nodeHolds(t, c, tc.node)
				h, ok := holds.Find(v1alpha1.HoldOwnerAcceptance)
				if ok && h.Reason == reason && slices.Contains(ts, v1alpha1.TaintNotAccepted+"=") &&
					slices.Contains(ts, v1alpha1.TaintUnschedulable+"=gpu-count-7-GPUs-found-8-expected") {
					if !h.Since.Equal(before.Since) {
						t.Errorf("restored hold %+v, want the since %s it had", h, before.Since)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the hold did not come back within %s: holds %v, taints %v", waitTimeout, holds, ts)
				}
				time.Sleep(50 * time.Millisecond)
			}
			deadline = time.Now().Add(waitTimeout)
			for {
				evs := restoredEvents(t, c, tc.node)
				if len(evs) > 0 {
					if e := evs[0]; e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, tc.names) || !strings.Contains(e.Note, "Accepted False") {
						t.Errorf("HoldRestored Event %s %q, want a Warning naming %q and the failed verdict", e.Type, e.Note, tc.names)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no HoldRestored Event on GPUNode %s within %s", tc.node, waitTimeout)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

func TestAnAcceptanceHoldReleasedByAPassingRunIsNotRestored(t *testing.T) {
	c := startController(t)
	name := fresh("restore-passed")
	failAcceptance(t, c, name)

	// The node is repaired and accepted again: the passing run releases the hold.
	err := retryOnConflict(t.Context(), func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.Inventory.GPUs, gn.Status.GPUCount = gpuInfos(8), 8
		return c.Status().Update(t.Context(), gn)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitGPUNode(t, c, name, "acceptance requested again for the changed inventory", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 2 })
	answer(t, c, name, 2, v1alpha1.AcceptancePassed, 8)
	waitGPUNode(t, c, name, "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })

	// A change of the Node's holds makes a pass; once it has mirrored the operator's hold,
	// it has decided about the acceptance hold too.
	if err := (nodeops.Ops{Client: c}).Hold(t.Context(), name, v1alpha1.HoldOwnerOperator, "rack move"); err != nil {
		t.Fatal(err)
	}
	waitGPUNode(t, c, name, "the operator's hold mirrored", func(gn *v1alpha1.GPUNode) bool {
		return len(gn.Status.Holds) == 1 && gn.Status.Holds[0].Owner == v1alpha1.HoldOwnerOperator
	})
	holds, ts := nodeHolds(t, c, name)
	if _, ok := holds.Find(v1alpha1.HoldOwnerAcceptance); ok || slices.Contains(ts, v1alpha1.TaintNotAccepted+"=") {
		t.Errorf("an acceptance hold released by a passing run came back: holds %v, taints %v", holds, ts)
	}
	if evs := restoredEvents(t, c, name); len(evs) > 0 {
		t.Errorf("HoldRestored Events on a node released the proper way: %q", evs[0].Note)
	}
}

func TestAStrippedLivenessHoldComesBackWhileTheAgentIsLost(t *testing.T) {
	c := startController(t)
	name := fresh("strip-lost")
	p := policy(name, 10, map[string]string{"fleet": name}, 8)
	p.Spec.AgentLostAfter = &metav1.Duration{Duration: testLostAfter}
	createPolicy(t, c, p)
	join(t, c, name, 8, map[string]string{"fleet": name})
	stopBeating := startBeating(t, c, name)
	waitGPUNode(t, c, name, "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answer(t, c, name, 1, v1alpha1.AcceptancePassed, 8)
	waitGPUNode(t, c, name, "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })
	stopBeating()
	waitGPUNode(t, c, name, "AgentLost", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseAgentLost && heldByLiveness(gn)
	})

	strip(t, c, name, false, true) // the annotation stays: only its taint goes
	deadline := time.Now().Add(waitTimeout)
	for want := v1alpha1.TaintUnschedulable + "=" + v1alpha1.HoldReasonAgentLost; !slices.Contains(taints(t, c, name), want); {
		if time.Now().After(deadline) {
			t.Fatalf("the liveness hold's taint did not come back within %s: taints %v", waitTimeout, taints(t, c, name))
		}
		time.Sleep(50 * time.Millisecond)
	}
	e := waitEventOf(t, c, "GPUNode", name, corev1.EventTypeWarning, EventHoldRestored)
	if !strings.Contains(e.Note, "agent is lost") {
		t.Errorf("HoldRestored Event %q, want it to say the agent is lost", e.Note)
	}
}
