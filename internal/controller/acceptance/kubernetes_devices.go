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
