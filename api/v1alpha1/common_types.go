package v1alpha1

// Limits on list and string sizes. They keep objects well under etcd's size limit and let
// the API server bound the cost of the CEL rules; writers (the agent) cap to them.
const (
	// MaxGPUs is the most GPUs one node lists.
	MaxGPUs = 64
	// MaxChecks is the most checks one AcceptanceRecord holds.
	MaxChecks = 256
	// MaxEvidenceLines per check; the rest are counted in EvidenceOmitted.
	MaxEvidenceLines = 16
	// MaxEvidenceLineLength in bytes; a longer line is cut.
	MaxEvidenceLineLength = 512
	// MaxCauses per GPU, as internal/health.MaxCauses; more are counted in MoreCauses.
	MaxCauses = 32
	// MaxHolds on one node.
	MaxHolds = 16
)

// Layer is an acceptance layer (internal/accept.Layer).
// +kubebuilder:validation:Enum=host;hardware;kubernetes;container;interconnect;performance;frameworks
type Layer string

// CheckStatus is a check's verdict (internal/accept.Status).
// +kubebuilder:validation:Enum=pass;skip;warn;fail
type CheckStatus string

// Health is a GPU's (or, worst of its GPUs, a node's) health (internal/health.Health).
// +kubebuilder:validation:Enum=healthy;degraded;unhealthy
type Health string

// Healths, best first.
const (
	HealthHealthy   Health = "healthy"
	HealthDegraded  Health = "degraded"
	HealthUnhealthy Health = "unhealthy"
)

// Action is what must happen to clear a fault (internal/fault.Action), least disruptive first.
// +kubebuilder:validation:Enum=none;restart-app;drain-p2p;reset-gpu;reload-driver;reboot-node;service
type Action string

// AcceptanceResult is the outcome of an acceptance run (internal/record.Result*).
// +kubebuilder:validation:Enum=passed;failed
type AcceptanceResult string

// Acceptance results.
const (
	AcceptancePassed AcceptanceResult = "passed"
	AcceptanceFailed AcceptanceResult = "failed"
)

// CheckSummary counts check results by status (internal/accept.Summary).
type CheckSummary struct {
	// +kubebuilder:validation:Minimum=0
	Pass int32 `json:"pass"`
	// +kubebuilder:validation:Minimum=0
	Warn int32 `json:"warn"`
	// +kubebuilder:validation:Minimum=0
	Fail int32 `json:"fail"`
	// +kubebuilder:validation:Minimum=0
	Skip int32 `json:"skip"`
}
