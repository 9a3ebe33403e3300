package cluster_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// agentLost takes the agent off the node (a node selector no node has) under a policy whose
// agentLostAfter is short, and brings it back.
func agentLost(t *testing.T) {
	runDocs(t, "first-policy")
	// Shorter than the 2m default, longer than the agent's heartbeat period (at least 30 s):
	// a limit under that period would hold a node whose agent is alive.
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", `{"spec":{"agentLostAfter":"75s"}}`)
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
	// Back to the documented 2m, longer than a rolling update of the agent takes here.
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", `{"spec":{"agentLostAfter":"2m"}}`)
}

// faultHoldsTheOnlyNode injects a fault that needs a person (row remapping failed on GPU 0:
// the ladder ends in Maintenance) into the simulated agent, as docs/sim-scenarios.md shows,
// and deletes the controller's pods while the cluster's only node is held: the new ones must
// still schedule there (the chart tolerates gpunode's own taints), or nothing could ever
// release the node.
func faultHoldsTheOnlyNode(t *testing.T) {
	pod := agentPod(t)
	kubectl(t, "exec", "-n", namespace, pod.Name, "-c", "agent", "--",
		"gpunode", "sim", "inject", nodeName, "--socket", "/var/lib/gpunode/sim.sock", "--gpu", "0", "--fault", "row-remap-failure")
	waitFor(t, "the node in Maintenance for the fault", settle, func() (bool, string) {
		gn := gpuNode(t)
		return gn.Status.Phase == v1alpha1.PhaseMaintenance && nodeTainted(t, v1alpha1.TaintUnschedulable),
			fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
	kubectl(t, "-n", namespace, "delete", "pod", "-l", "app.kubernetes.io/component=controller", "--wait=true", "--timeout", settle.String())
	kubectl(t, "-n", namespace, "rollout", "status", "deployment/gpunode-controller", "--timeout", settle.String())
	var pods corev1.PodList
	if err := getJSON(t.Context(), &pods, "pods", "-n", namespace, "-l", "app.kubernetes.io/component=controller"); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatal("no controller pod after the deletion")
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != nodeName || p.Status.Phase != corev1.PodRunning {
			t.Errorf("controller pod %s on %q is %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase, podWhy(p))
		}
	}
	if !nodeTainted(t, v1alpha1.TaintUnschedulable) {
		t.Fatalf("the node lost its hold while GPU 0 needs service")
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

// hostFactsFromTheNode runs `gpunode accept --layers host` inside the agent's container on
// the node's own root (agent.simHost=real mounts it at /host), as a person checking the node
// would: /dev/shm is the node's (its init process's mount table, statfs under /host), not the
// container's 64 MiB.
func hostFactsFromTheNode(t *testing.T) {
	runDocs(t, "real-host")
	kubectl(t, "-n", namespace, "rollout", "status", "daemonset/gpunode-agent", "--timeout", settle.String())
	waitFor(t, "the agent's pod Running and Ready on the node's own root", settle, agentReady)
	pod := agentPod(t)
	out, err := inCluster(t.Context(), "kubectl", "exec", "-n", namespace, pod.Name, "-c", "agent", "--",
		"gpunode", "accept", "--sim", "h100x8", "--host-root", "/host", "--layers", "host", "-o", "json")
	if out == "" {
		t.Fatalf("gpunode accept in the agent's container: %v", err)
	}
	var rec struct {
		Checks []struct{ ID, Status, Message string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("the record of gpunode accept -o json: %v\n%.500s", err, out)
	}
	var nodeShm syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &nodeShm); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("/dev/shm %d MiB", nodeShm.Blocks*uint64(nodeShm.Bsize)>>20)
	for _, c := range rec.Checks {
		if c.ID == "host.shm" {
			if !strings.HasPrefix(c.Message, want) {
				t.Fatalf("host.shm in the agent's container: %s %q; the node's is %q", c.Status, c.Message, want)
			}
			return
		}
	}
	t.Fatalf("no host.shm check in the record:\n%.1000s", out)
}
