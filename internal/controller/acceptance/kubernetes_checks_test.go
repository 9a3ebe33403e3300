package acceptance

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// kubeNode returns the Node of a healthy GPU node of gpus H100s as Kubernetes sees it once
// the kubelet, the agent and a device plugin have done their part.
func kubeNode(name string, gpus int64) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.replicas": "1",
			"gpunode.dev/accelerator-class": h100Class,
		}},
	}
	withGPUResources(n, "nvidia.com/gpu", gpus, gpus)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(at)}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.35.0", ContainerRuntimeVersion: "containerd://2.1.4",
		KernelVersion: "6.8.0-87-generic", OSImage: "Ubuntu 24.04.3 LTS"}
	return n
}

// withGPUResources sets capacity and allocatable of resource name on n.
func withGPUResources(n *corev1.Node, name corev1.ResourceName, capacity, allocatable int64) *corev1.Node {
	if n.Status.Capacity == nil {
		n.Status.Capacity, n.Status.Allocatable = corev1.ResourceList{}, corev1.ResourceList{}
	}
	n.Status.Capacity[name] = *resource.NewQuantity(capacity, resource.DecimalSI)
	n.Status.Allocatable[name] = *resource.NewQuantity(allocatable, resource.DecimalSI)
	return n
}

// devicePluginPod returns a pod of NVIDIA's Helm chart bound to node, in phase with ready.
func devicePluginPod(node, name string, phase corev1.PodPhase, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "nvidia", Name: name, Labels: map[string]string{"app.kubernetes.io/name": "nvidia-device-plugin"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "plugin", RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}},
	}
}

// l2Case is one L2 check's expectation on facts changed from a healthy 8-GPU node.
type l2Case struct {
	name       string
	change     func(f *KubernetesFacts)
	wantStatus v1alpha1.CheckStatus
	wantMsg    string
}

// runL2Cases runs KubernetesChecks on each case's facts and checks check id's result.
func runL2Cases(t *testing.T, id string, cases []l2Case) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			f := KubernetesFacts{Node: kubeNode("node-a", 8), GPUNode: gpuNode("node-a", 8)}
			f.GPUNode.Status.Versions.Kubelet = "1.35.0"
			tt.change(&f)
			var got *v1alpha1.Check
			for _, c := range KubernetesChecks(f) {
				if c.ID == id {
					got = &c
				}
			}
			if got == nil {
				t.Fatalf("KubernetesChecks gave no %s check", id)
			}
			if got.Status != tt.wantStatus || !strings.Contains(got.Message, tt.wantMsg) || got.Layer != LayerKubernetes {
				t.Errorf("%s = %s %q (layer %s), want %s with a message containing %q; evidence %q",
					id, got.Status, got.Message, got.Layer, tt.wantStatus, tt.wantMsg, got.Evidence)
			}
			if (got.Status == statusFail || got.Status == statusWarn) && got.Fix == "" {
				t.Errorf("%s %s without a fix", id, got.Status)
			}
		})
	}
}

func keep(*KubernetesFacts) {}

func TestTheNodeReadyCheck(t *testing.T) {
	runL2Cases(t, CheckNodeReady, []l2Case{
		{"a Ready node passes", keep, statusPass, "is Ready"},
		{"a NotReady node fails with the kubelet's reason", func(f *KubernetesFacts) {
			f.Node.Status.Conditions[0].Status, f.Node.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
		}, statusFail, "not Ready (Ready=False, KubeletNotReady)"},
		{"a node whose kubelet stopped reporting fails", func(f *KubernetesFacts) {
			f.Node.Status.Conditions[0].Status, f.Node.Status.Conditions[0].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		}, statusFail, "Ready=Unknown"},
		{"a node without a Ready condition fails", func(f *KubernetesFacts) { f.Node.Status.Conditions = nil }, statusFail, "no Ready condition"},
	})
}

func TestTheAllocatableCheck(t *testing.T) {
	runL2Cases(t, CheckAllocatable, []l2Case{
		{"every GPU the agent found allocatable passes", keep, statusPass, "8 allocatable = the agent's 8 GPUs × 1 per GPU (nvidia.com/gpu.replicas)"},
		{"no GPU resource at all fails: no device plugin registered", func(f *KubernetesFacts) {
			f.Node.Status.Capacity, f.Node.Status.Allocatable = nil, nil
		}, statusFail, "nvidia.com/gpu is not allocatable, 8 expected: no device plugin has registered the GPUs"},
		{"GPUs registered but unhealthy fail, counted", func(f *KubernetesFacts) { withGPUResources(f.Node, "nvidia.com/gpu", 8, 6) },
			statusFail, "6 of 8 allocatable: the device plugin reports 2 unhealthy"},
		{"fewer GPUs registered than the agent found fail", func(f *KubernetesFacts) { withGPUResources(f.Node, "nvidia.com/gpu", 7, 7) },
			statusFail, "7 allocatable, 8 expected"},
		{"more GPUs than the agent found fail", func(f *KubernetesFacts) { withGPUResources(f.Node, "nvidia.com/gpu", 16, 16) },
			statusFail, "16 allocatable, 8 expected"},
		{"time-sliced GPUs count every replica", func(f *KubernetesFacts) {
			f.Node.Labels["nvidia.com/gpu.replicas"] = "4"
			withGPUResources(f.Node, "nvidia.com/gpu", 32, 32)
		}, statusPass, "32 allocatable = the agent's 8 GPUs × 4 per GPU"},
		{"time-sliced GPUs advertised without their replicas fail", func(f *KubernetesFacts) { f.Node.Labels["nvidia.com/gpu.replicas"] = "4" },
			statusFail, "8 allocatable, 32 expected = the agent's 8 GPUs × 4 per GPU"},
		{"renamed time-sliced replicas count as nvidia.com/gpu.shared", func(f *KubernetesFacts) {
			f.Node.Labels["nvidia.com/gpu.replicas"] = "2"
			f.Node.Status.Capacity, f.Node.Status.Allocatable = nil, nil
			withGPUResources(f.Node, "nvidia.com/gpu.shared", 16, 16)
		}, statusPass, "16 allocatable"},
		{"a node without a replicas label counts one per GPU", func(f *KubernetesFacts) { delete(f.Node.Labels, "nvidia.com/gpu.replicas") },
			statusPass, "8 allocatable"},
		{"a replicas label that is not a number fails", func(f *KubernetesFacts) { f.Node.Labels["nvidia.com/gpu.replicas"] = "many" },
			statusFail, `nvidia.com/gpu.replicas="many" is not a replica count`},
		{"MIG GPUs pass with any MIG device allocatable", func(f *KubernetesFacts) {
			f.Node.Labels["nvidia.com/gpu.replicas"] = "0"
			withGPUResources(f.Node, "nvidia.com/gpu", 56, 56)
		}, statusPass, "MIG: nvidia.com/gpu=56 allocatable"},
		{"mixed-strategy MIG devices pass under their own names", func(f *KubernetesFacts) {
			f.Node.Labels["nvidia.com/mig.strategy"] = "mixed"
			f.Node.Status.Capacity, f.Node.Status.Allocatable = nil, nil
			withGPUResources(f.Node, "nvidia.com/mig-1g.10gb", 28, 28)
		}, statusPass, "nvidia.com/mig-1g.10gb=28"},
		{"MIG GPUs with nothing allocatable fail", func(f *KubernetesFacts) {
			f.Node.Labels["nvidia.com/gpu.replicas"] = "0"
			f.Node.Status.Capacity, f.Node.Status.Allocatable = nil, nil
		}, statusFail, "no GPU resource is allocatable (MIG"},
		{"a node whose agent found no GPU is skipped, saying why", func(f *KubernetesFacts) {
			f.GPUNode.Status.GPUCount, f.GPUNode.Status.Inventory.GPUs = 0, nil
		}, statusSkip, "the agent reported no GPU"},
		{"the inventory counts when the GPU count is not published", func(f *KubernetesFacts) { f.GPUNode.Status.GPUCount = 0 },
			statusPass, "the agent's 8 GPUs"},
	})
}

func TestTheLabelsCheck(t *testing.T) {
	runL2Cases(t, CheckLabels, []l2Case{
		{"a node with the product and its class labels passes", keep, statusPass, "gpunode.dev/accelerator-class=" + h100Class},
		{"a node without the product label fails", func(f *KubernetesFacts) { delete(f.Node.Labels, "nvidia.com/gpu.product") },
			statusFail, "nvidia.com/gpu.product is missing"},
		{"a node without its class label fails", func(f *KubernetesFacts) { delete(f.Node.Labels, "gpunode.dev/accelerator-class") },
			statusFail, "gpunode.dev/accelerator-class is missing; the agent reports class \"h100-sxm-80gb\""},
		{"a class label other than the agent's fails", func(f *KubernetesFacts) { f.Node.Labels["gpunode.dev/accelerator-class"] = "a100-80g" },
			statusFail, `is "a100-80g" but the agent reports class "h100-sxm-80gb"`},
		{"a GPU no mapping knows warns", func(f *KubernetesFacts) {
			delete(f.Node.Labels, "gpunode.dev/accelerator-class")
			f.GPUNode.Status.AcceleratorClass = ""
		}, statusWarn, "no accelerator class"},
	})
}

func TestTheKubeletVersionCheck(t *testing.T) {
	runL2Cases(t, CheckKubelet, []l2Case{
		{"a reported kubelet version passes", keep, statusPass, "kubelet v1.35.0"},
		{"an unknown kubelet version fails", func(f *KubernetesFacts) { f.Node.Status.NodeInfo.KubeletVersion = "" },
			statusFail, "kubelet version of Node node-a is unknown"},
		{"a kubelet version other than the agent's warns", func(f *KubernetesFacts) { f.GPUNode.Status.Versions.Kubelet = "1.34.2" },
			statusWarn, "the kubelet reports v1.35.0 but the agent found 1.34.2"},
		{"an agent that did not read the kubelet version does not matter", func(f *KubernetesFacts) { f.GPUNode.Status.Versions.Kubelet = "" },
			statusPass, "kubelet v1.35.0"},
	})
}

func TestTheTaintsCheck(t *testing.T) {
	taint := func(key, value string, effect corev1.TaintEffect) func(*KubernetesFacts) {
		return func(f *KubernetesFacts) {
			f.Node.Spec.Taints = append(f.Node.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
		}
	}
	runL2Cases(t, CheckTaints, []l2Case{
		{"an untainted node passes", keep, statusPass, "no foreign"},
		{"gpunode's own hold taints do not count", taint(v1alpha1.TaintNotAccepted, "", corev1.TaintEffectNoSchedule), statusPass, "no foreign"},
		{"the conventional nvidia.com/gpu taint does not count", taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule), statusPass, "no foreign"},
		{"the node lifecycle's not-ready taint does not count", taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoExecute), statusPass, "no foreign"},
		{"a PreferNoSchedule taint does not count", taint("example.com/spot", "", corev1.TaintEffectPreferNoSchedule), statusPass, "no foreign"},
		{"a foreign NoSchedule taint warns, named", taint("example.com/maintenance", "bios", corev1.TaintEffectNoSchedule),
			statusWarn, "example.com/maintenance=bios:NoSchedule"},
		{"a foreign NoExecute taint warns", taint("node.cloudprovider.kubernetes.io/uninitialized", "true", corev1.TaintEffectNoExecute),
			statusWarn, "uninitialized=true:NoExecute"},
		{"a cordoned node warns", func(f *KubernetesFacts) { f.Node.Spec.Unschedulable = true }, statusWarn, "cordoned"},
	})
}

func TestTheDevicePluginCheck(t *testing.T) {
	pods := func(p ...corev1.Pod) func(*KubernetesFacts) { return func(f *KubernetesFacts) { f.Pods = p } }
	running := devicePluginPod("node-a", "plugin-abc", corev1.PodRunning, true)
	crashing := devicePluginPod("node-a", "plugin-abc", corev1.PodRunning, false)
	operator := running
	operator.Labels = map[string]string{"app": "nvidia-device-plugin-daemonset"}
	other := running
	other.Labels = map[string]string{"app": "dcgm-exporter"}
	elsewhere := devicePluginPod("node-b", "plugin-xyz", corev1.PodRunning, true)
	runL2Cases(t, CheckDevicePlugin, []l2Case{
		{"a running, ready device plugin passes", pods(running), statusPass, "nvidia/plugin-abc is running and ready"},
		{"the GPU Operator's device plugin is recognised", pods(operator), statusPass, "is running and ready"},
		{"a crash-looping device plugin fails with its state", pods(crashing), statusFail, "restarts=4 waiting=CrashLoopBackOff"},
		{"a pending device plugin fails", pods(devicePluginPod("node-a", "plugin-abc", corev1.PodPending, false)), statusFail, "Pending"},
		{"one ready plugin among a failing one passes", pods(crashing, running), statusPass, "running and ready"},
		{"a node without a device-plugin pod is skipped, saying why", pods(other), statusSkip, "no device-plugin pod on the node"},
		{"a device plugin bound to another node does not count", pods(elsewhere), statusSkip, "no device-plugin pod on the node"},
	})
}

func TestKubernetesChecksKeepTheRecordsEvidenceLimits(t *testing.T) {
	f := KubernetesFacts{Node: kubeNode("node-a", 8), GPUNode: gpuNode("node-a", 8)}
	for i := range 40 {
		f.Node.Spec.Taints = append(f.Node.Spec.Taints, corev1.Taint{Key: "example.com/t" + strings.Repeat("x", 600) + string(rune('a'+i%26)), Effect: corev1.TaintEffectNoSchedule})
	}
	for _, c := range KubernetesChecks(f) {
		if len(c.Evidence) > v1alpha1.MaxEvidenceLines {
			t.Errorf("%s has %d evidence lines, at most %d allowed", c.ID, len(c.Evidence), v1alpha1.MaxEvidenceLines)
		}
		for _, l := range c.Evidence {
			if len(l) > v1alpha1.MaxEvidenceLineLength {
				t.Errorf("%s has an evidence line of %d bytes", c.ID, len(l))
			}
		}
		if c.ID == CheckTaints && (c.EvidenceOmitted != 40-v1alpha1.MaxEvidenceLines || c.Status != statusWarn) {
			t.Errorf("taints: %s with %d lines omitted, want warn with %d omitted", c.Status, c.EvidenceOmitted, 40-v1alpha1.MaxEvidenceLines)
		}
	}
}
