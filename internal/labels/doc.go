// Package labels computes the node labels gpunode's agent publishes from a gpu.Snapshot.
//
// Two sets, both pure functions of their inputs:
//
//   - Discovery: NVIDIA GPU Feature Discovery's keys (prefix nvidia.com/) with GFD's exact
//     value formats, so that gpunode can replace that DaemonSet without breaking a single
//     nodeSelector.
//   - Platform: gpunode's own vendor-neutral keys (prefix gpunode.dev/), of which
//     accelerator-class comes from an ordered Mapping (a YAML file over built-in defaults,
//     then a class derived from name and memory so that the label never disappears).
//
// Heterogeneous nodes (GPUs of different names): GFD labels every name it sees into the
// same keys, so which one wins depends on map order. gpunode is deterministic instead: the
// per-GPU labels describe the reference device, the lowest-index device whose name could
// be read, and the count labels count the devices that share its name (GFD's count) or
// class (the platform count). Platform adds gpunode.dev/accelerator-mixed=true so that
// workloads can steer clear of such nodes.
//
// Every value is a valid Kubernetes label value (at most 63 characters of [A-Za-z0-9._-],
// beginning and ending alphanumeric): a value that cannot be made valid is left out, never
// published as garbage. docs/labels.md documents the keys, the decisions and the mapping
// file.
package labels
