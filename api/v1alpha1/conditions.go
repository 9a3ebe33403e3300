package v1alpha1

// Condition types gpunode sets, with their reasons. Each type has one writer, named in
// docs/architecture.md's field-ownership table (a test compares the table with the
// managedFields of a fleet driven through its lifecycle).

// GPUNode conditions written by the agent (field manager gpunode-agent), and the Node
// condition it sets beside the kubelet's.
const (
	// ConditionGPUHealthy: True while every GPU is healthy; on the GPUNode and on its Node.
	ConditionGPUHealthy = "GPUHealthy"
)

// GPUNode conditions written by the acceptance controller (field manager gpunode-acceptance).
const (
	// ConditionPolicySelected: True when a policy governs the node: a GPUNodePolicy
	// (reason Selected) or, when none selects it, the built-in defaults (BuiltInDefaults).
	ConditionPolicySelected = "PolicySelected"
	// ConditionAcceptanceRequested: True while a request is waiting for the agent's answer.
	ConditionAcceptanceRequested = "AcceptanceRequested"
	// ConditionAccepted is the node's one acceptance verdict: the controller's judgement of
	// the latest answered run (the record against the policy, and layer L2 when the policy
	// gates on it). It replaces the agent's former Node condition GPUNodeAccepted, which
	// the agent removes from the Node at its next write.
	ConditionAccepted = "Accepted"
	// ConditionKubernetesInventory: layer L2, what Kubernetes sees of the node; True when
	// no L2 check failed. Its message starts with "record <name>:" and lists every check
	// that did not pass.
	ConditionKubernetesInventory = "KubernetesInventory"
	// ConditionAgentHeartbeat: True while the agent's heartbeat is fresh, False while the
	// agent is lost, Unknown when it is not judged.
	ConditionAgentHeartbeat = "AgentHeartbeat"
	// ConditionInService: True while the phase is InService; otherwise False with the
	// phase as its reason and what keeps the node out of service as its message. It is
	// computed with the phase, by the same function (internal/lifecycle).
	ConditionInService = "InService"
)

// Reasons of PolicySelected.
const (
	ReasonSelected        = "Selected"
	ReasonBuiltInDefaults = "BuiltInDefaults"
)

// Reasons of AcceptanceRequested.
const (
	ReasonNewNode             = "NewNode"
	ReasonPolicyChanged       = "PolicyChanged"
	ReasonInventoryChanged    = "InventoryChanged"
	ReasonDriverChanged       = "DriverChanged"
	ReasonBasisUnknown        = "BasisUnknown"
	ReasonWaitingForInventory = "WaitingForInventory"
	ReasonWaitingForStack     = "WaitingForStack"
	ReasonPending             = "Pending"
	ReasonAnswered            = "Answered"
)

// Reasons of Accepted.
const (
	ReasonNeverRun          = "NeverRun"
	ReasonPassed            = "Passed"
	ReasonRunFailed         = "RunFailed"
	ReasonExpectationNotMet = "ExpectationNotMet"
	ReasonRecordMismatch    = "RecordMismatch"
	// ReasonKubernetesCheckFailed: the record passed, but an L2 check failed under a policy
	// whose layers include kubernetes.
	ReasonKubernetesCheckFailed = "KubernetesCheckFailed"
)

// Reasons of KubernetesInventory.
const (
	ReasonKubernetesPassed = "Passed"
	ReasonKubernetesWarned = "Warned"
	ReasonKubernetesFailed = "Failed"
)

// Reasons of AgentHeartbeat.
const (
	ReasonHeartbeatFresh        = "HeartbeatFresh"
	ReasonAgentLost             = "AgentLost"
	ReasonWaitingForHealthyGPUs = "WaitingForHealthyGPUs"
	ReasonNoHeartbeat           = "NoHeartbeat"
	ReasonHeartbeatNotChecked   = "HeartbeatNotChecked"
)

// ReasonInService is the InService condition's reason while it is True; while it is
// False its reason is the phase.
const ReasonInService = "InService"

// GPUNodePolicy condition written by the remediation controller (field manager
// gpunode-remediation).
const (
	// ConditionRemediationPaused says whether the pool's circuit breaker paused automation:
	// True with reason CircuitBreakerOpen while it is tripped, False with reason Resumed
	// once a person resumed it.
	ConditionRemediationPaused = "RemediationPaused"

	ReasonCircuitBreakerOpen = "CircuitBreakerOpen"
	ReasonResumed            = "Resumed"
)

// ReasonRequestRefused is the reason of the Warning Event on a GPUNode or GPUNodePolicy
// whose release or resume annotation the remediation controller refused: not an RFC 3339
// time, or stamped further in the future than the allowed clock skew. The Event names the
// annotation, its value and why; the request counts as never made.
const ReasonRequestRefused = "RequestRefused"

// Node condition types gpunode once wrote and removes: the agent's apply no longer
// carries them, so server-side apply drops them from the Node at its next write.
const (
	// RetiredConditionGPUNodeAccepted was the agent's Node condition with the raw result
	// of the last run; ConditionAccepted on the GPUNode is the verdict.
	RetiredConditionGPUNodeAccepted = "GPUNodeAccepted"
)
