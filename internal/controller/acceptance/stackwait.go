package acceptance

import (
	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// StackWaits reports whether the node's driver is the stack's to wait for: the agent says
// the driver is not ready, and the node is a StackPool's member (its driver comes with the
// pool, and the stack controller holds the node until it is ready) or the GPU Operator
// paused the node's GPU clients. Neither remediation nor acceptance acts on such a node's
// missing driver.
func StackWaits(gn *v1alpha1.GPUNode, nodeLabels map[string]string) bool {
	st := gn.Status.Stack
	if st == nil || st.Driver.Ready {
		return false
	}
	return st.Paused != "" || nodeLabels[v1alpha1.LabelStackPool] != ""
}
