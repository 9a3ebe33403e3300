package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is a GPU node's lifecycle phase (docs: Discovered → Accepting → InService;
// InService → Suspect → Quarantined → Recovering → Accepting → InService | Maintenance;
// Upgrading → Accepting; any phase → AgentLost → the phase before, once the agent is back).
// +kubebuilder:validation:Enum=Discovered;Accepting;InService;Suspect;Quarantined;Recovering;Maintenance;Upgrading;AgentLost
type Phase string

// Lifecycle phases.
const (
	PhaseDiscovered  Phase = "Discovered"
	PhaseAccepting   Phase = "Accepting"
	PhaseInService   Phase = "InService"
	PhaseSuspect     Phase = "Suspect"
	PhaseQuarantined Phase = "Quarantined"
	PhaseRecovering  Phase = "Recovering"
	PhaseMaintenance Phase = "Maintenance"
	PhaseUpgrading   Phase = "Upgrading"
	// PhaseAgentLost: the node's agent sent no heartbeat within the policy's
	// agentLostAfter; the node is held (owner liveness, reason agent-lost) until it does
	// and its GPUs are healthy.
	PhaseAgentLost Phase = "AgentLost"
)

// GPUNodeSpec is what the controller asks of the node's agent.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.remediation) || (has(self.remediation) && self.remediation.id >= oldSelf.remediation.id)",message="spec.remediation.id never goes down and the request is never removed"
type GPUNodeSpec struct {
	// NodeName is the Kubernetes Node this object describes; the GPUNode has the same name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeName is immutable"
	NodeName string `json:"nodeName"`
	// AcceptanceGeneration asks for an acceptance run: the controller raises it, and the
	// agent runs acceptance whenever it is above status.lastAcceptance.generation, then
	// publishes an AcceptanceRecord carrying this number. It never goes down.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self >= oldSelf",message="acceptanceGeneration never goes down"
	// +optional
	AcceptanceGeneration int64 `json:"acceptanceGeneration,omitempty"`
	// AcceptanceReason says why acceptance was asked for (new node, driver changed, after recovery).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	AcceptanceReason string `json:"acceptanceReason,omitempty"`
	// Remediation is the step the controller asks the agent to carry out; the agent
	// answers in status.remediationAnswer with the same ID.
	// +optional
	Remediation *RemediationRequest `json:"remediation,omitempty"`
}

// GPUNodeStatus is the node as its agent sees it, and its place in the lifecycle as the
// controller decides it.
type GPUNodeStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is the lifecycle phase, decided by internal/lifecycle and written by the
	// acceptance controller alone.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// AcceleratorClass is the node's class (the gpunode.dev/accelerator-class label).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	AcceleratorClass string `json:"acceleratorClass,omitempty"`
	// GPUCount is the number of GPUs in the inventory (a print column).
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUCount int32 `json:"gpuCount,omitempty"`
	// Health is the worst health of the node's GPUs.
	// +optional
	Health Health `json:"health,omitempty"`
	// Inventory is the node's GPUs.
	// +optional
	Inventory Inventory `json:"inventory,omitzero"`
	// Versions of the node's software stack.
	// +optional
	Versions Versions `json:"versions,omitzero"`
	// GPUHealth is each GPU's health state.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=index
	// +optional
	GPUHealth []GPUHealth `json:"gpuHealth,omitempty"`
	// Holds keep the node out of service: the unschedulable taint stays while any remains,
	// and only its owner releases a hold. One hold per owner.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=owner
	// +optional
	Holds []Hold `json:"holds,omitempty"`
	// LastAcceptance is the latest acceptance run's outcome.
	// +optional
	LastAcceptance *AcceptanceSummary `json:"lastAcceptance,omitempty"`
	// Conditions: the latest observations of the node's state.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Remediation is the controller's record of isolating and recovering the node.
	// +optional
	Remediation *RemediationStatus `json:"remediation,omitempty"`
	// RemediationAnswer is the agent's answer to spec.remediation.
	// +optional
	RemediationAnswer *RemediationAnswer `json:"remediationAnswer,omitempty"`
	// Agent is the node agent's liveness: its heartbeat.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`
	// GPUAPI is how the agent serves the node's GPUs to pods (nvidia.com/gpu): through its
	// device plugin or through DRA (the node label gpunode.dev/gpu-api picks it).
	// +kubebuilder:validation:Enum=device-plugin;dra
	// +optional
	GPUAPI string `json:"gpuAPI,omitempty"`
	// Stack is the readiness of the node's driver and container toolkit as the agent sees
	// them (the stack controller's readiness of a StackPool's operands reads it).
	// +optional
	Stack *StackStatus `json:"stack,omitempty"`
}

// StackStatus is the readiness of the node's NVIDIA software stack, written by the agent
// (field manager gpunode-agent).
type StackStatus struct {
	// Toolkit is ready when the container runtime's config has the nvidia runtime (or CDI)
	// and the CDI specs for the GPUs validate: the L0 checks host.containerd and host.cdi.
	Toolkit OperandReadiness `json:"toolkit"`
	// Driver is ready when the GPU management library (NVML) initialises and reports the
	// driver's version.
	Driver OperandReadiness `json:"driver"`
	// Paused is the GPU Operator label that paused the agent, as key=value (for example
	// nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade): while it is set the agent
	// has released the GPUs (no NVML, no device files, no device or DRA plugin serving).
	// +kubebuilder:validation:MaxLength=320
	// +optional
	Paused string `json:"paused,omitempty"`
}

// OperandReadiness is whether one operand of the node's stack works, as the agent checks it.
type OperandReadiness struct {
	Ready bool `json:"ready"`
	// Version is the operand's version as the node reports it (the driver's from NVML).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
	// Message says what is missing while not ready, or what was checked.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// Since is when Ready last changed.
	// +optional
	Since metav1.Time `json:"since,omitzero"`
}

// AgentStatus is the node agent's liveness, written by the agent alone (field manager
// gpunode-agent-heartbeat).
type AgentStatus struct {
	// HeartbeatTime is when the agent last said it runs: it writes it every --interval (at
	// least 30 s apart) while its publishing loop makes progress. The controller holds the node (owner
	// liveness, reason agent-lost) when none comes for the policy's agentLostAfter.
	HeartbeatTime metav1.Time `json:"heartbeatTime"`
}

// Inventory is the node's GPUs, as the agent found them.
type Inventory struct {
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=index
	// +optional
	GPUs []GPUInfo `json:"gpus,omitempty"`
}

// GPUInfo is one GPU's identity and links (internal/gpu.Device, in part).
type GPUInfo struct {
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// +kubebuilder:validation:MaxLength=64
	UUID string `json:"uuid"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Serial string `json:"serial,omitempty"`
	// Model as the driver reports it, e.g. "NVIDIA H100 80GB HBM3".
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model"`
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB"`
	// PCIBusID in the vendor's form, e.g. "00000000:18:00.0".
	// +kubebuilder:validation:MaxLength=32
	// +optional
	PCIBusID string `json:"pciBusId,omitempty"`
	// PCIe is the link as "Gen5 x16 (max Gen5 x16)".
	// +kubebuilder:validation:MaxLength=64
	// +optional
	PCIe string `json:"pcie,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	VBIOS string `json:"vbios,omitempty"`
	// NVLinks counts the GPU's links; absent when it has none.
	// +optional
	NVLinks *NVLinkCount `json:"nvlinks,omitempty"`
}

// NVLinkCount is how many of a GPU's NVLinks are active.
// +kubebuilder:validation:XValidation:rule="self.active <= self.total",message="active links cannot exceed total links"
type NVLinkCount struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Total int32 `json:"total"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Active int32 `json:"active"`
}

// Versions of the node's software stack; empty when not installed or not found.
type Versions struct {
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Kernel string `json:"kernel,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Driver string `json:"driver,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	CUDA string `json:"cuda,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Containerd string `json:"containerd,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Kubelet string `json:"kubelet,omitempty"`
	// Agent is the gpunode agent's own version (`gpunode version`), as it reports itself.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Agent string `json:"agent,omitempty"`
}

// GPUHealth is one GPU's health state (internal/health.State).
type GPUHealth struct {
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	UUID   string `json:"uuid,omitempty"`
	Health Health `json:"health"`
	// Action: required while unhealthy, advisory while degraded, none while healthy.
	Action Action `json:"action"`
	// Causes of the findings since the GPU was last healthy, sorted.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	Causes []string `json:"causes,omitempty"`
	// MoreCauses counts causes beyond MaxCauses.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MoreCauses int32 `json:"moreCauses,omitempty"`
	// Since is when Health last changed.
	Since metav1.Time `json:"since"`
	// AwaitingCheck: a recovery covering Action was carried out; the checks decide.
	// +optional
	AwaitingCheck bool `json:"awaitingCheck,omitempty"`
	// Pods using the GPU ("namespace/name"), as the kubelet's pod-resources API reports
	// them; absent when the agent does not read pod resources.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	// +optional
	Pods []string `json:"pods,omitempty"`
	// Processes holding a context on the GPU, as the driver reports them; absent when unknown.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Processes *int32 `json:"processes,omitempty"`
}

// Hold keeps a node out of service until its owner releases it.
type Hold struct {
	// Owner is who placed the hold and alone may release it (acceptance, remediation,
	// upgrade, operator, or an operator's own name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Owner string `json:"owner"`
	// Reason is short and machine-readable: it becomes the value of the unschedulable
	// taint, so it has a label value's syntax.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Reason string `json:"reason"`
	// Message explains the hold to a person.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// Since is when the hold was placed.
	Since metav1.Time `json:"since"`
}

// AcceptanceSummary is the outcome of the node's latest acceptance run.
type AcceptanceSummary struct {
	// RecordName is the AcceptanceRecord with the details.
	// +kubebuilder:validation:MaxLength=253
	RecordName string `json:"recordName"`
	// Generation is the spec.acceptanceGeneration this run answered.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Generation int64            `json:"generation,omitempty"`
	Result     AcceptanceResult `json:"result"`
	// Time the run finished.
	Time    metav1.Time  `json:"time"`
	Summary CheckSummary `json:"summary"`
}

// GPUNode is one GPU node: inventory, versions, per-GPU health, lifecycle phase, holds and
// last acceptance. Its agent writes the facts; the controller the phase and holds.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gn,categories=gpu
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.status.acceleratorClass`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpuCount`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.versions.driver`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.lastAcceptance.result`
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.status.agent.heartbeatTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.nodeName",message="a GPUNode has the name of its node: metadata.name must equal spec.nodeName"
type GPUNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GPUNodeSpec `json:"spec"`
	// +optional
	Status GPUNodeStatus `json:"status,omitzero"`
}

// GPUNodeList is a list of GPUNodes.
//
// +kubebuilder:object:root=true
type GPUNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUNode `json:"items"`
}
