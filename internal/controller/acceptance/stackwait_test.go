package acceptance

import (
	"testing"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestStackWaits(t *testing.T) {
	notReady := &v1alpha1.StackStatus{Driver: v1alpha1.OperandReadiness{Ready: false, Message: "driver not loaded"}}
	ready := &v1alpha1.StackStatus{Driver: v1alpha1.OperandReadiness{Ready: true, Version: "580.95.05"}}
	paused := &v1alpha1.StackStatus{Driver: v1alpha1.OperandReadiness{Ready: false}, Paused: "nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade"}
	member := map[string]string{v1alpha1.LabelStackPool: "h100"}
	cases := []struct {
		name   string
		stack  *v1alpha1.StackStatus
		labels map[string]string
		want   bool
	}{
		{"a pool member whose driver is not ready waits for its stack", notReady, member, true},
		{"a node the GPU Operator paused waits, pool or not", paused, nil, true},
		{"a node no pool governs whose driver is gone does not wait: its driver is a fault", notReady, nil, false},
		{"a pool member whose driver is ready does not wait", ready, member, false},
		{"an agent that reports no stack status does not wait", nil, member, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{Stack: c.stack}}
			if got := StackWaits(gn, c.labels); got != c.want {
				t.Errorf("StackWaits = %v, want %v", got, c.want)
			}
		})
	}
}
