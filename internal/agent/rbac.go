package agent

// The agent's rights, generated into config/rbac/agent/role.yaml (go generate ./internal/agent)
// and granted by the chart. RBAC cannot name "this node": the chart's admission policy narrows
// nodes, GPUNodes and records to the agent's own node.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=acceptancerecords,verbs=get;create
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create

//go:generate go tool controller-gen rbac:roleName=gpunode-agent paths=./... output:rbac:artifacts:config=../../config/rbac/agent
