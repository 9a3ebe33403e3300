package dra

// The DRA plugin's rights, generated into config/rbac/dra/role.yaml (go generate
// ./internal/dra) and granted by the chart with agent.dra.enabled. The chart's admission
// policy (admission-policy-dra.yaml) narrows the slices to the agent's own node.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=get;list;watch;create;update;delete

//go:generate go tool controller-gen rbac:roleName=gpunode-agent-dra paths=./... output:rbac:artifacts:config=../../config/rbac/dra
