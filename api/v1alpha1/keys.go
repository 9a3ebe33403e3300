package v1alpha1

// Label, taint and annotation keys gpunode owns. Workloads select on the labels; the taints
// keep work off a node that is not in service.
const (
	// Group is the API group of every gpunode kind.
	Group = "gpunode.dev"

	// TaintNotAccepted holds a new GPU node until its acceptance passes (NoSchedule).
	TaintNotAccepted = "gpunode.dev/not-accepted"
	// TaintUnschedulable stays on a node while any hold remains (NoSchedule); its value is
	// the reason of the oldest hold.
	TaintUnschedulable = "gpunode.dev/unschedulable"

	// AnnotationHolds is the node's holds, as JSON: [{"owner":...,"reason":...,"since":...}].
	AnnotationHolds = "gpunode.dev/holds"
	// AnnotationRelease asks the owner of the named hold (or "maintenance") to release it.
	AnnotationRelease = "gpunode.dev/release"
	// AnnotationResumeRemediation, on a GPUNodePolicy, resumes automation after the pool's
	// circuit breaker tripped: its value is an RFC 3339 time later than the trip.
	AnnotationResumeRemediation = "gpunode.dev/resume-remediation"
	// AnnotationRemediationState, on a GPUNode, is the remediation controller's decision
	// state (internal/remediation.State as JSON); its "phase" is the node's lifecycle phase
	// while remediation has a claim on the node.
	AnnotationRemediationState = "gpunode.dev/remediation-state"

	// LabelAcceleratorClass and the other platform labels are written by the agent.
	LabelAcceleratorClass = "gpunode.dev/accelerator-class"
	// LabelNode, on an AcceptanceRecord, is the node it is of (spec.node): the controller
	// watches records by their metadata only and finds the node from this label.
	LabelNode = "gpunode.dev/node"
	// LabelPhase is the node's lifecycle phase, for selection and dashboards.
	LabelPhase = "gpunode.dev/phase"

	// FieldManagerAgent, FieldManagerAcceptance and FieldManagerRemediation are the
	// server-side-apply field managers of the agent and the two controllers: each applies
	// exactly the fields docs/architecture.md's ownership table gives it, and no other
	// component writes them.
	FieldManagerAgent       = "gpunode-agent"
	FieldManagerAcceptance  = "gpunode-acceptance"
	FieldManagerRemediation = "gpunode-remediation"
	// FieldManagerAgentHeartbeat applies the agent's heartbeat (status.agent) alone, so
	// that the agent's status apply, which leaves it out, never removes it.
	FieldManagerAgentHeartbeat = "gpunode-agent-heartbeat"
)

// AcceptanceReasonReleased is spec.acceptanceReason when a person released the node from
// Maintenance (gpunode release, or the gpunode.dev/release annotation): the agent then
// treats its GPUs as serviced (the health engine's "serviced" recovery) before it runs
// acceptance, so that a passing run can clear a GPU a person repaired.
const AcceptanceReasonReleased = "released-from-maintenance"

// Hold owners that ship with gpunode (an operator's own holds use any other owner).
const (
	HoldOwnerAcceptance  = "acceptance"
	HoldOwnerRemediation = "remediation"
	HoldOwnerUpgrade     = "upgrade"
	HoldOwnerOperator    = "operator"
	// HoldOwnerLiveness holds a node whose agent is lost (reason HoldReasonAgentLost): the
	// acceptance controller places and releases it from the agent's heartbeat.
	HoldOwnerLiveness = "liveness"
	// HoldOwnerGPUAPI holds a node whose GPU API (device plugin or DRA) is switching: the
	// acceptance controller places it and releases it once the node is accepted on the new
	// API. The node's phase is then Upgrading.
	HoldOwnerGPUAPI = "gpu-api"
)

// HoldReasonAgentLost is the reason of the liveness hold, and so the value of the
// gpunode.dev/unschedulable taint while it is the node's oldest hold.
const HoldReasonAgentLost = "agent-lost"

// Keys and values of stack pools (StackPool): the stack controller writes them.
const (
	// FieldManagerStack is the stack controller's field manager: the gpunode.dev/stack-pool
	// label of Nodes, the operand DaemonSets and StackPool status.
	FieldManagerStack = "gpunode-stack"
	// HoldOwnerStack holds a node whose stack is not ready (HoldReasonStackNotReady) or
	// that two StackPools select (HoldReasonPoolConflict).
	HoldOwnerStack = "stack"
	// HoldReasonPoolConflict starts the reason of the stack hold of a node matched by two
	// or more StackPools; the rest of the reason names them.
	HoldReasonPoolConflict = "pool-conflict"
	// HoldReasonStackNotReady starts the reason of the stack hold of a member node whose
	// driver or toolkit is not ready; the rest of the reason says what is missing.
	HoldReasonStackNotReady = "stack-not-ready"
	// LabelStackPool, on a Node, is the StackPool it belongs to (matched by that pool
	// alone); the pool's operand DaemonSets select nodes by it. On an operand DaemonSet
	// and its pods, it is the pool they are of.
	LabelStackPool = "gpunode.dev/stack-pool"
	// LabelOperandVersion, on an operand DaemonSet and its pods, is the operand version
	// of their template.
	LabelOperandVersion = "gpunode.dev/operand-version"
)

// FieldManagerUpgrade is the upgrade controller's field manager: StackUpgrade status.
const FieldManagerUpgrade = "gpunode-upgrade"
