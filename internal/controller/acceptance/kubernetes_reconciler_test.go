package acceptance

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// l2Labels are the labels the agent applies to an 8-GPU H100 node, with the pool's.
func l2Labels(fleet string) map[string]string {
	return map[string]string{"fleet": fleet, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.replicas": "1", "gpunode.dev/accelerator-class": h100Class}
}

// setNodeStatus plays the kubelet: Node name is Ready, reports its kubelet and advertises
// gpus nvidia.com/gpu (none at all when gpus is 0: no device plugin registered).
func setNodeStatus(t *testing.T, c client.Client, name string, gpus int64) {
	t.Helper()
	err := retryOnConflict(t.Context(), func() error {
		node := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		want := kubeNode(name, gpus)
		node.Status.Conditions, node.Status.NodeInfo = want.Status.Conditions, want.Status.NodeInfo
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96")}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("94")}
		if gpus > 0 {
			withGPUResources(node, "nvidia.com/gpu", gpus, gpus)
		}
		return c.Status().Update(t.Context(), node)
	})
	if err != nil {
		t.Fatalf("publishing the status of Node %s as the kubelet: %v", name, err)
	}
}

// waitEventReason waits for an Event on GPUNode name with reason and returns its note.
func waitEventReason(t *testing.T, c client.Client, name, reason string) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list); err != nil {
			t.Fatalf("listing events: %v", err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "GPUNode" && e.Regarding.Name == name && e.Reason == reason {
				return e.Note
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event %s on GPUNode %s after %s", reason, name, waitTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestANodeWithoutAllocatableGPUsStaysHeldUntilTheyAppearWhenThePolicyGatesOnKubernetes(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.KubernetesRecheck = 250 * time.Millisecond })
	p := policy("l2-fleet", 10, map[string]string{"fleet": "l2"}, 8)
	p.Spec.Acceptance.Layers = []v1alpha1.Layer{"host", "hardware", "kubernetes"}
	createPolicy(t, c, p)
	join(t, c, "node-l2", 8, l2Labels("l2"))
	setNodeStatus(t, c, "node-l2", 0)
	waitGPUNode(t, c, "node-l2", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })

	answer(t, c, "node-l2", 1, v1alpha1.AcceptancePassed, 8)
	gn := waitGPUNode(t, c, "node-l2", "Accepted=False", func(gn *v1alpha1.GPUNode) bool {
		return condition(gn, v1alpha1.ConditionAccepted).Status == metav1.ConditionFalse
	})
	const want = "kubernetes.allocatable: nvidia.com/gpu is not allocatable, 8 expected: no device plugin has registered the GPUs (record node-l2-1)"
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Reason != v1alpha1.ReasonKubernetesCheckFailed || cond.Message != want {
		t.Errorf("Accepted condition = %s: %q, want %s: %q", cond.Reason, cond.Message, v1alpha1.ReasonKubernetesCheckFailed, want)
	}
	if len(gn.Status.Holds) != 1 || gn.Status.Holds[0].Owner != v1alpha1.HoldOwnerAcceptance || !strings.HasPrefix(gn.Status.Holds[0].Reason, "kubernetes.allocatable") {
		t.Errorf("status holds = %+v, want the acceptance hold with reason kubernetes.allocatable", gn.Status.Holds)
	}
	if got := taints(t, c, "node-l2"); !slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, v1alpha1.TaintUnschedulable+"=kubernetes.allocatable")
	}) {
		t.Errorf("taints = %v, want unschedulable with the reason kubernetes.allocatable", got)
	}
	l2 := condition(gn, v1alpha1.ConditionKubernetesInventory)
	if l2.Status != metav1.ConditionFalse || l2.Reason != v1alpha1.ReasonKubernetesFailed || !strings.HasPrefix(l2.Message, "record node-l2-1: 4 pass, 0 warn, 1 fail, 2 skip (gating") {
		t.Errorf("KubernetesInventory condition = %s/%s %q, want False/Failed for record node-l2-1 with 1 failure (kubernetes.operands skips: no operand DaemonSet)", l2.Status, l2.Reason, l2.Message)
	}
	if note := waitEventReason(t, c, "node-l2", v1alpha1.ConditionKubernetesInventory+v1alpha1.ReasonKubernetesFailed); !strings.Contains(note, "kubernetes.allocatable fail") {
		t.Errorf("the L2 event's note %q does not name the failed check", note)
	}
	if gn.Status.Phase != v1alpha1.PhaseAccepting {
		t.Errorf("phase = %s, want Accepting", gn.Status.Phase)
	}

	setNodeStatus(t, c, "node-l2", 8) // the device plugin registers the GPUs
	start := time.Now()
	gn = waitGPUNode(t, c, "node-l2", "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })
	t.Logf("released %s after the GPUs became allocatable (recheck every 250ms)", time.Since(start).Round(time.Millisecond))
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonPassed {
		t.Errorf("Accepted condition = %+v, want True/Passed", cond)
	}
	if l2 := condition(gn, v1alpha1.ConditionKubernetesInventory); l2.Status != metav1.ConditionTrue || l2.Reason != v1alpha1.ReasonKubernetesPassed {
		t.Errorf("KubernetesInventory condition = %s/%s %q, want True/Passed", l2.Status, l2.Reason, l2.Message)
	}
	if got := taints(t, c, "node-l2"); len(got) != 0 || len(gn.Status.Holds) != 0 {
		t.Errorf("an accepted node still carries taints %v and holds %v", got, gn.Status.Holds)
	}

	setNodeStatus(t, c, "node-l2", 0) // the device plugin restarts: no reason to take the node out again
	touch := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-l2"}}
	if err := c.Patch(t.Context(), touch, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/touch":"1"}}}`))); err != nil {
		t.Fatalf("touching GPUNode node-l2 to cause a pass: %v", err)
	}
	time.Sleep(time.Second) // the pass takes milliseconds; four rechecks' worth
	gn = waitGPUNode(t, c, "node-l2", "still InService", func(gn *v1alpha1.GPUNode) bool { return true })
	if gn.Status.Phase != v1alpha1.PhaseInService || len(taints(t, c, "node-l2")) != 0 {
		t.Errorf("an accepted node was taken out of service by L2 drift: phase %s, taints %v", gn.Status.Phase, taints(t, c, "node-l2"))
	}
}

func TestLayerKubernetesIsReportedButDoesNotHoldWhenThePolicyLeavesItOut(t *testing.T) {
	c := startController(t)
	createPolicy(t, c, policy("l2-advisory", 10, map[string]string{"fleet": "l2-advisory"}, 8))
	join(t, c, "node-l2-advisory", 8, l2Labels("l2-advisory"))
	setNodeStatus(t, c, "node-l2-advisory", 0)
	waitGPUNode(t, c, "node-l2-advisory", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })

	answer(t, c, "node-l2-advisory", 1, v1alpha1.AcceptancePassed, 8)
	gn := waitGPUNode(t, c, "node-l2-advisory", "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })
	l2 := condition(gn, v1alpha1.ConditionKubernetesInventory)
	if l2.Status != metav1.ConditionFalse || !strings.Contains(l2.Message, "(advisory: the policy's layers do not include kubernetes)") ||
		!strings.Contains(l2.Message, "kubernetes.allocatable fail") {
		t.Errorf("KubernetesInventory condition = %s %q, want False, advisory, naming kubernetes.allocatable", l2.Status, l2.Message)
	}
	waitEventReason(t, c, "node-l2-advisory", v1alpha1.ConditionKubernetesInventory+v1alpha1.ReasonKubernetesFailed)
}
