package acceptance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// testLostAfter is the test policy's agentLostAfter: short, yet several heartbeats long.
const testLostAfter = 3 * time.Second

// beat writes a heartbeat into GPUNode name's status, as the agent does.
func beat(ctx context.Context, c client.Client, name string) error {
	patch := fmt.Sprintf(`{"status":{"agent":{"heartbeatTime":%q}}}`, time.Now().UTC().Format(time.RFC3339))
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.Status().Patch(ctx, gn, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// startBeating plays a live agent: a heartbeat now and every 200 ms until the returned
// stop is called (or the test ends).
func startBeating(t *testing.T, c client.Client, name string) (stop func()) {
	t.Helper()
	if err := beat(t.Context(), c, name); err != nil {
		t.Fatalf("heartbeat of GPUNode %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := beat(ctx, c, name); err != nil && ctx.Err() == nil {
					t.Logf("heartbeat of GPUNode %s: %v", name, err)
				}
			}
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// publishGPUHealth plays the agent publishing its GPUs' health.
func publishGPUHealth(t *testing.T, c client.Client, name string, h v1alpha1.Health) {
	t.Helper()
	ctx := t.Context()
	cond := metav1.Condition{Type: v1alpha1.ConditionGPUHealthy, Status: metav1.ConditionTrue, Reason: "Healthy",
		Message: "8 GPUs, none unhealthy", LastTransitionTime: metav1.Now()}
	if h == v1alpha1.HealthUnhealthy {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Unhealthy", "1 of 8 GPUs unhealthy"
	}
	err := retryOnConflict(ctx, func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.Health = h
		gn.Status.Conditions = slices.DeleteFunc(gn.Status.Conditions, func(c metav1.Condition) bool { return c.Type == cond.Type })
		gn.Status.Conditions = append(gn.Status.Conditions, cond)
		return c.Status().Update(ctx, gn)
	})
	if err != nil {
		t.Fatalf("publishing the health of GPUNode %s: %v", name, err)
	}
}

// waitEventOf waits for an Event of type typ and reason on the object kind/name.
func waitEventOf(t *testing.T, c client.Client, kind, name, typ, reason string) eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list); err != nil {
			t.Fatalf("listing events: %v", err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Type == typ && e.Reason == reason {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event %s on %s %s after %s", typ, reason, kind, name, waitTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func heldByLiveness(gn *v1alpha1.GPUNode) bool {
	return slices.ContainsFunc(gn.Status.Holds, func(h v1alpha1.Hold) bool {
		return h.Owner == v1alpha1.HoldOwnerLiveness && h.Reason == v1alpha1.HoldReasonAgentLost
	})
}

func TestANodeWhoseAgentStopsHeartbeatingIsHeldAgentLostAndReleasedWhenItIsBackAndHealthy(t *testing.T) {
	c := startController(t)
	p := policy("live-fleet", 10, map[string]string{"fleet": "live"}, 8)
	p.Spec.AgentLostAfter = &metav1.Duration{Duration: testLostAfter}
	createPolicy(t, c, p)
	join(t, c, "node-live", 8, map[string]string{"fleet": "live"})
	stopBeating := startBeating(t, c, "node-live")
	waitGPUNode(t, c, "node-live", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answer(t, c, "node-live", 1, v1alpha1.AcceptancePassed, 8)
	gn := waitGPUNode(t, c, "node-live", "InService with a fresh heartbeat", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, v1alpha1.ConditionAgentHeartbeat).Reason == v1alpha1.ReasonHeartbeatFresh
	})
	if cond := condition(gn, v1alpha1.ConditionAgentHeartbeat); cond.Status != metav1.ConditionTrue {
		t.Errorf("AgentHeartbeat = %+v, want True", cond)
	}

	// The agent goes silent: nothing writes the GPUNode any more, and the controller's own
	// requeue finds it.
	stopBeating()
	gn = waitGPUNode(t, c, "node-live", "AgentLost", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseAgentLost && heldByLiveness(gn)
	})
	cond := condition(gn, v1alpha1.ConditionAgentHeartbeat)
	if cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonAgentLost {
		t.Errorf("AgentHeartbeat = %+v, want False/AgentLost", cond)
	}
	if got := taints(t, c, "node-live"); !slices.Contains(got, v1alpha1.TaintUnschedulable+"="+v1alpha1.HoldReasonAgentLost) {
		t.Errorf("taints = %v, want %s=%s", got, v1alpha1.TaintUnschedulable, v1alpha1.HoldReasonAgentLost)
	}
	for _, kind := range []string{"GPUNode", "Node"} {
		if e := waitEventOf(t, c, kind, "node-live", corev1.EventTypeWarning, EventAgentLost); e.Note != cond.Message {
			t.Errorf("the %s's AgentLost event says %q, want the condition's message %q", kind, e.Note, cond.Message)
		}
	}

	// The agent comes back with an unhealthy GPU: the node stays held.
	publishGPUHealth(t, c, "node-live", v1alpha1.HealthUnhealthy)
	startBeating(t, c, "node-live")
	gn = waitGPUNode(t, c, "node-live", "the agent back, waiting for healthy GPUs", func(gn *v1alpha1.GPUNode) bool {
		return condition(gn, v1alpha1.ConditionAgentHeartbeat).Reason == v1alpha1.ReasonWaitingForHealthyGPUs
	})
	if !heldByLiveness(gn) || gn.Status.Phase != v1alpha1.PhaseAgentLost {
		t.Errorf("back with an unhealthy GPU: phase %s, holds %+v; want still AgentLost and held", gn.Status.Phase, gn.Status.Holds)
	}

	// Its GPUs healthy again, the node is released and back in service.
	publishGPUHealth(t, c, "node-live", v1alpha1.HealthHealthy)
	gn = waitGPUNode(t, c, "node-live", "InService again", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService
	})
	if got := taints(t, c, "node-live"); len(got) != 0 || len(gn.Status.Holds) != 0 {
		t.Errorf("a node whose agent is back still carries taints %v and holds %v", got, gn.Status.Holds)
	}
	if cond := condition(gn, v1alpha1.ConditionAgentHeartbeat); cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonHeartbeatFresh {
		t.Errorf("AgentHeartbeat = %+v, want True/HeartbeatFresh", cond)
	}
	waitEventOf(t, c, "GPUNode", "node-live", corev1.EventTypeNormal, EventAgentBack)
}

func TestANodeWhoseAgentNeverSentAHeartbeatIsNotHeldForIt(t *testing.T) {
	c := startController(t)
	p := policy("silent-fleet", 10, map[string]string{"fleet": "silent"}, 8)
	p.Spec.AgentLostAfter = &metav1.Duration{Duration: time.Second}
	createPolicy(t, c, p)
	join(t, c, "node-silent", 8, map[string]string{"fleet": "silent"})
	waitGPUNode(t, c, "node-silent", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answer(t, c, "node-silent", 1, v1alpha1.AcceptancePassed, 8)
	gn := waitGPUNode(t, c, "node-silent", "InService", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService && condition(gn, v1alpha1.ConditionAgentHeartbeat).Reason == v1alpha1.ReasonNoHeartbeat
	})
	time.Sleep(2 * time.Second) // twice the limit
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(gn), gn); err != nil {
		t.Fatal(err)
	}
	if gn.Status.Phase != v1alpha1.PhaseInService || heldByLiveness(gn) {
		t.Errorf("a node whose agent predates heartbeats: phase %s, holds %+v; want InService, not held", gn.Status.Phase, gn.Status.Holds)
	}
}
