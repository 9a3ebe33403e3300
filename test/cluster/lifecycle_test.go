package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// agentLost takes the agent off the node (a node selector no node has) under a policy whose
// agentLostAfter is short, and brings it back.
func agentLost(t *testing.T) {
	runDocs(t, "first-policy")
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", `{"spec":{"agentLostAfter":"20s"}}`)
	kubectl(t, "-n", namespace, "patch", "daemonset", "gpunode-agent", "--type", "merge",
		"-p", `{"spec":{"template":{"spec":{"nodeSelector":{"gpunode.dev/test-no-agent":"true"}}}}}`)
	waitFor(t, "the node held agent-lost", settle, func() (bool, string) {
		gn := gpuNode(t)
		held := slices.ContainsFunc(gn.Status.Holds, func(h v1alpha1.Hold) bool { return h.Reason == v1alpha1.HoldReasonAgentLost })
		return held && gn.Status.Phase == v1alpha1.PhaseAgentLost, fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
	if out := kubectl(t, "get", "gpunodes"); !strings.Contains(out, string(v1alpha1.PhaseAgentLost)) {
		t.Fatalf("kubectl get gpunodes does not show the lost agent:\n%s", out)
	}
	if !nodeTainted(t, v1alpha1.TaintUnschedulable) {
		t.Fatalf("node %s is schedulable while its agent is lost", nodeName)
	}
	kubectl(t, "-n", namespace, "patch", "daemonset", "gpunode-agent", "--type", "json",
		"-p", `[{"op":"remove","path":"/spec/template/spec/nodeSelector/gpunode.dev~1test-no-agent"}]`)
	waitFor(t, "the agent back and the node released", settle, func() (bool, string) {
		gn := gpuNode(t)
		return gn.Status.Phase == v1alpha1.PhaseInService && len(gn.Status.Holds) == 0 && !nodeTainted(t, v1alpha1.TaintUnschedulable),
			fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
}

// faultHoldsTheOnlyNode injects an XID 79 (GPU fallen off the bus) into the simulated agent,
// as docs/install.md shows, and deletes the controller's pods while the cluster's only node
// is held: the new ones must still schedule there (the chart tolerates gpunode's taints).
func faultHoldsTheOnlyNode(t *testing.T) {
	pod := agentPod(t)
	kubectl(t, "exec", "-n", namespace, pod.Name, "-c", "agent", "--",
		"gpunode", "sim", "inject", nodeName, "--socket", "/var/lib/gpunode/sim.sock", "--gpu", "0", "--xid", "79")
	waitFor(t, "the node held for the fault", settle, func() (bool, string) {
		gn := gpuNode(t)
		return nodeTainted(t, v1alpha1.TaintUnschedulable), fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
	kubectl(t, "-n", namespace, "delete", "pod", "-l", "app.kubernetes.io/component=controller", "--wait=true", "--timeout", settle.String())
	kubectl(t, "-n", namespace, "rollout", "status", "deployment/gpunode-controller", "--timeout", settle.String())
	var pods corev1.PodList
	if err := getJSON(t.Context(), &pods, "pods", "-n", namespace, "-l", "app.kubernetes.io/component=controller"); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != nodeName || p.Status.Phase != corev1.PodRunning {
			t.Errorf("controller pod %s on %q is %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase, podWhy(p))
		}
	}
	if !nodeTainted(t, v1alpha1.TaintUnschedulable) {
		t.Fatalf("the node was released while GPU 0 is off the bus")
	}
}

func nodeTainted(t *testing.T, key string) bool {
	t.Helper()
	var n corev1.Node
	if err := getJSON(t.Context(), &n, "node", nodeName); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == key })
}
