package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUNodePolicySpec says which nodes a policy governs, what they must have and how they
// are accepted. It is the one policy model: the same YAML is `kubectl apply`d and given to
// `gpunode accept --policy`, and internal/nodepolicy.AcceptPolicy converts it for both.
// Field names are those of internal/accept.Policy wherever the two overlap; an unset field
// takes accept.DefaultPolicy's value.
type GPUNodePolicySpec struct {
	// NodeSelector picks the Nodes this policy governs; empty selects every GPU node.
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitzero"`
	// Priority decides between policies that select the same node: the highest wins, and
	// equal priorities go to the policy whose name sorts first.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// Classes is the hardware expected of each accelerator class (the
	// gpunode.dev/accelerator-class label); a node of a class not listed must only be
	// consistent (same model and memory on every GPU).
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=class
	// +optional
	Classes []ClassExpectation `json:"classes,omitempty"`
	// Versions is the version matrix.
	// +optional
	Versions VersionMatrix `json:"versions,omitzero"`
	// Acceptance is which layers run and with what thresholds.
	// +optional
	Acceptance AcceptanceSettings `json:"acceptance,omitzero"`
	// Remediation is how the pool's faulty nodes are isolated and recovered.
	// +optional
	Remediation RemediationPolicy `json:"remediation,omitzero"`
	// AgentLostAfter is how long a node's agent may send no heartbeat
	// (status.agent.heartbeatTime) before the node is held (owner liveness, reason
	// agent-lost) until the agent is back and its GPUs are healthy (default 2m; keep it
	// several heartbeats long: the agent beats every --interval, at least 30 s apart).
	// "0s" turns the check off.
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || duration(self) >= duration('1s')",message="agentLostAfter is 0s (off) or at least 1s"
	// +optional
	AgentLostAfter *metav1.Duration `json:"agentLostAfter,omitempty"`
	// DRA is how the agent's DRA driver (gpu.gpunode.dev) publishes the GPUs' health.
	// +optional
	DRA DRAPolicy `json:"dra,omitzero"`
}

// The effects a DRA device taint of an unhealthy GPU may have (DRAPolicy.UnhealthyEffect).
const (
	DRAEffectNoSchedule = "NoSchedule"
	DRAEffectNoExecute  = "NoExecute"
)

// DRAPolicy is how the agent's DRA driver turns a GPU's health into device taints.
type DRAPolicy struct {
	// UnhealthyEffect is the effect of the device taint on a GPU that is lost or needs the
	// node rebooted or a person's service: NoSchedule (default) keeps new claims off its
	// devices; NoExecute also evicts the pods whose claims use them (unless the claims
	// tolerate the taint). A GPU that needs a reset or a driver reload is always tainted
	// NoSchedule.
	// +kubebuilder:validation:Enum=NoSchedule;NoExecute
	// +optional
	UnhealthyEffect string `json:"unhealthyEffect,omitempty"`
}

// ClassExpectation is the hardware one accelerator class must have (accept.Expect).
type ClassExpectation struct {
	// Class is the accelerator class, e.g. "h100-sxm-80gb".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Class string `json:"class"`
	// GPUs is the GPU count; 0 = at least one, any number.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	GPUs int32 `json:"gpus,omitempty"`
	// Model as the driver reports it; empty = any, but every GPU the same model.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Model string `json:"model,omitempty"`
	// MinMemoryMiB per GPU; 0 = no check beyond consistency across GPUs.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinMemoryMiB int64 `json:"minMemoryMiB,omitempty"`
	// NVLinksPerGPU: active links each GPU must have; 0 = every link it reports.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	NVLinksPerGPU int32 `json:"nvlinksPerGPU,omitempty"`
	// ECC must be enabled (default true).
	// +optional
	ECC *bool `json:"ecc,omitempty"`
	// PersistenceMode must be on (default true).
	// +optional
	PersistenceMode *bool `json:"persistenceMode,omitempty"`
	// MIG mode (default disabled).
	// +kubebuilder:validation:Enum=disabled;enabled;any
	// +optional
	MIG string `json:"mig,omitempty"`
	// Fabric registration (default auto).
	// +kubebuilder:validation:Enum=auto;required;ignore
	// +optional
	Fabric string `json:"fabric,omitempty"`
	// PCIeGen and PCIeWidth: the minimum link; 0 = the link's own maximum.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=6
	// +optional
	PCIeGen int32 `json:"pcieGen,omitempty"`
	// +kubebuilder:validation:Enum=0;1;2;4;8;16;32
	// +optional
	PCIeWidth int32 `json:"pcieWidth,omitempty"`
}

// VersionMatrix lists acceptable versions (accept.Versions): each entry is one alternative
// of comma-separated comparisons (">=550.54,<600", "13.x"); a version must satisfy one.
type VersionMatrix struct {
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	Driver []string `json:"driver,omitempty"`
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	CUDA []string `json:"cuda,omitempty"`
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	Kernel []string `json:"kernel,omitempty"`
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	Containerd []string `json:"containerd,omitempty"`
}

// AcceptanceSettings is how nodes are accepted.
type AcceptanceSettings struct {
	// Layers to run; empty means every node-local layer.
	// +kubebuilder:validation:MaxItems=6
	// +listType=set
	// +optional
	Layers []Layer `json:"layers,omitempty"`
	// +optional
	Thresholds Thresholds `json:"thresholds,omitzero"`
	// +optional
	Host HostPolicy `json:"host,omitzero"`
}

// Thresholds is the one thresholds table (internal/rules.Thresholds) that acceptance and
// the agent's health monitor both judge by; unset = the default.
type Thresholds struct {
	// MaxTemperatureC: warn at or above; 0 = the GPU's slowdown threshold minus 5 °C.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=150
	// +optional
	MaxTemperatureC *int32 `json:"maxTemperatureC,omitempty"`
	// MaxPCIeReplays since driver load: warn above (default 100).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPCIeReplays *int64 `json:"maxPCIeReplays,omitempty"`
	// MaxCorrectedECC (volatile): warn above (default 1000).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxCorrectedECC *int64 `json:"maxCorrectedECC,omitempty"`
	// MaxRetiredPages: fail above, the GPU unhealthy (default 60).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRetiredPages *int32 `json:"maxRetiredPages,omitempty"`
	// MaxCorrectableRemappedRows: warn above (default 512).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxCorrectableRemappedRows *int32 `json:"maxCorrectableRemappedRows,omitempty"`
	// MaxPowerPercent of the enforced limit while the GPU is not busy: warn above (default 95).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxPowerPercent *int32 `json:"maxPowerPercent,omitempty"`
	// IgnoreXIDs: XIDs since boot that do not fail acceptance (default: the application-level ones).
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	IgnoreXIDs []int32 `json:"ignoreXIDs,omitempty"`
	// MinPerformancePercent of the baseline a measured value (HBM bandwidth, FLOP/s, PCIe)
	// must reach in the performance layer (default 90).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinPerformancePercent *int32 `json:"minPerformancePercent,omitempty"`
	// CorrectedECCPerMinute: warn when volatile corrected ECC errors grow faster between two
	// polls of the health monitor (default 100).
	// +kubebuilder:validation:Minimum=0
	// +optional
	CorrectedECCPerMinute *int64 `json:"correctedECCPerMinute,omitempty"`
	// PCIeReplaysPerMinute: warn when the PCIe replay counter grows faster between two polls
	// of the health monitor (default 8).
	// +kubebuilder:validation:Minimum=0
	// +optional
	PCIeReplaysPerMinute *int64 `json:"pcieReplaysPerMinute,omitempty"`
}

// HostPolicy is what the node image must pin (accept.HostPolicy); unset = the default.
type HostPolicy struct {
	// +kubebuilder:validation:Enum=any;enabled;passthrough;disabled
	// +optional
	IOMMU string `json:"iommu,omitempty"`
	// CgroupVersion: 2 (default), 1, or 0 = any.
	// +kubebuilder:validation:Enum=0;1;2
	// +optional
	CgroupVersion *int32 `json:"cgroupVersion,omitempty"`
	// +kubebuilder:validation:Enum=any;enabled;disabled
	// +optional
	SecureBoot string `json:"secureBoot,omitempty"`
	// +kubebuilder:validation:Enum=any;on;off
	// +optional
	SMT string `json:"smt,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinShmMiB *int64 `json:"minShmMiB,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinHugepages *int32 `json:"minHugepages,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinFreePercent *int32 `json:"minFreePercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinFreeInodesPercent *int32 `json:"minFreeInodesPercent,omitempty"`
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=4096
	// +optional
	CacheDirs []string `json:"cacheDirs,omitempty"`
	// +optional
	TimeSync *bool `json:"timeSync,omitempty"`
	// +kubebuilder:validation:Enum=auto;required;ignore
	// +optional
	NVIDIARuntime string `json:"nvidiaRuntime,omitempty"`
	// +kubebuilder:validation:Enum=warn;require;ignore
	// +optional
	KubeletReservations string `json:"kubeletReservations,omitempty"`
	// +optional
	GPUNUMALocal *bool `json:"gpuNUMALocal,omitempty"`
}

// GPUNodePolicyStatus is what the controller reports about a policy.
type GPUNodePolicyStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Nodes counts the GPU nodes this policy governs (it won the selection).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Breaker is set while the pool's circuit breaker is tripped.
	// +optional
	Breaker *BreakerStatus `json:"breaker,omitempty"`
}

// GPUNodePolicy selects GPU nodes and says what they must be and how they are accepted.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gnp,categories=gpu
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUNodePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GPUNodePolicySpec `json:"spec"`
	// +optional
	Status GPUNodePolicyStatus `json:"status,omitzero"`
}

// GPUNodePolicyList is a list of GPUNodePolicies.
//
// +kubebuilder:object:root=true
type GPUNodePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUNodePolicy `json:"items"`
}
