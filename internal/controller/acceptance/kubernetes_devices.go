package acceptance

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/labels"
)

// Extended resources a GPU device plugin advertises (as internal/podresources counts them):
// whole GPUs, renamed time-slicing replicas, and MIG devices of the mixed strategy.
const (
	resourceGPU       = corev1.ResourceName("nvidia.com/gpu")
	resourceGPUShared = corev1.ResourceName("nvidia.com/gpu.shared")
	resourceMIGPrefix = "nvidia.com/mig-"
)

// gpuResources returns the GPU resources in list, by name.
func gpuResources(list corev1.ResourceList) map[string]int64 {
	out := map[string]int64{}
	for name, q := range list {
		if name == resourceGPU || name == resourceGPUShared || strings.HasPrefix(string(name), resourceMIGPrefix) {
			out[string(name)] = q.Value()
		}
	}
	return out
}

func render(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// agentGPUs is the GPU count the agent reported: status.gpuCount, else its inventory.
func agentGPUs(f KubernetesFacts) int64 {
	if n := f.GPUNode.Status.GPUCount; n > 0 {
		return int64(n)
	}
	return int64(len(f.GPUNode.Status.Inventory.GPUs))
}

// checkAllocatable: the Node's allocatable GPU resources are what the agent's GPUs make
// under the sharing the node's labels announce. Whole GPUs: nvidia.com/gpu (plus the
// renamed nvidia.com/gpu.shared) equals the GPU count × nvidia.com/gpu.replicas (1 when
// absent). MIG (replicas 0: every GPU in MIG mode, or mig.strategy mixed): the agent does
// not publish MIG devices, so any allocatable GPU resource passes and none fails.
func checkAllocatable(f KubernetesFacts) verdict {
	n := agentGPUs(f)
	alloc := gpuResources(f.Node.Status.Allocatable)
	capacity := gpuResources(f.Node.Status.Capacity)
	replicasLabel, hasReplicas := f.Node.Labels[labels.KeyGPUReplicas]
	migStrategy := f.Node.Labels[labels.KeyMIGStrategy]
	ev := []string{
		"allocatable: " + render(alloc), "capacity: " + render(capacity),
		fmt.Sprintf("agent's GPUs: %d", n),
		fmt.Sprintf("%s=%q (present: %t), %s=%q", labels.KeyGPUReplicas, replicasLabel, hasReplicas, labels.KeyMIGStrategy, migStrategy),
	}
	if n == 0 {
		return judged(statusSkip, ev, "the agent reported no GPU: nothing should be allocatable")
	}
	replicas := int64(1)
	if hasReplicas {
		r, err := strconv.ParseInt(replicasLabel, 10, 32)
		if err != nil || r < 0 {
			return judged(statusFail, ev, "label %s=%q is not a replica count", labels.KeyGPUReplicas, replicasLabel)
		}
		replicas = r
	}
	if replicas == 0 || migStrategy == labels.MIGStrategyMixed {
		var total int64
		for _, v := range alloc {
			total += v
		}
		if total == 0 {
			return judged(statusFail, ev, "no GPU resource is allocatable (MIG: nvidia.com/gpu or nvidia.com/mig-*); %d GPUs found by the agent", n)
		}
		return judged(statusPass, ev, "MIG: %s allocatable (the count per MIG device is not checked: the agent does not publish MIG devices)", render(alloc))
	}
	want := n * replicas
	have := alloc[string(resourceGPU)] + alloc[string(resourceGPUShared)]
	registered := capacity[string(resourceGPU)] + capacity[string(resourceGPUShared)]
	switch {
	case have == want:
		return judged(statusPass, ev, "%d allocatable = the agent's %d GPUs × %d per GPU (%s)", have, n, replicas, labels.KeyGPUReplicas)
	case registered == 0 && len(alloc) == 0:
		return judged(statusFail, ev, "%s is not allocatable, %d expected: no device plugin has registered the GPUs", resourceGPU, want)
	case registered == want && have < want:
		return judged(statusFail, ev, "%d of %d allocatable: the device plugin reports %d unhealthy", have, want, want-have)
	}
	return judged(statusFail, ev, "%d allocatable, %d expected = the agent's %d GPUs × %d per GPU (%s)", have, want, n, replicas, labels.KeyGPUReplicas)
}

// devicePluginSelectors are the pod labels of the device plugins in common use: NVIDIA GPU
// Operator's daemonset, NVIDIA's Helm chart, and NVIDIA's static manifest.
var devicePluginSelectors = []struct{ key, value string }{
	{"app", "nvidia-device-plugin-daemonset"},
	{"app.kubernetes.io/name", "nvidia-device-plugin"},
	{"name", "nvidia-device-plugin-ds"},
}

func isDevicePlugin(p *corev1.Pod) bool {
	for _, s := range devicePluginSelectors {
		if p.Labels[s.key] == s.value {
			return true
		}
	}
	return false
}

// podReady reports whether p runs with every container ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePod says what a person needs of a pod's state: phase, readiness, the first
// waiting container's reason and restarts.
func describePod(p *corev1.Pod) string {
	var restarts int32
	waiting := ""
	for _, c := range p.Status.ContainerStatuses {
		restarts += c.RestartCount
		if c.State.Waiting != nil && waiting == "" {
			waiting = c.State.Waiting.Reason
		}
	}
	s := fmt.Sprintf("%s/%s %s ready=%t restarts=%d", p.Namespace, p.Name, p.Status.Phase, podReady(p), restarts)
	if waiting != "" {
		s += " waiting=" + waiting
	}
	if p.DeletionTimestamp != nil {
		s += " terminating"
	}
	return s
}

// checkDevicePlugin: when a known device-plugin pod is bound to the node, one of them runs
// and is ready. None bound skips: the GPUs may be advertised by gpunode's agent or a host
// service, and kubernetes.allocatable judges what is advertised.
func checkDevicePlugin(f KubernetesFacts) verdict {
	var found []*corev1.Pod
	for i := range f.Pods {
		p := &f.Pods[i]
		if p.Spec.NodeName == f.Node.Name && isDevicePlugin(p) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		var sel []string
		for _, s := range devicePluginSelectors {
			sel = append(sel, s.key+"="+s.value)
		}
		return judged(statusSkip, []string{fmt.Sprintf("%d pods on the node", len(f.Pods))},
			"no device-plugin pod on the node (labels %s); %s judges what is advertised", strings.Join(sel, ", "), CheckAllocatable)
	}
	ev := make([]string, 0, len(found))
	var ready *corev1.Pod
	for _, p := range found {
		ev = append(ev, describePod(p))
		if ready == nil && podReady(p) {
			ready = p
		}
	}
	if ready != nil {
		return judged(statusPass, ev, "device plugin %s/%s is running and ready", ready.Namespace, ready.Name)
	}
	return judged(statusFail, ev, "no device-plugin pod on the node is running and ready: %s", ev[0])
}
