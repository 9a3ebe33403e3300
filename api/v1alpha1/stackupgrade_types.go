package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MaxUpgradeNodeStatus caps a StackUpgrade's status.nodeStatus: failed and in-progress nodes
// first, then the rest by name; the counts cover every node of the pool.
const MaxUpgradeNodeStatus = 256

// StackUpgradeSpec is one rollout of new operand versions over a StackPool's nodes: canary
// first, then waves that respect failure domains and the one safety budget.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.abort) || !oldSelf.abort || (has(self.abort) && self.abort)",message="spec.abort cannot be undone: create another StackUpgrade"
type StackUpgradeSpec struct {
	// Pool is the StackPool whose member nodes are upgraded.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.pool cannot change: create another StackUpgrade"
	Pool string `json:"pool"`
	// Target is the versions the pool's nodes run after the upgrade. Unset operands keep
	// the pool's version.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.target cannot change once the upgrade exists: abort it and create another"
	Target UpgradeTarget `json:"target"`
	// VersionMatrix is the combinations of driver, toolkit and agent that may run together.
	// The target (with the pool's versions for the operands it leaves unset) must match at
	// least one entry, or the upgrade is refused (Accepted=False, reason VersionMatrix)
	// before any node moves.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	VersionMatrix []VersionConstraint `json:"versionMatrix"`
	// Canary is the nodes upgraded first, alone, before any wave.
	// +optional
	Canary CanaryPolicy `json:"canary,omitzero"`
	// Soak is how long the canaries, then each wave, must stay healthy after their gates
	// pass before the next wave starts (default 10m).
	// +optional
	Soak *metav1.Duration `json:"soak,omitempty"`
	// Waves limits how many nodes are upgraded at once.
	// +optional
	Waves WavePolicy `json:"waves,omitzero"`
	// Drain is how a node's workloads leave it before its operands change.
	// +optional
	Drain DrainPolicy `json:"drain,omitzero"`
	// Paused stops new nodes from starting; nodes in progress finish. Setting it back to
	// false resumes.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Abort stops the upgrade for good: no new node starts, nodes in progress finish, and
	// the phase becomes Aborted.
	// +optional
	Abort bool `json:"abort,omitempty"`
}

// UpgradeTarget is the versions a pool's nodes are upgraded to.
//
// +kubebuilder:validation:XValidation:rule="has(self.driver) || has(self.toolkit) || has(self.agent) || has(self.nodeImage)",message="target names at least one of driver, toolkit, agent or nodeImage"
type UpgradeTarget struct {
	// Driver is the GPU driver version NVML must report after the upgrade, e.g. 580.95.05.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="target.driver is a driver version as NVML reports it, e.g. 580.95.05"
	// +optional
	Driver string `json:"driver,omitempty"`
	// Toolkit is the container toolkit version, e.g. 1.18.0.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="target.toolkit is a version such as 1.18.0"
	// +optional
	Toolkit string `json:"toolkit,omitempty"`
	// Agent is the gpunode agent version, e.g. v0.9.0, as its acceptance records report it.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+([-+][0-9A-Za-z.-]+)?$')",message="target.agent is a release version such as v0.9.0"
	// +optional
	Agent string `json:"agent,omitempty"`
	// NodeImage is the id of the node image that brings the stack when the driver or the
	// toolkit is Preinstalled: another system rolls the image; gpunode holds, drains,
	// waits for the node to report the target versions and gates it.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^\\\\s]+$')",message="target.nodeImage is an image id without spaces"
	// +optional
	NodeImage string `json:"nodeImage,omitempty"`
}

// VersionConstraint is one allowed combination. Each field is a constraint on one
// component; an empty field allows any version. A constraint is an exact version
// ("580.95.05"), a wildcard ("580.*") or comparisons separated by commas
// (">=580.65.06,<590"); a leading "v" is ignored.
type VersionConstraint struct {
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *((>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)(, *(>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)*$')",message="versionMatrix[].driver is a version, a wildcard such as 580.* or comparisons such as >=580.65,<590"
	// +optional
	Driver string `json:"driver,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *((>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)(, *(>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)*$')",message="versionMatrix[].toolkit is a version, a wildcard such as 1.18.* or comparisons such as >=1.17,<2"
	// +optional
	Toolkit string `json:"toolkit,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *((>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)(, *(>=|<=|>|<|=)? *v?[0-9]+([.]([0-9]+|[*]))* *)*$')",message="versionMatrix[].agent is a version, a wildcard such as v0.9.* or comparisons such as >=v0.9.0"
	// +optional
	Agent string `json:"agent,omitempty"`
}

// CanaryPolicy picks the canary nodes: those Selector matches, or else Count nodes
// (default 1) picked by the planner from nodes in service, spread over failure domains.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.count))",message="canary takes a selector or a count, not both"
type CanaryPolicy struct {
	// Count is how many canary nodes the planner picks (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Count *int32 `json:"count,omitempty"`
	// Selector picks the canaries by their Node labels (nodes of the pool only).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// WavePolicy bounds the nodes upgraded at once.
type WavePolicy struct {
	// FailureDomainKeys are Node label keys (topology.kubernetes.io/zone, a rack label, an
	// NVLink domain label): within each value of each key at most MaxPerDomain nodes are
	// unavailable at once. Nodes without a key's label share the value "".
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=317
	// +listType=set
	// +optional
	FailureDomainKeys []string `json:"failureDomainKeys,omitempty"`
	// MaxPerDomain is how many nodes of one failure domain may be unavailable at once,
	// counting every owner's holds (default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPerDomain *int32 `json:"maxPerDomain,omitempty"`
	// MaxUnavailable is a node count or a percentage of the pool (rounded up) that may be
	// unavailable at once, counting every owner's holds (acceptance, remediation,
	// operator, upgrade): the one safety budget (default 1).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="waves.maxUnavailable is a count of at least 1 or a percentage from 1% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// DrainMode is how a node's workloads leave it.
// +kubebuilder:validation:Enum=Evict;WaitFor
type DrainMode string

const (
	// DrainEvict evicts the node's pods through the Eviction API, honouring
	// PodDisruptionBudgets.
	DrainEvict DrainMode = "Evict"
	// DrainWaitFor waits until no pod matching the selector runs on the node (long
	// training jobs), then evicts the rest.
	DrainWaitFor DrainMode = "WaitFor"
)

// DrainPolicy is how a node is drained before its operands change.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'WaitFor' || has(self.podSelector)",message="drain.podSelector is required when drain.mode is WaitFor: it names the pods waited for"
// +kubebuilder:validation:XValidation:rule="self.mode == 'WaitFor' || !has(self.podSelector)",message="drain.podSelector is set only when drain.mode is WaitFor"
type DrainPolicy struct {
	// Mode is Evict (default) or WaitFor.
	// +kubebuilder:default=Evict
	// +optional
	Mode DrainMode `json:"mode,omitempty"`
	// PodSelector picks the pods WaitFor waits for (any namespace).
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// Timeout is how long the drain may take (default 1h); past it the node's upgrade
	// fails, the node is released untouched and the upgrade halts.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// UpgradePhase is where a StackUpgrade stands.
// +kubebuilder:validation:Enum=Pending;Refused;Canary;Soaking;Rolling;Paused;Halted;Aborted;Complete
type UpgradePhase string

// Phases of a StackUpgrade.
const (
	UpgradePending  UpgradePhase = "Pending"
	UpgradeRefused  UpgradePhase = "Refused"
	UpgradeCanary   UpgradePhase = "Canary"
	UpgradeSoaking  UpgradePhase = "Soaking"
	UpgradeRolling  UpgradePhase = "Rolling"
	UpgradePaused   UpgradePhase = "Paused"
	UpgradeHalted   UpgradePhase = "Halted"
	UpgradeAborted  UpgradePhase = "Aborted"
	UpgradeComplete UpgradePhase = "Complete"
)

// NodeUpgradePhase is where one node's upgrade stands.
// +kubebuilder:validation:Enum=Pending;Draining;Upgrading;Verifying;Done;Failed
type NodeUpgradePhase string

// Phases of one node's upgrade.
const (
	NodeUpgradePending   NodeUpgradePhase = "Pending"
	NodeUpgradeDraining  NodeUpgradePhase = "Draining"
	NodeUpgradeUpgrading NodeUpgradePhase = "Upgrading"
	NodeUpgradeVerifying NodeUpgradePhase = "Verifying"
	NodeUpgradeDone      NodeUpgradePhase = "Done"
	NodeUpgradeFailed    NodeUpgradePhase = "Failed"
)
