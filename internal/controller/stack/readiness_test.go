package stack

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestReadinessIsTheOperandPodsAndWhatTheAgentReports(t *testing.T) {
	pool := containerPool("a")
	both := func() []corev1.Pod {
		return []corev1.Pod{runningPod("a", ComponentDriver, "n", driverWanted), runningPod("a", ComponentToolkit, "n", toolkitWanted)}
	}
	container := Sources{Driver: v1alpha1.SourceContainer, Toolkit: v1alpha1.SourceContainer}
	tests := []struct {
		name        string
		pool        *v1alpha1.StackPool
		src         Sources
		gn          *v1alpha1.GPUNode
		pods        func() []corev1.Pod
		driverReady bool
		driverMsg   string
		toolReady   bool
		toolMsg     string
	}{
		{"both pods ready at the wanted versions, NVML at the wanted driver and the toolkit checks passing is ready",
			pool, container, reportingGPUNode("n", driverWanted, true), both, true, "", true, ""},
		{"no driver pod on the node yet is not ready",
			pool, container, reportingGPUNode("n", driverWanted, true), func() []corev1.Pod { return both()[1:] },
			false, "driver: no pod of DaemonSet gpunode-a-driver on the node yet", true, ""},
		{"a driver pod that cannot pull its image is not ready and says why",
			pool, container, reportingGPUNode("n", "", true), func() []corev1.Pod {
				p := both()
				p[0].Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
					{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}
				return p
			}, false, "driver: pod gpunode-a-driver-n is Pending (ImagePullBackOff)", true, ""},
		{"a driver pod of the previous version is not ready until it is deleted",
			pool, container, reportingGPUNode("n", "570.172.08", true), func() []corev1.Pod {
				p := both()
				p[0].Labels[v1alpha1.LabelOperandVersion] = "570.172.08"
				return p
			}, false, "driver: pod gpunode-a-driver-n runs version 570.172.08, pool wants 580.95.05 (updateStrategy OnDelete", true, ""},
		{"a ready driver pod while NVML still reports the old driver is not ready",
			pool, container, reportingGPUNode("n", "570.172.08", true), both,
			false, "driver: NVML reports 570.172.08, pool wants 580.95.05", true, ""},
		{"a node whose agent has not reported is not ready on either operand",
			pool, container, nil, both,
			false, "driver: the node's GPUNode does not exist yet", false, "toolkit: the node's GPUNode does not exist yet"},
		{"a toolkit pod ready while the agent's runtime checks fail is not ready and gives the agent's message",
			pool, container, reportingGPUNode("n", driverWanted, false), both,
			true, "", false, "toolkit: the agent's runtime config and CDI checks fail: containerd has no nvidia runtime"},
		{"a driver pod of the pool the node left keeps the driver not ready until it is gone",
			pool, container, reportingGPUNode("n", driverWanted, true), func() []corev1.Pod {
				return append(both(), runningPod("old", ComponentDriver, "n", driverWanted))
			}, false, `driver: pod gpunode-old-driver-n of StackPool "old" is still on the node`, true, ""},
		{"a toolkit pod of the pool the node left keeps a preinstalled toolkit not ready",
			preinstalledPool("a"), Sources{Driver: v1alpha1.SourcePreinstalled, Toolkit: v1alpha1.SourcePreinstalled},
			reportingGPUNode("n", driverWanted, true), func() []corev1.Pod {
				return []corev1.Pod{runningPod("old", ComponentToolkit, "n", toolkitWanted)}
			}, true, "", false, `toolkit: pod gpunode-old-toolkit-n of StackPool "old" is still on the node`},
		{"a preinstalled driver is judged by NVML's version alone",
			preinstalledPool("a"), Sources{Driver: v1alpha1.SourcePreinstalled, Toolkit: v1alpha1.SourcePreinstalled},
			reportingGPUNode("n", driverWanted, true), func() []corev1.Pod { return nil }, true, "", true, ""},
		{"a preinstalled driver at another version is not ready",
			preinstalledPool("a"), Sources{Driver: v1alpha1.SourcePreinstalled, Toolkit: v1alpha1.SourcePreinstalled},
			reportingGPUNode("n", "570.172.08", true), func() []corev1.Pod { return nil },
			false, "driver: NVML reports 570.172.08, pool wants 580.95.05", true, ""},
		{"the GPU Operator's ready driver pod makes its driver ready before NVML answers when no version is wanted",
			func() *v1alpha1.StackPool {
				p := containerPool("a")
				p.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourceGPUOperator}
				return p
			}(), Sources{Driver: v1alpha1.SourceGPUOperator, Toolkit: v1alpha1.SourceContainer},
			reportingGPUNode("n", "", true), func() []corev1.Pod {
				theirs := runningPod("x", "x", "n", "")
				theirs.Labels = map[string]string{LabelGPUOperatorApp: GPUOperatorDriverApp}
				return append(both()[1:], theirs)
			}, true, "", true, ""},
		{"the GPU Operator's driver without its pod or NVML is not ready",
			pool, Sources{Driver: v1alpha1.SourceGPUOperator, Toolkit: v1alpha1.SourceContainer},
			reportingGPUNode("n", "", true), func() []corev1.Pod { return both()[1:] },
			false, "driver: neither the GPU Operator's driver pod (app=nvidia-driver-daemonset) is ready", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Readiness(tt.pool, tt.src, NodeFacts{Name: "n", GPUNode: tt.gn, Pods: tt.pods()})
			if got.Driver.Ready != tt.driverReady || !strings.HasPrefix(got.Driver.Message, tt.driverMsg) || (tt.driverMsg == "") != (got.Driver.Message == "") {
				t.Errorf("driver = %+v, want ready %v with a message starting %q", got.Driver, tt.driverReady, tt.driverMsg)
			}
			if got.Toolkit.Ready != tt.toolReady || !strings.HasPrefix(got.Toolkit.Message, tt.toolMsg) || (tt.toolMsg == "") != (got.Toolkit.Message == "") {
				t.Errorf("toolkit = %+v, want ready %v with a message starting %q", got.Toolkit, tt.toolReady, tt.toolMsg)
			}
			if Ready(got) != (tt.driverReady && tt.toolReady) {
				t.Errorf("Ready = %v, want %v", Ready(got), tt.driverReady && tt.toolReady)
			}
		})
	}
}
