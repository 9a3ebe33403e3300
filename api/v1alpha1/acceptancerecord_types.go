package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AcceptanceRecordSpec is one acceptance run on one node: internal/record.Record, field for
// field where the API allows (times to the second; the duration in milliseconds).
// +kubebuilder:validation:XValidation:rule="self.finishedAt >= self.startedAt",message="finishedAt cannot be before startedAt"
// +kubebuilder:validation:XValidation:rule="self.result == 'failed' || self.summary.fail == 0",message="a passed run has no failed check"
type AcceptanceRecordSpec struct {
	// Node is the Kubernetes Node the run judged.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// AcceptanceGeneration is the GPUNode's spec.acceptanceGeneration the run answered
	// (0: run by hand).
	// +kubebuilder:validation:Minimum=0
	// +optional
	AcceptanceGeneration int64            `json:"acceptanceGeneration,omitempty"`
	Result               AcceptanceResult `json:"result"`
	StartedAt            metav1.Time      `json:"startedAt"`
	FinishedAt           metav1.Time      `json:"finishedAt"`
	// DurationMilliseconds is the time the checks took, facts gathering included.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
	// +optional
	Tool   ToolRef   `json:"tool,omitzero"`
	Policy PolicyRef `json:"policy"`
	// Backend is "nvml", or "sim" for simulated GPUs.
	// +kubebuilder:validation:Enum=nvml;sim
	Backend string `json:"backend"`
	// +kubebuilder:validation:MaxItems=6
	Layers   []Layer  `json:"layers"`
	Template Template `json:"template"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	GPUs    []RecordGPU  `json:"gpus,omitempty"`
	Summary CheckSummary `json:"summary"`
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Checks []Check `json:"checks,omitempty"`
	// Stack is the driver in force during the run.
	// +optional
	Stack RecordStack `json:"stack,omitzero"`
	// Performance is what the performance layer measured, per GPU model; absent when the
	// layer did not run or measured nothing.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Performance []ModelPerformance `json:"performance,omitempty"`
}

// ToolRef is the gpunode build that ran the checks.
type ToolRef struct {
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Commit string `json:"commit,omitempty"`
}

// PolicyRef names the policy a node was judged by.
type PolicyRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Source is the GPUNodePolicy, the policy file, or "built-in".
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Source string `json:"source,omitempty"`
	// SHA256 of the effective policy (after defaults), so two records can be compared.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
}

// TemplateField is one line of the record template: a value, or why it does not apply.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.notApplicable)",message="a template field has either a value or a notApplicable reason"
type TemplateField struct {
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Value string `json:"value,omitempty"`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	NotApplicable string `json:"notApplicable,omitempty"`
}

// Template is the node acceptance record's template, every field filled or said why not (internal/record.Template).
type Template struct {
	Node                    TemplateField `json:"node"`
	HardwareSKUSerial       TemplateField `json:"hardwareSkuSerial"`
	Firmware                TemplateField `json:"firmware"`
	OSKernel                TemplateField `json:"osKernel"`
	ContainerdKubelet       TemplateField `json:"containerdKubelet"`
	DriverCUDA              TemplateField `json:"driverCuda"`
	OperatorDevicePlugin    TemplateField `json:"operatorDevicePlugin"`
	NICRDMA                 TemplateField `json:"nicRdma"`
	GPUCountHealth          TemplateField `json:"gpuCountHealth"`
	PCIeNVLinkNVSwitch      TemplateField `json:"pcieNvlinkNvswitch"`
	DCGMDiagnostics         TemplateField `json:"dcgmDiagnostics"`
	NCCLRDMAStorageBaseline TemplateField `json:"ncclRdmaStorageBaseline"`
	RepresentativeTraining  TemplateField `json:"representativeTraining"`
	RepresentativeInference TemplateField `json:"representativeInference"`
	ResultEvidenceURI       TemplateField `json:"resultEvidenceUri"`
}

// RecordGPU is one GPU as accepted (internal/record.GPU).
type RecordGPU struct {
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// +kubebuilder:validation:MaxLength=64
	UUID string `json:"uuid"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Serial string `json:"serial,omitempty"`
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model"`
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	VBIOS string `json:"vbios,omitempty"`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	PCIBusID string `json:"pciBusId,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	PCIe string `json:"pcie,omitempty"`
	// Status is the worst status of the checks that warn or fail because of this GPU.
	Status CheckStatus `json:"status"`
}

// Check is one check's outcome (internal/accept.Result), its evidence capped.
type Check struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID    string `json:"id"`
	Layer Layer  `json:"layer"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Title  string      `json:"title,omitempty"`
	Status CheckStatus `json:"status"`
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message"`
	// Fix: what a person should do when the check does not pass.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Fix string `json:"fix,omitempty"`
	// Evidence: the facts the verdict rests on, at most MaxEvidenceLines lines of at most
	// MaxEvidenceLineLength bytes; the full list is in the node's JSON record.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	Evidence []string `json:"evidence,omitempty"`
	// EvidenceOmitted counts the lines left out.
	// +kubebuilder:validation:Minimum=0
	// +optional
	EvidenceOmitted int32 `json:"evidenceOmitted,omitempty"`
}

// AcceptanceRecord is one acceptance run on one node, published by the node's agent. It is
// immutable: the API server refuses any change to its spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ar,categories=gpu
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.node`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.spec.result`
// +kubebuilder:printcolumn:name="Pass",type=integer,JSONPath=`.spec.summary.pass`
// +kubebuilder:printcolumn:name="Warn",type=integer,JSONPath=`.spec.summary.warn`
// +kubebuilder:printcolumn:name="Fail",type=integer,JSONPath=`.spec.summary.fail`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AcceptanceRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the record; it cannot change once created.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an AcceptanceRecord is immutable: its spec cannot change"
	Spec AcceptanceRecordSpec `json:"spec"`
}

// AcceptanceRecordList is a list of AcceptanceRecords.
//
// +kubebuilder:object:root=true
type AcceptanceRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AcceptanceRecord `json:"items"`
}
