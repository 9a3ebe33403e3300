package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// settle bounds every wait of the tier: CI machines are busy (load 15-30 on 2 cores), and a
// test asserts the state it waits for, never how fast it came.
const settle = 5 * time.Minute

// TestTheChartOnARealCluster is the life of one GPU node under the chart, in order: each
// step builds on the state the one before left, as a user's session would.
func TestTheChartOnARealCluster(t *testing.T) {
	need(t)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"helm install as docs/install.md says runs the agent and the controller with the chart's defaults", installAsDocumented},
		{"a new GPU node is held, then accepted and released", heldThenReleased},
		{"the device plugin registers and the kubelet allocates the GPUs times replicas", devicePluginRegistered},
		{"a pod asking for one GPU runs with its device injected by the envvar strategy", gpuPodEnvvar},
		{"the pod shows in the GPUNode status and in the agent's metrics", podAttribution},
		{"kubectl get and describe take one GPUNode by name", getAndDescribeByName},
		{"a kubelet restart makes the device plugin register again", kubeletRestart},
		{"a deleted agent pod comes back and the node stays in service", agentPodDeleted},
		{"a node whose agent is gone is held agent-lost and released when it is back", agentLost},
		{"a hold stripped with kubectl from a node that failed acceptance comes back", strippedHoldComesBack},
		{"the agent's pod-bound token cannot release its node", agentTokenCannotRelease},
		{"helm upgrade to cdi-cri injects the device through CDI", upgradeToCDI},
		{"a GPU reset by the ladder clears the unhealthy series on the agent's metrics without a restart", gpuResetClearsTheUnhealthySeries},
		{"DRA: the control plane allocates a device of a hand-made slice and evicts its pod under a NoExecute DeviceTaintRule", draControlPlane},
		{"DRA: helm upgrade to DRA publishes the node's ResourceSlice with the simulated GPUs and stops the device plugin", upgradeToDRA},
		{"DRA: a pod with a ResourceClaimTemplate for one GPU runs with its device injected through the claim's CDI spec", draClaimPod},
		{"DRA: with the extended-resource class an unchanged nvidia.com/gpu pod is served through DRA", draExtendedResource},
		{"DRA: a GPU that needs a reset is tainted NoSchedule and a claim for it waits until the reset lifts the taint", draNoSchedule},
		{"DRA: a pod's GPU that turns unhealthy shows so, with the reason, in the pod's allocatedResourcesStatus", draPodHealth},
		{"DRA: a lost GPU is tainted NoExecute under the policy's spec.dra.unhealthyEffect and its pod evicted, and the recovery lifts the taint", draNoExecute},
		{"DRA: an agent deleted while the kubelet prepares claims leaks none and gives no device to two claims", draAgentRestart},
		{"stack: a pool of the stand-in driver and toolkit runs both, holds the node (stack) until both are ready, then it is in service", stackPoolContainer},
		{"stack: a deleted driver pod comes back on the same version and the node returns to service", stackDriverPodDeleted},
		{"stack: the GPU Operator's paused label releases the agent's GPUs and its removal resumes them", stackPausedByTheGPUOperator},
		{"stack: a node two pools select is held pool-conflict, naming both", stackPoolConflict},
		{"stack: a Preinstalled pool takes the node with the host's driver and releases it", stackPoolPreinstalled},
		{"stack: without pools and the driver file the node is back as before", stackCleanUp},
		{"a fault holds the only node and a new controller pod still schedules on it", faultHoldsTheOnlyNode},
		{"the agent's host facts are the node's, not its container's", hostFactsFromTheNode},
		{"helm uninstall removes the release and leaves the CRDs and the node's objects", uninstallAsDocumented},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed: the steps after it build on it", s.name)
		}
	}
}

func installAsDocumented(t *testing.T) {
	runDocs(t, "install")
	for _, obj := range []string{"daemonset/gpunode-agent", "deployment/gpunode-controller"} {
		kubectl(t, "-n", namespace, "rollout", "status", obj, "--timeout", settle.String())
	}
}

func heldThenReleased(t *testing.T) {
	w := watchTaints(t, nodeName)
	runDocs(t, "label-node")
	waitFor(t, "the agent's pod Running and Ready on the node", settle, agentReady)
	waitFor(t, "the node held by the agent, then released by the controller", settle, func() (bool, string) {
		return w.heldThenFree(v1alpha1.TaintNotAccepted)
	})
	gn := gpuNode(t)
	if gn.Status.Phase != v1alpha1.PhaseInService || len(gn.Status.Holds) != 0 {
		t.Fatalf("GPUNode %s after release: phase %q, holds %+v; want InService and no hold", nodeName, gn.Status.Phase, gn.Status.Holds)
	}
	if gn.Status.LastAcceptance == nil || gn.Status.LastAcceptance.Result != v1alpha1.AcceptancePassed {
		t.Fatalf("GPUNode %s: last acceptance %+v, want a passed record", nodeName, gn.Status.LastAcceptance)
	}
	// The controller's Kubernetes checks (L2) found gpunode's own device plugin: none skipped.
	// (They are judged once per record: kubernetes.allocatable may fail when the record came
	// before the plugin registered; advisory without kubernetes in the policy's layers.)
	waitFor(t, "the Kubernetes inventory judged with no check skipped", settle, func() (bool, string) {
		for _, c := range gpuNode(t).Status.Conditions {
			if c.Type == "KubernetesInventory" {
				return strings.Contains(c.Message, " 0 skip"), string(c.Status) + ": " + c.Message
			}
		}
		return false, "no KubernetesInventory condition"
	})
	// How long after its containers started the agent's pod was Ready (the probes' periods).
	p := agentPod(t)
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && p.Status.StartTime != nil {
			t.Logf("agent pod Ready %s after the pod started", c.LastTransitionTime.Sub(p.Status.StartTime.Time))
		}
	}
}

func devicePluginRegistered(t *testing.T) {
	waitFor(t, "nvidia.com/gpu allocatable 8 (8 simulated GPUs, 1 replica)", settle, func() (bool, string) {
		n, err := nodeGPUs(t.Context())
		if err != nil {
			return false, err.Error()
		}
		return n == "8", "allocatable nvidia.com/gpu " + n
	})
}

// gpuPod is a test pod that asks for one GPU and prints its environment and /dev. It stays
// until the release is uninstalled (later steps look at it; the last one deletes it).
func gpuPod(t *testing.T, name string) corev1.Pod {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"default"},
"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":0,"containers":[{"name":"cuda","image":%q,
"command":["sh","-c","env; ls /dev; sleep 3600"],"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}`, name, testImage)
	if _, err := inClusterStdin(t.Context(), manifest, "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	waitFor(t, "pod "+name+" Running", settle, func() (bool, string) {
		if err := getJSON(t.Context(), &pod, "pod", "-n", "default", name); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodRunning, "phase " + string(pod.Status.Phase) + " " + podWhy(pod)
	})
	return pod
}

func gpuPodEnvvar(t *testing.T) {
	gpuPod(t, "gpu-envvar")
	out := kubectl(t, "exec", "-n", "default", "gpu-envvar", "--", "env")
	uuid := envValue(out, "NVIDIA_VISIBLE_DEVICES")
	if !slices.Contains(gpuUUIDs(t), uuid) {
		t.Fatalf("NVIDIA_VISIBLE_DEVICES=%q in the pod: not one of the node's GPUs %v", uuid, gpuUUIDs(t))
	}
}

func podAttribution(t *testing.T) {
	waitFor(t, "default/gpu-envvar on a GPU in the GPUNode status", settle, func() (bool, string) {
		gn := gpuNode(t)
		for _, g := range gn.Status.GPUHealth {
			if slices.Contains(g.Pods, "default/gpu-envvar") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("gpuHealth pods: %v", podsOf(gn))
	})
	pod := agentPod(t)
	waitFor(t, "the agent's DCGM series labelled with the pod", settle, func() (bool, string) {
		out, err := agentMetrics(t, pod.Name)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range trimLines(out) {
			if strings.HasPrefix(l, "DCGM_FI_DEV_GPU_TEMP{") && strings.Contains(l, `pod="gpu-envvar"`) && strings.Contains(l, `namespace="default"`) {
				return true, ""
			}
		}
		return false, "no DCGM_FI_DEV_GPU_TEMP series with pod=\"gpu-envvar\""
	})
	// The acceptance series come from the run the agent made (its records in its state
	// folder), not from a folder nothing writes.
	out, err := agentMetrics(t, pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`gpunode_collector_success{collector="acceptance"} 1`, `gpunode_acceptance_last_result{result="passed"} 1`} {
		if !slices.Contains(trimLines(out), want) {
			t.Errorf("the agent's metrics lack %s", want)
		}
	}
}

func getAndDescribeByName(t *testing.T) {
	out := kubectl(t, "get", "gpunode", nodeName)
	if !strings.Contains(out, nodeName) || !strings.Contains(out, "InService") {
		t.Fatalf("kubectl get gpunode %s:\n%s", nodeName, out)
	}
	out = kubectl(t, "describe", "gpunode", nodeName)
	if !strings.Contains(out, "Name:         "+nodeName) {
		t.Fatalf("kubectl describe gpunode %s:\n%s", nodeName, out)
	}
}

func kubeletRestart(t *testing.T) {
	before := registrations(t)
	if out, err := script("hack/cluster-kubelet.sh", []string{"CLUSTER_STATE=" + env.state}, "restart"); err != nil {
		t.Fatalf("restarting the kubelet: %v\n%s", err, out)
	}
	waitFor(t, "the device plugin registered again after the kubelet restart", settle, func() (bool, string) {
		n := registrations(t)
		return n > before, fmt.Sprintf("%d registrations in the agent's log (%d before the restart)", n, before)
	})
	devicePluginRegistered(t)
	gpuPod(t, "gpu-after-kubelet-restart")
}

func agentPodDeleted(t *testing.T) {
	old := agentPod(t)
	kubectl(t, "-n", namespace, "delete", "pod", old.Name, "--wait=true", "--timeout", settle.String())
	waitFor(t, "a new agent pod Running and Ready", settle, func() (bool, string) {
		if ok, why := agentReady(); !ok {
			return false, why
		}
		return agentPod(t).UID != old.UID, "the old pod still answers"
	})
	beat := gpuNode(t).Status.Agent
	waitFor(t, "the new agent's heartbeat", settle, func() (bool, string) {
		now := gpuNode(t).Status.Agent
		return now != nil && (beat == nil || now.HeartbeatTime.After(beat.HeartbeatTime.Time)), "no newer heartbeat yet"
	})
	gn := gpuNode(t)
	if gn.Status.Phase != v1alpha1.PhaseInService || len(gn.Status.Holds) != 0 {
		t.Fatalf("after the agent's restart: phase %q, holds %+v; want InService and no hold", gn.Status.Phase, gn.Status.Holds)
	}
	devicePluginRegistered(t)
}

func upgradeToCDI(t *testing.T) {
	runDocs(t, "upgrade-cdi")
	kubectl(t, "-n", namespace, "rollout", "status", "daemonset/gpunode-agent", "--timeout", settle.String())
	waitFor(t, "the agent's pod Running and Ready after the upgrade", settle, agentReady)
	devicePluginRegistered(t)
	gpuPod(t, "gpu-cdi")
	out := kubectl(t, "exec", "-n", "default", "gpu-cdi", "--", "sh", "-c", "env; ls /dev")
	// The CDI spec of simulated GPUs: /dev/nvidia<i> (the host's /dev/null behind it) and
	// GPUNODE_SIM_GPU_<i>=<uuid> for the one GPU allocated.
	var given []string
	for _, l := range trimLines(out) {
		if k, uuid, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "GPUNODE_SIM_GPU_") {
			given = append(given, uuid)
			dev := "nvidia" + strings.TrimPrefix(k, "GPUNODE_SIM_GPU_")
			if !slices.Contains(trimLines(out), dev) {
				t.Errorf("CDI gave GPU %s (%s) but no /dev/%s:\n%s", uuid, k, dev, out)
			}
		}
	}
	if len(given) != 1 || !slices.Contains(gpuUUIDs(t), given[0]) {
		t.Fatalf("the pod got GPUs %v through CDI, want one of the node's %v:\n%s", given, gpuUUIDs(t), out)
	}
	// As NVIDIA's plugin does under CDI: "void" keeps the NVIDIA runtime hook from adding GPUs.
	if v := envValue(out, "NVIDIA_VISIBLE_DEVICES"); v != "" && v != "void" {
		t.Errorf("NVIDIA_VISIBLE_DEVICES=%q under cdi-cri: the device should come from CDI alone", v)
	}
}

func uninstallAsDocumented(t *testing.T) {
	kubectl(t, "delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout", settle.String())
	runDocs(t, "uninstall")
	waitFor(t, "the release's pods gone", settle, func() (bool, string) {
		var pods corev1.PodList
		if err := getJSON(t.Context(), &pods, "pods", "-n", namespace); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
	// What stays, and why (docs/install.md): the CRDs (helm never deletes crds/), so the
	// GPUNodes and AcceptanceRecords, the record of what the nodes went through.
	kubectl(t, "get", "crd", "gpunodes.gpunode.dev", "gpunodepolicies.gpunode.dev", "acceptancerecords.gpunode.dev")
	gpuNode(t)
	var ds appsv1.DaemonSetList
	if err := getJSON(t.Context(), &ds, "daemonsets", "-n", namespace); err != nil || len(ds.Items) != 0 {
		t.Fatalf("after helm uninstall: %d DaemonSets left (%v)", len(ds.Items), err)
	}
}

func gpuNode(t *testing.T) v1alpha1.GPUNode {
	t.Helper()
	var gn v1alpha1.GPUNode
	if err := getJSON(t.Context(), &gn, "gpunodes.gpunode.dev", nodeName); err != nil {
		t.Fatal(err)
	}
	return gn
}

func gpuUUIDs(t *testing.T) []string {
	var ids []string
	for _, g := range gpuNode(t).Status.Inventory.GPUs {
		ids = append(ids, g.UUID)
	}
	return ids
}

func podsOf(gn v1alpha1.GPUNode) []string {
	var out []string
	for _, g := range gn.Status.GPUHealth {
		out = append(out, g.Pods...)
	}
	return out
}

func agentPod(t *testing.T) corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := getJSON(t.Context(), &pods, "pods", "-n", namespace, "-l", "app.kubernetes.io/component=agent"); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			return p
		}
	}
	t.Fatalf("no agent pod in %s", namespace)
	return corev1.Pod{}
}

func agentReady() (bool, string) {
	var pods corev1.PodList
	if err := getJSON(context.Background(), &pods, "pods", "-n", namespace, "-l", "app.kubernetes.io/component=agent"); err != nil {
		return false, err.Error()
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(p) {
			return true, ""
		}
	}
	b, _ := json.Marshal(pods.Items)
	return false, fmt.Sprintf("no Ready agent pod (%d pods): %.400s", len(pods.Items), b)
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podWhy(p corev1.Pod) string {
	var why []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			why = append(why, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			why = append(why, cs.State.Waiting.Reason+": "+cs.State.Waiting.Message)
		}
	}
	return strings.Join(why, "; ")
}

func envValue(env, key string) string {
	for _, l := range trimLines(env) {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

// registrations counts the device plugin's registrations with the kubelet in the agent's log.
func registrations(t *testing.T) int {
	out, err := inCluster(t.Context(), "kubectl", "-n", namespace, "logs", agentPod(t).Name, "-c", "agent")
	if err != nil {
		return 0
	}
	return strings.Count(out, "device plugin: registered")
}
