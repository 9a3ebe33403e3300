package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperandSource says who provides an operand (the driver, the container toolkit or the
// gpunode agent) on a pool's nodes. Each field lists the sources it takes.
type OperandSource string

const (
	// SourceContainer: gpunode deploys the operand as a DaemonSet of the pool (one per
	// pool and operand, updateStrategy OnDelete).
	SourceContainer OperandSource = "Container"
	// SourcePreinstalled: the node image has the operand; gpunode deploys nothing and only
	// checks it.
	SourcePreinstalled OperandSource = "Preinstalled"
	// SourceGPUOperator: NVIDIA's GPU Operator deploys it; gpunode deploys nothing and
	// waits for it.
	SourceGPUOperator OperandSource = "GPUOperator"
	// SourceChart (the agent only): the Helm chart's agent DaemonSet serves the pool's
	// nodes, as on a node no pool selects.
	SourceChart OperandSource = "Chart"
)

// The Node labels of the agent's hand-over between the chart's DaemonSet and a pool's
// (written by the stack controller, field manager gpunode-stack).
const (
	// LabelChartAgent=off keeps the chart's agent DaemonSet off the Node (its node
	// affinity): the Node's pool deploys the agent. Set before LabelStackAgent, removed
	// after the pool's agent pod left the Node.
	LabelChartAgent = "gpunode.dev/chart-agent"
	// ChartAgentOff is LabelChartAgent's one value.
	ChartAgentOff = "off"
	// LabelStackAgent=<pool> puts pool's agent DaemonSet on the Node (its node selector).
	// Set once no other agent pod is on the Node, removed first when the Node leaves.
	LabelStackAgent = "gpunode.dev/stack-agent"
)

// MaxStackNodeStatus caps status.nodeStatus: nodes not ready first, then ready ones, by
// name; the counts and running versions cover every member node.
const MaxStackNodeStatus = 256

// StackPoolSpec is the operands of the nodes a pool selects.
type StackPoolSpec struct {
	// NodeSelector picks the pool's Nodes by their labels. It must name at least one label:
	// a pool never selects every node. A Node matched by two pools belongs to neither and
	// is held (owner stack, reason pool-conflict).
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="nodeSelector must name at least one label: a pool never selects every node"
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`
	// Driver is the GPU driver of the pool's nodes.
	Driver DriverOperand `json:"driver"`
	// Toolkit is the NVIDIA container toolkit of the pool's nodes (the nvidia runtime in
	// containerd's config and the CDI spec of the GPUs).
	Toolkit ToolkitOperand `json:"toolkit"`
	// Agent is the gpunode agent of the pool's nodes: the chart's DaemonSet (Chart, the
	// default) or a DaemonSet of the pool (Container) at the image and version given.
	// +optional
	Agent AgentOperand `json:"agent,omitzero"`
	// Registry, when set, replaces the registry host and path of every operand image (its
	// last path element and tag stay): "registry.example:5000/mirror" turns
	// "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04" into
	// "registry.example:5000/mirror/driver:580.95.05-ubuntu24.04". For sites offline.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$`
	// +optional
	Registry string `json:"registry,omitempty"`
	// ImagePullSecrets are Secrets in gpunode's namespace for pulling the operand images.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// DriverOperand is where a pool's GPU driver comes from and which version NVML must report.
//
// +kubebuilder:validation:XValidation:rule="self.source != 'Container' || has(self.image)",message="driver.image is required when driver.source is Container"
// +kubebuilder:validation:XValidation:rule="self.source == 'Container' || !has(self.image)",message="driver.image is set only when driver.source is Container: Preinstalled and GPUOperator deploy no image"
// +kubebuilder:validation:XValidation:rule="self.source == 'GPUOperator' || has(self.version)",message="driver.version is required unless driver.source is GPUOperator: it is the version NVML must report on the node"
type DriverOperand struct {
	// Source is who provides the driver: Container (gpunode's DaemonSet), Preinstalled
	// (the node image) or GPUOperator.
	// +kubebuilder:validation:Enum=Container;Preinstalled;GPUOperator
	Source OperandSource `json:"source"`
	// Image is the driver container image (Container only): a full reference, or a
	// repository to which ":<version>" is added.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`
	// Version is the driver version NVML must report on every node of the pool, e.g.
	// "580.95.05" (Preinstalled: the version expected on the host; GPUOperator: checked
	// only when given).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="driver.version is a driver version as NVML reports it, e.g. 580.95.05"
	// +optional
	Version string `json:"version,omitempty"`
}

// ToolkitOperand is where a pool's container toolkit comes from.
//
// +kubebuilder:validation:XValidation:rule="self.source != 'Container' || has(self.image)",message="toolkit.image is required when toolkit.source is Container"
// +kubebuilder:validation:XValidation:rule="self.source == 'Container' || !has(self.image)",message="toolkit.image is set only when toolkit.source is Container: Preinstalled and GPUOperator deploy no image"
// +kubebuilder:validation:XValidation:rule="self.source != 'Container' || has(self.version)",message="toolkit.version is required when toolkit.source is Container: it labels the toolkit pods"
type ToolkitOperand struct {
	// Source is who provides the toolkit: Container (gpunode's DaemonSet), Preinstalled
	// (the node image) or GPUOperator.
	// +kubebuilder:validation:Enum=Container;Preinstalled;GPUOperator
	Source OperandSource `json:"source"`
	// Image is the toolkit container image (Container only): a full reference, or a
	// repository to which ":v<version>" is added.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`
	// Version is the toolkit version, e.g. "1.18.0".
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="toolkit.version is a version such as 1.18.0"
	// +optional
	Version string `json:"version,omitempty"`
}

// AgentOperand is where a pool's gpunode agent comes from.
//
// +kubebuilder:validation:XValidation:rule="self.source != 'Container' || has(self.image)",message="agent.image is required when agent.source is Container"
// +kubebuilder:validation:XValidation:rule="self.source == 'Container' || !has(self.image)",message="agent.image is set only when agent.source is Container: with Chart the chart's agent DaemonSet runs its own image"
// +kubebuilder:validation:XValidation:rule="self.source != 'Container' || has(self.version)",message="agent.version is required when agent.source is Container: it is the version the agent must report (gpunode version)"
// +kubebuilder:validation:XValidation:rule="self.source == 'Container' || !has(self.version)",message="agent.version is set only when agent.source is Container: with Chart the chart's agent DaemonSet runs its own version"
type AgentOperand struct {
	// Source is who deploys the agent: Chart (the chart's agent DaemonSet, the default) or
	// Container (a DaemonSet of the pool, updateStrategy OnDelete, with the chart's agent
	// pod template and the image below).
	// +kubebuilder:validation:Enum=Chart;Container
	// +kubebuilder:default=Chart
	Source OperandSource `json:"source"`
	// Image is the gpunode image (Container only): a full reference, or a repository to
	// which ":<version>" is added.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`
	// Version is the agent version the image runs, as the agent reports it
	// (status.versions.agent of the GPUNode, `gpunode version`), e.g. "0.1.0".
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+([-+][0-9A-Za-z.-]+)?$')",message="agent.version is a gpunode version such as 0.1.0"
	// +optional
	Version string `json:"version,omitempty"`
}

// StackPoolStatus is what the stack controller reports about a pool (field manager
// gpunode-stack).
type StackPoolStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, NodesConflicting, OwnedByGPUOperator.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Nodes counts the pool's member nodes (matched by this pool alone); written even
	// when 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Nodes int32 `json:"nodes"`
	// ReadyNodes counts the members whose driver, toolkit and agent are all ready;
	// written even when 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReadyNodes int32 `json:"readyNodes"`
	// ConflictingNodes counts the Nodes this pool matches that another pool matches too.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConflictingNodes int32 `json:"conflictingNodes,omitempty"`
	// Driver is the driver version wanted and the versions running across the members.
	// +optional
	Driver OperandVersions `json:"driver,omitzero"`
	// Toolkit is the toolkit version wanted and the versions running across the members.
	// +optional
	Toolkit OperandVersions `json:"toolkit,omitzero"`
	// Agent is the agent version wanted (Container) and the versions the members' agents
	// report.
	// +optional
	Agent OperandVersions `json:"agent,omitzero"`
	// NodeStatus is per member node, nodes not ready first, then by name, at most
	// MaxStackNodeStatus (256) of them; NodeStatusOmitted counts the members left out.
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	// +optional
	NodeStatus []StackNodeStatus `json:"nodeStatus,omitempty"`
	// NodeStatusOmitted counts the member nodes nodeStatus leaves out (the cap).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NodeStatusOmitted int32 `json:"nodeStatusOmitted,omitempty"`
}

// OperandVersions is one operand's wanted version and the versions running.
type OperandVersions struct {
	// Source is the operand's effective source: the spec's, or GPUOperator when the GPU
	// Operator owns an operand the spec asks gpunode to deploy.
	// +kubebuilder:validation:Enum=Container;Preinstalled;GPUOperator;Chart
	// +optional
	Source OperandSource `json:"source,omitempty"`
	// Wanted is the version the pool asks for ("" when any will do).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Wanted string `json:"wanted,omitempty"`
	// Running is how many members run each version, most nodes first.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Running []VersionCount `json:"running,omitempty"`
	// Summary is Running in one line, e.g. "580.95.05×3,570.124.06×1" ("none" when no
	// member reports a version).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Summary string `json:"summary,omitempty"`
}

// VersionCount is how many member nodes run one version.
type VersionCount struct {
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
	// +kubebuilder:validation:Minimum=0
	Nodes int32 `json:"nodes"`
}

// StackNodeStatus is one member node's operands.
type StackNodeStatus struct {
	// Name is the Node's name.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	Driver NodeOperandStatus `json:"driver,omitzero"`
	// +optional
	Toolkit NodeOperandStatus `json:"toolkit,omitzero"`
	// +optional
	Agent NodeOperandStatus `json:"agent,omitzero"`
}

// NodeOperandStatus is one operand on one node.
type NodeOperandStatus struct {
	// Wanted is the version the pool asks for.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Wanted string `json:"wanted,omitempty"`
	// Running is the version the node runs: the one NVML reports (driver), the operand
	// pod's version label (toolkit) or the one the agent reports (agent); "" when unknown.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Running string `json:"running,omitempty"`
	// Ready is the stack controller's readiness of the operand on the node.
	Ready bool `json:"ready"`
	// Message says what is missing while not ready.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// StackPool conditions, written by the stack controller (field manager gpunode-stack).
const (
	// ConditionStackReady: True when every member node's driver and toolkit are ready.
	ConditionStackReady = "Ready"
	// ConditionNodesConflicting: True while a Node this pool matches is matched by another
	// pool too (such a Node belongs to neither and is held).
	ConditionNodesConflicting = "NodesConflicting"
	// ConditionOwnedByGPUOperator: True when the GPU Operator owns an operand of the pool
	// (source GPUOperator, or a ClusterPolicy or NVIDIADriver that deploys it), so that
	// gpunode does not deploy it.
	ConditionOwnedByGPUOperator = "OwnedByGPUOperator"
)

// Reasons of the StackPool conditions.
const (
	ReasonAllNodesReady     = "AllNodesReady"
	ReasonNodesNotReady     = "NodesNotReady"
	ReasonNoNodes           = "NoNodes"
	ReasonNoConflict        = "NoConflict"
	ReasonConflict          = "PoolConflict"
	ReasonGPUOperatorSource = "SourceGPUOperator"
	ReasonClusterPolicy     = "ClusterPolicy"
	ReasonNVIDIADriver      = "NVIDIADriver"
	ReasonNotOwned          = "NotOwned"
)

// StackPool is a pool of nodes that run the same GPU driver and container toolkit: the
// stack controller deploys the operands whose source is Container as one DaemonSet per pool
// and operand (updateStrategy OnDelete), labels each member Node gpunode.dev/stack-pool, and
// holds a member (owner stack) until both operands are ready on it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=gpu
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a StackPool's name is at most 63 characters: it is the value of the gpunode.dev/stack-pool label"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodes`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.driver.wanted`
// +kubebuilder:printcolumn:name="Running-Driver",type=string,JSONPath=`.status.driver.summary`
// +kubebuilder:printcolumn:name="Toolkit",type=string,JSONPath=`.status.toolkit.wanted`
// +kubebuilder:printcolumn:name="Running-Toolkit",type=string,JSONPath=`.status.toolkit.summary`,priority=1
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agent.wanted`,priority=1
// +kubebuilder:printcolumn:name="Running-Agent",type=string,JSONPath=`.status.agent.summary`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StackPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec StackPoolSpec `json:"spec"`
	// +optional
	Status StackPoolStatus `json:"status,omitzero"`
}

// StackPoolList is a list of StackPools.
//
// +kubebuilder:object:root=true
type StackPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StackPool `json:"items"`
}
