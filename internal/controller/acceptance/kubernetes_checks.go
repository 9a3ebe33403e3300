package acceptance

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// LayerKubernetes is acceptance layer L2: what Kubernetes sees of the node.
// The agent cannot judge it; the controller does, when it judges the agent's record.
const LayerKubernetes v1alpha1.Layer = "kubernetes"

// Check IDs of layer L2, in run order.
const (
	CheckNodeReady     = "kubernetes.node-ready"
	CheckAllocatable   = "kubernetes.allocatable"
	CheckLabels        = "kubernetes.labels"
	CheckKubelet       = "kubernetes.kubelet-version"
	CheckTaints        = "kubernetes.taints"
	CheckDevicePlugin  = "kubernetes.device-plugin"
	statusPass         = v1alpha1.CheckStatus("pass")
	statusWarn         = v1alpha1.CheckStatus("warn")
	statusFail         = v1alpha1.CheckStatus("fail")
	statusSkip         = v1alpha1.CheckStatus("skip")
	conventionalGPUKey = "nvidia.com/gpu"
)

// KubernetesFacts is what layer L2 is judged on: the Node as the API server has it, the
// node's GPUNode as its agent published it, and the pods bound to the Node.
type KubernetesFacts struct {
	Node    *corev1.Node
	GPUNode *v1alpha1.GPUNode
	// Pods are the pods whose spec.nodeName is the Node's (others are ignored).
	Pods []corev1.Pod
	// Slices are the ResourceSlices published for the Node (DRA).
	Slices []resourcev1.ResourceSlice
	// DaemonSets are every namespace's DaemonSets (kubernetes.operands picks the GPU
	// operands among them); DaemonSetsErr says why they could not be read.
	DaemonSets    []appsv1.DaemonSet
	DaemonSetsErr error
}

// KubernetesChecks runs every L2 check on f, in a fixed order, and returns the results in
// the shape of an AcceptanceRecord's checks (layer "kubernetes"). It is pure.
//
// One API serves a node's GPUs (GPUAPIOf): the device-plugin checks (allocatable,
// device-plugin) are not applied on a DRA node, nor kubernetes.dra on a device-plugin node.
func KubernetesChecks(f KubernetesFacts) []v1alpha1.Check {
	type check struct {
		id, title, fix string
		run            func(KubernetesFacts) verdict
		api            string // "" for every node
	}
	checks := []check{
		{CheckNodeReady, "the Node is Ready", "see the kubelet's log on the node and `kubectl describe node`", checkNodeReady, ""},
		{CheckAllocatable, "allocatable GPUs match the agent's inventory",
			"check the device plugin on the node (its pod's log, the kubelet's device-plugins folder) and the nvidia.com/gpu.replicas label", checkAllocatable, v1alpha1.GPUAPIDevicePlugin},
		{CheckLabels, "discovery and platform labels applied", "check that the agent runs on the node and may patch its Node's labels", checkLabels, ""},
		{CheckKubelet, "kubelet version known", "the kubelet must report node info (status.nodeInfo)", checkKubelet, ""},
		{CheckTaints, "no foreign taint keeps GPU work off", "remove the taint, or make sure GPU workloads tolerate it", checkTaints, ""},
		{CheckDevicePlugin, "the device-plugin pod on the node is running", "see the device-plugin pod's events and log (NVIDIA's plugin, or gpunode's agent pod with --device-plugin); run only one of them", checkDevicePlugin, v1alpha1.GPUAPIDevicePlugin},
		{CheckOperands, "the GPU operands' DaemonSets can run on the held node",
			"add tolerations for gpunode.dev/not-accepted and gpunode.dev/unschedulable to the DaemonSet (the GPU Operator: ClusterPolicy spec.daemonsets.tolerations; docs/install.md)", checkOperands, ""},
		{CheckDRA, "the node's GPUs are published through DRA, tainted as their health says",
			"see the agent's log (--dra) and `kubectl get resourceslices --field-selector spec.nodeName=NODE -o yaml`", checkDRA, v1alpha1.GPUAPIDRA},
	}
	api := GPUAPIOf(f)
	out := make([]v1alpha1.Check, 0, len(checks))
	for _, c := range checks {
		if c.api != "" && c.api != api {
			continue
		}
		v := c.run(f)
		res := v1alpha1.Check{ID: c.id, Layer: LayerKubernetes, Title: c.title, Status: v.status, Message: v.message}
		if v.status != statusPass && v.status != statusSkip {
			res.Fix = c.fix
		}
		res.Evidence, res.EvidenceOmitted = capEvidence(v.evidence)
		out = append(out, res)
	}
	return out
}

// verdict is one check's outcome before the runner adds its identity.
type verdict struct {
	status   v1alpha1.CheckStatus
	message  string
	evidence []string
}

func judged(status v1alpha1.CheckStatus, evidence []string, format string, args ...any) verdict {
	return verdict{status: status, message: fmt.Sprintf(format, args...), evidence: evidence}
}

// capEvidence keeps the API's limits on evidence lines.
func capEvidence(lines []string) ([]string, int32) {
	var omitted int32
	if len(lines) > v1alpha1.MaxEvidenceLines {
		omitted = int32(len(lines) - v1alpha1.MaxEvidenceLines)
		lines = lines[:v1alpha1.MaxEvidenceLines]
	}
	for i, l := range lines {
		lines[i] = truncate(l, v1alpha1.MaxEvidenceLineLength)
	}
	return lines, omitted
}

// checkNodeReady: the kubelet reports the Node Ready.
func checkNodeReady(f KubernetesFacts) verdict {
	for _, c := range f.Node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		ev := []string{fmt.Sprintf("Ready=%s reason=%q message=%q since %s", c.Status, c.Reason, c.Message,
			c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"))}
		if c.Status == corev1.ConditionTrue {
			return judged(statusPass, ev, "Node %s is Ready", f.Node.Name)
		}
		return judged(statusFail, ev, "Node %s is not Ready (Ready=%s, %s)", f.Node.Name, c.Status, c.Reason)
	}
	return judged(statusFail, nil, "Node %s has no Ready condition: the kubelet has not reported its status", f.Node.Name)
}

// checkLabels: the agent's GPU Feature Discovery product label and its platform class
// label are on the Node, the class as the agent reports it.
func checkLabels(f KubernetesFacts) verdict {
	product, hasProduct := f.Node.Labels[labels.KeyGPUProduct]
	class, hasClass := f.Node.Labels[labels.KeyAcceleratorClass]
	want := f.GPUNode.Status.AcceleratorClass
	ev := []string{
		fmt.Sprintf("%s=%q (present: %t)", labels.KeyGPUProduct, product, hasProduct),
		fmt.Sprintf("%s=%q (present: %t)", labels.KeyAcceleratorClass, class, hasClass),
		fmt.Sprintf("agent's accelerator class: %q", want),
	}
	switch {
	case !hasProduct:
		return judged(statusFail, ev, "label %s is missing: workloads selecting the GPU model cannot find the node", labels.KeyGPUProduct)
	case !hasClass && want == "":
		return judged(statusWarn, ev, "no accelerator class: the agent's label mapping does not know %q", product)
	case !hasClass:
		return judged(statusFail, ev, "label %s is missing; the agent reports class %q", labels.KeyAcceleratorClass, want)
	case want != "" && class != want:
		return judged(statusFail, ev, "label %s is %q but the agent reports class %q", labels.KeyAcceleratorClass, class, want)
	}
	return judged(statusPass, ev, "%s=%s, %s=%s", labels.KeyGPUProduct, product, labels.KeyAcceleratorClass, class)
}

// checkKubelet: the kubelet reported its version; a different version in the agent's
// report warns (the node was upgraded under one of them).
func checkKubelet(f KubernetesFacts) verdict {
	info := f.Node.Status.NodeInfo
	agent := f.GPUNode.Status.Versions.Kubelet
	ev := []string{
		"kubelet " + info.KubeletVersion, "container runtime " + info.ContainerRuntimeVersion,
		"kernel " + info.KernelVersion, "OS image " + info.OSImage, "agent's kubelet " + agent,
	}
	switch {
	case info.KubeletVersion == "":
		return judged(statusFail, ev, "the kubelet version of Node %s is unknown: status.nodeInfo.kubeletVersion is empty", f.Node.Name)
	case agent != "" && strings.TrimPrefix(agent, "v") != strings.TrimPrefix(info.KubeletVersion, "v"):
		return judged(statusWarn, ev, "the kubelet reports %s but the agent found %s", info.KubeletVersion, agent)
	}
	return judged(statusPass, ev, "kubelet %s", info.KubeletVersion)
}

// checkTaints warns about what would keep GPU pods off the node once gpunode releases it:
// a cordon, or a NoSchedule/NoExecute taint gpunode does not own. The node lifecycle's
// not-ready and unreachable taints (kubernetes.node-ready judges them) and the
// conventional nvidia.com/gpu taint of dedicated GPU nodes (GPU workloads tolerate it) are
// listed as evidence only.
func checkTaints(f KubernetesFacts) verdict {
	var foreign, ev []string
	if f.Node.Spec.Unschedulable {
		foreign = append(foreign, "cordoned (spec.unschedulable)")
	}
	for _, t := range f.Node.Spec.Taints {
		s := fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
		switch {
		case t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute:
			ev = append(ev, s+" (does not keep pods off)")
		case nodeops.Owns(t):
			ev = append(ev, s+" (gpunode's hold: released on acceptance)")
		case t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable:
			ev = append(ev, s+" (node lifecycle: see "+CheckNodeReady+")")
		case t.Key == conventionalGPUKey:
			ev = append(ev, s+" (dedicated GPU node: GPU workloads tolerate it)")
		default:
			foreign = append(foreign, s)
		}
	}
	ev = append(foreign, ev...)
	if len(foreign) > 0 {
		return judged(statusWarn, ev, "GPU work without a matching toleration stays off the node after release: %s", strings.Join(foreign, ", "))
	}
	return judged(statusPass, ev, "no foreign NoSchedule or NoExecute taint")
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
