package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RemediationStep is one rung of the recovery ladder, or the evidence capture that comes
// before any destructive rung. The controller carries out restart-app (eviction) and
// reload-driver (deleting the driver pod); the node's agent carries out capture-evidence,
// reset-gpu, reboot-node and power-cycle when the controller asks through spec.remediation.
// +kubebuilder:validation:Enum=capture-evidence;restart-app;reset-gpu;reload-driver;reboot-node;power-cycle
type RemediationStep string

// Remediation steps, least disruptive first (capture-evidence is not a rung).
const (
	StepCaptureEvidence RemediationStep = "capture-evidence"
	StepRestartApp      RemediationStep = "restart-app"
	StepResetGPU        RemediationStep = "reset-gpu"
	StepReloadDriver    RemediationStep = "reload-driver"
	StepRebootNode      RemediationStep = "reboot-node"
	StepPowerCycle      RemediationStep = "power-cycle"
)

// StepOutcome is how a step ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Refused;TimedOut
type StepOutcome string

// Step outcomes. Refused: the agent would not start it (a process still uses the GPU, no
// command configured); TimedOut: the controller gave up waiting for an answer.
const (
	OutcomeSucceeded StepOutcome = "Succeeded"
	OutcomeFailed    StepOutcome = "Failed"
	OutcomeRefused   StepOutcome = "Refused"
	OutcomeTimedOut  StepOutcome = "TimedOut"
)

// Limits of the remediation fields.
const (
	// MaxRemediationHistory is how many step attempts status.remediation keeps.
	MaxRemediationHistory = 32
	// MaxEvidencePods is how many pods an evidence summary names.
	MaxEvidencePods = 64
)

// RemediationRequest asks the node's agent to carry out one step. The controller raises ID
// for every new request; the agent answers each ID at most once, in status.remediationAnswer.
type RemediationRequest struct {
	// ID numbers the requests of this node; it only goes up.
	// +kubebuilder:validation:Minimum=1
	ID int64 `json:"id"`
	// Step is the agent's part: capture-evidence, reset-gpu, reboot-node or power-cycle.
	// +kubebuilder:validation:XValidation:rule="self in ['capture-evidence','reset-gpu','reboot-node','power-cycle']",message="the agent carries out capture-evidence, reset-gpu, reboot-node and power-cycle only"
	Step RemediationStep `json:"step"`
	// GPUs the step is for, by UUID; empty means the whole node.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=set
	// +optional
	GPUs []string `json:"gpus,omitempty"`
	// Reason says why, for the evidence bundle and the agent's log.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RemediationAnswer is the agent's answer to the latest request it carried out.
type RemediationAnswer struct {
	// ID is the request answered.
	// +kubebuilder:validation:Minimum=1
	ID int64 `json:"id"`
	// Step is the request's step.
	Step    RemediationStep `json:"step"`
	Outcome StepOutcome     `json:"outcome"`
	// Message explains the outcome to a person.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// Started and Finished bound the step on the node's clock.
	Started  metav1.Time `json:"started"`
	Finished metav1.Time `json:"finished"`
	// BootID is the node's boot ID when the answer was written (a reboot changes it).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	BootID string `json:"bootID,omitempty"`
	// Evidence is the bundle a capture-evidence step wrote.
	// +optional
	Evidence *EvidenceSummary `json:"evidence,omitempty"`
}

// EvidenceSummary identifies an evidence bundle on the node (internal/evidence.Summary).
type EvidenceSummary struct {
	// SHA256 of the bundle archive, hex.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
	// Path of the bundle on the node.
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
	// +kubebuilder:validation:Minimum=0
	SizeBytes int64       `json:"sizeBytes"`
	Created   metav1.Time `json:"created"`
	// Trigger is the finding the bundle was captured for.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Trigger string `json:"trigger,omitempty"`
	// Pods that used the affected GPUs ("namespace/name"), as the kubelet reported them.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +optional
	Pods []string `json:"pods,omitempty"`
}

// RemediationPolicy is how a pool's faulty nodes are isolated and recovered. Unset fields
// take internal/remediation's defaults (docs/remediation.md).
type RemediationPolicy struct {
	// Disabled turns automatic remediation off for the pool: faults still hold nodes whose
	// GPUs cannot run work, and nothing else happens.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Steps tunes each rung of the ladder; a rung not listed takes the defaults.
	// +kubebuilder:validation:MaxItems=6
	// +listType=map
	// +listMapKey=step
	// +optional
	Steps []StepPolicy `json:"steps,omitempty"`
	// Budget bounds how many of the pool's nodes may be held at once.
	// +optional
	Budget *BudgetPolicy `json:"budget,omitempty"`
	// Breaker pauses automation when too many nodes report new faults at once.
	// +optional
	Breaker *BreakerPolicy `json:"breaker,omitempty"`
	// DrainTimeout bounds an eviction drain (default 10m).
	// +optional
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// DriverPodSelector finds the driver pod that reload-driver deletes on the node.
	// +optional
	DriverPodSelector *PodSelector `json:"driverPodSelector,omitempty"`
}

// StepPolicy tunes one rung of the ladder.
type StepPolicy struct {
	Step RemediationStep `json:"step"`
	// Disabled skips the rung. How the agent resets a GPU, reboots or power-cycles its node
	// is the agent's configuration (gpunode agent --reset-command, --reboot-command,
	// --power-cycle-command): it depends on how the agent is deployed, not on the pool.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// MaxAttempts within Window before the ladder escalates past this rung.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
	// Timeout is how long the controller waits for the step's outcome.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Backoff before the rung is tried again.
	// +optional
	Backoff *metav1.Duration `json:"backoff,omitempty"`
}

// BudgetPolicy bounds held nodes, counting every owner's holds.
type BudgetPolicy struct {
	// MaxUnavailable is a node count or a percentage of the pool (default 10%, at least 1).
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// FailureDomainKey is a node label (topology.kubernetes.io/zone, a rack label): the
	// budget applies within each of its values as well as to the whole pool.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	FailureDomainKey string `json:"failureDomainKey,omitempty"`
}

// BreakerPolicy trips when more than Threshold of the pool report new faults within Window.
type BreakerPolicy struct {
	// Threshold is a node count or a percentage of the pool (default 20%).
	// +kubebuilder:validation:XIntOrString
	// +optional
	Threshold *intstr.IntOrString `json:"threshold,omitempty"`
	// Window (default 10m).
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
}

// PodSelector is pods by namespace and labels.
type PodSelector struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitzero"`
}

// RemediationStatus is the controller's record of a node's remediation: what it is doing,
// what it did, and why it waits. It is what a restarted controller resumes from: a step
// with a Started time and no outcome is never started again, only awaited or timed out.
type RemediationStatus struct {
	// Phase is the lifecycle phase remediation's state gives the node (Suspect,
	// Quarantined, Recovering, Accepting, Maintenance); absent when remediation has no
	// claim on it. The acceptance controller turns it, with the holds and the acceptance
	// verdict, into status.phase (internal/lifecycle).
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Trigger is the fault that started this remediation, e.g. "gpu 3: xid 79".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Trigger string `json:"trigger,omitempty"`
	// FaultSince is when the fault was first seen.
	// +optional
	FaultSince *metav1.Time `json:"faultSince,omitempty"`
	// Current is the step in progress; absent when none is.
	// +optional
	Current *StepAttempt `json:"current,omitempty"`
	// Waiting says why no step runs now (budget, breaker, backoff), for a person.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Waiting string `json:"waiting,omitempty"`
	// Evidence is the latest bundle captured for this remediation.
	// +optional
	Evidence *EvidenceSummary `json:"evidence,omitempty"`
	// History holds the latest step attempts, oldest first.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	History []StepAttempt `json:"history,omitempty"`
}

// StepAttempt is one step, started and perhaps finished.
type StepAttempt struct {
	Step RemediationStep `json:"step"`
	// GPUs the step was for, by UUID; empty means the whole node.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	GPUs []string `json:"gpus,omitempty"`
	// RequestID is the agent request carrying the step (0 for the controller's own steps).
	// +kubebuilder:validation:Minimum=0
	// +optional
	RequestID int64       `json:"requestID,omitempty"`
	Started   metav1.Time `json:"started"`
	// Finished and Outcome are set once the step ended.
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	// +optional
	Outcome StepOutcome `json:"outcome,omitempty"`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// BreakerStatus is a pool's circuit breaker, tripped.
type BreakerStatus struct {
	// TrippedAt is when automation paused; only an explicit resume (the policy annotation
	// gpunode.dev/resume-remediation set to a later RFC 3339 time) restarts it.
	TrippedAt metav1.Time `json:"trippedAt"`
	// Faulting counts the nodes that reported new faults within the window; Nodes the pool.
	// +kubebuilder:validation:Minimum=0
	Faulting int32 `json:"faulting"`
	// +kubebuilder:validation:Minimum=0
	Nodes int32 `json:"nodes"`
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
}
