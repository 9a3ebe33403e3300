package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StackUpgradeStatus is what the upgrade controller reports (field manager gpunode-upgrade).
type StackUpgradeStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Phase UpgradePhase `json:"phase,omitempty"`
	// Conditions: Accepted, Progressing, Halted, Complete.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// From is the pool's versions when the upgrade was accepted: the rollback target.
	// +optional
	From UpgradeVersions `json:"from,omitzero"`
	// Wave is the current wave: 0 while the canaries run, then 1, 2, ...
	// +kubebuilder:validation:Minimum=0
	// +optional
	Wave int32 `json:"wave,omitempty"`
	// WaveStartedAt is when the current wave started.
	// +optional
	WaveStartedAt *metav1.Time `json:"waveStartedAt,omitempty"`
	// Nodes counts the pool's member nodes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// Upgraded counts the members that run the target and passed their gate.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Upgraded int32 `json:"upgraded,omitempty"`
	// InProgress counts the members held by this upgrade.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InProgress int32 `json:"inProgress,omitempty"`
	// Failed counts the members whose gate failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Progress is Upgraded of Nodes in one line, e.g. "12/200".
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Progress string `json:"progress,omitempty"`
	// NodeStatus is per node: failed and in-progress nodes first, then by name, at most
	// MaxUpgradeNodeStatus (256); NodeStatusOmitted counts the nodes left out.
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	// +optional
	NodeStatus []UpgradeNodeStatus `json:"nodeStatus,omitempty"`
	// NodeStatusOmitted counts the nodes nodeStatus leaves out (the cap).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NodeStatusOmitted int32 `json:"nodeStatusOmitted,omitempty"`
}

// UpgradeVersions is a set of operand versions.
type UpgradeVersions struct {
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Driver string `json:"driver,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Toolkit string `json:"toolkit,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Agent string `json:"agent,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	NodeImage string `json:"nodeImage,omitempty"`
}

// UpgradeNodeStatus is one node's upgrade.
type UpgradeNodeStatus struct {
	// Name is the Node's name.
	// +kubebuilder:validation:MaxLength=253
	Name  string           `json:"name"`
	Phase NodeUpgradePhase `json:"phase"`
	// Canary is true for a canary node.
	// +optional
	Canary bool `json:"canary,omitempty"`
	// Wave is the wave the node started in (0: the canaries).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Wave int32 `json:"wave,omitempty"`
	// From is the versions the node ran before.
	// +optional
	From UpgradeVersions `json:"from,omitzero"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when its gate passed or failed.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// AcceptanceRecord is the record whose verdict was the gate.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	AcceptanceRecord string `json:"acceptanceRecord,omitempty"`
	// Message says what the node waits for, or why its gate failed.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// StackUpgrade conditions, written by the upgrade controller (field manager gpunode-upgrade).
const (
	// ConditionUpgradeAccepted: False with the reason (VersionMatrix, NoNodes, Overlap,
	// PoolNotFound) when the upgrade is refused before any node moves.
	ConditionUpgradeAccepted = "Accepted"
	// ConditionUpgradeProgressing: True while nodes may start or are in progress.
	ConditionUpgradeProgressing = "Progressing"
	// ConditionUpgradeHalted: True when a node's gate failed; no new node starts.
	ConditionUpgradeHalted = "Halted"
	// ConditionUpgradeComplete: True when every member runs the target.
	ConditionUpgradeComplete = "Complete"
)

// Reasons of the StackUpgrade conditions.
const (
	ReasonUpgradeVersionMatrix = "VersionMatrix"
	ReasonUpgradeNoNodes       = "NoNodes"
	ReasonUpgradeOverlap       = "Overlap"
	ReasonUpgradePoolNotFound  = "PoolNotFound"
	ReasonUpgradeValid         = "Valid"
	ReasonUpgradeGateFailed    = "GateFailed"
)

// StackUpgrade rolls new driver, toolkit or agent versions (or a node image) over a
// StackPool's nodes: canaries first, a soak, then waves bounded per failure domain and by
// the one safety budget. Each node is held (owner upgrade), drained, moved to the target,
// gated on its acceptance passing again, then released. A failed gate halts the upgrade.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=su,categories=gpu
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Upgraded",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Wave",type=integer,JSONPath=`.status.wave`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.target.driver`
// +kubebuilder:printcolumn:name="Toolkit",type=string,JSONPath=`.spec.target.toolkit`,priority=1
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StackUpgrade struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec StackUpgradeSpec `json:"spec"`
	// +optional
	Status StackUpgradeStatus `json:"status,omitzero"`
}

// StackUpgradeList is a list of StackUpgrades.
//
// +kubebuilder:object:root=true
type StackUpgradeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StackUpgrade `json:"items"`
}
