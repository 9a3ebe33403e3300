// Package v1alpha1 is the gpunode.dev/v1alpha1 API: GPUNode (one per GPU node: inventory,
// versions, per-GPU health, lifecycle phase, holds, last acceptance), GPUNodePolicy (which
// nodes, what hardware and versions they must have, how they are accepted) and
// AcceptanceRecord (one immutable record per acceptance run).
//
// +kubebuilder:object:generate=true
// +groupName=gpunode.dev
package v1alpha1
