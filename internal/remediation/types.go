package remediation

import (
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// Phase is remediation's view of a node's lifecycle phase. The values are those of
// api/v1alpha1.Phase, so the reconciler converts with v1alpha1.Phase(p).
type Phase string

// Phases remediation decides. PhaseNone means remediation has no claim on the node: the
// node is in service as far as remediation knows (another owner may still hold it).
const (
	PhaseNone        Phase = ""
	PhaseSuspect     Phase = "Suspect"
	PhaseQuarantined Phase = "Quarantined"
	PhaseRecovering  Phase = "Recovering"
	PhaseAccepting   Phase = "Accepting"
	PhaseMaintenance Phase = "Maintenance"
)

// Step is a rung of the recovery ladder.
type Step string

// The ladder, least disruptive first. StepMaintenance is not a step but the end of the
// ladder: terminal until a person releases the node.
const (
	StepRestartApp   Step = "restart-app"
	StepResetGPU     Step = "reset-gpu"
	StepReloadDriver Step = "reload-driver"
	StepRebootNode   Step = "reboot-node"
	StepPowerCycle   Step = "power-cycle"
	StepMaintenance  Step = "maintenance"
)

// Ladder lists the steps in the order they are tried.
var Ladder = []Step{StepRestartApp, StepResetGPU, StepReloadDriver, StepRebootNode, StepPowerCycle}

// Rank orders steps: restart-app 0 ... power-cycle 4, maintenance 5; unknown -1.
func (s Step) Rank() int {
	for i, v := range Ladder {
		if v == s {
			return i
		}
	}
	if s == StepMaintenance {
		return len(Ladder)
	}
	return -1
}

// Destructive reports whether the step destroys state evidence lives in (a reset, a driver
// reload, a reboot, a power cycle): evidence is captured before it.
func (s Step) Destructive() bool { return s.Rank() >= StepResetGPU.Rank() && s != StepMaintenance }

// PerGPU reports whether the step acts on named GPUs only (restart-app, reset-gpu); the
// others act on the whole node.
func (s Step) PerGPU() bool { return s == StepRestartApp || s == StepResetGPU }

// Recovery is the health.RecoveryKind the agent feeds into each touched GPU's health state
// once the step has been carried out ("" for restart-app, which recovers nothing by the
// health engine's rules: a passing check alone clears a degraded GPU).
func (s Step) Recovery() health.RecoveryKind {
	switch s {
	case StepResetGPU:
		return health.RecoveryGPUReset
	case StepReloadDriver:
		return health.RecoveryDriverReload
	case StepRebootNode, StepPowerCycle:
		return health.RecoveryNodeReboot
	}
	return ""
}

// StepFor is the first step for a required action: none, restart-app and drain-p2p start
// at restart-app, reset-gpu, reload-driver and reboot-node at their own step, service (and
// an action this package does not know) at maintenance.
func StepFor(a fault.Action) Step {
	switch a {
	case fault.ActionNone, fault.ActionRestartApp, fault.ActionDrainP2P:
		return StepRestartApp
	case fault.ActionResetGPU:
		return StepResetGPU
	case fault.ActionReloadDriver:
		return StepReloadDriver
	case fault.ActionRebootNode:
		return StepRebootNode
	}
	return StepMaintenance
}

// OwnerRemediation is the owner of remediation's hold (api/v1alpha1.HoldOwnerRemediation).
const OwnerRemediation = "remediation"

// CauseDriverNotLoaded is the node-level fault of a node whose GPU driver is not loaded.
const CauseDriverNotLoaded = "driver-not-loaded"

// Facts is everything one decision reads about one node. The reconciler builds it from the
// Node, its GPUNode and the node's persisted remediation State.
type Facts struct {
	// Node is the node's name; Pool the governing policy's name; Domain the value of the
	// policy's failure-domain label on the node ("" when unset or absent).
	Node   string `json:"node"`
	Pool   string `json:"pool,omitempty"`
	Domain string `json:"domain,omitempty"`
	// GPUs is each GPU's health as the agent publishes it.
	GPUs []GPU `json:"gpus,omitempty"`
	// NodeFaults are faults of the node rather than of one GPU (driver not loaded).
	NodeFaults []NodeFault `json:"nodeFaults,omitempty"`
	// Holds on the node, every owner's.
	Holds []Hold `json:"holds,omitempty"`
	// Acceptance is the node's acceptance request and latest answer.
	Acceptance Acceptance `json:"acceptance"`
	// Outcome is the latest step outcome the executor (agent or controller) reported.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Evidence is the latest evidence bundle the agent recorded.
	Evidence *Evidence `json:"evidence,omitempty"`
	// ReleaseRequested is when a person last asked for the node's release from
	// maintenance (annotation gpunode.dev/release or `gpunode release`); zero for never.
	ReleaseRequested time.Time `json:"releaseRequested,omitzero"`
	// State is remediation's persisted state: what earlier decisions started.
	State State `json:"state"`
}

// GPU is one GPU's health (health.State) plus what runs on it.
type GPU struct {
	Index  int           `json:"index"`
	UUID   string        `json:"uuid,omitempty"`
	Health health.Health `json:"health"`
	// Action is required while Unhealthy, advisory while Degraded.
	Action        fault.Action `json:"action"`
	Causes        []string     `json:"causes,omitempty"`
	Since         time.Time    `json:"since"`
	AwaitingCheck bool         `json:"awaitingCheck,omitempty"`
	// Pods is how many pods hold the GPU (kubelet pod-resources); Processes how many
	// compute processes use it (the driver's list): a reset needs both at zero.
	Pods      int `json:"pods,omitempty"`
	Processes int `json:"processes,omitempty"`
}

// Lost reports whether the GPU does not answer (fell off the bus, unavailable): the node
// cannot be trusted to run work until it is rebooted.
func (g GPU) Lost() bool {
	for _, c := range g.Causes {
		if c == health.CauseGPULost || c == health.CauseGPUUnavailable {
			return true
		}
	}
	return false
}

// NodeFault is a fault of the node as a whole.
type NodeFault struct {
	Cause  string       `json:"cause"`
	Action fault.Action `json:"action"`
	Since  time.Time    `json:"since"`
	// Fatal: the node cannot run GPU work at all (driver not loaded).
	Fatal bool `json:"fatal,omitempty"`
}

// Hold is one owner's hold on the node (nodeops.Hold).
type Hold struct {
	Owner  string    `json:"owner"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// Acceptance is the node's acceptance request and latest answer (GPUNode
// spec.acceptanceGeneration and status.lastAcceptance).
type Acceptance struct {
	// Requested is the generation last requested (spec.acceptanceGeneration).
	Requested int64 `json:"requested,omitempty"`
	// Generation is the generation the latest run answered; Passed its verdict; At when.
	Generation int64     `json:"generation,omitempty"`
	Passed     bool      `json:"passed,omitempty"`
	At         time.Time `json:"at,omitzero"`
}

// OutcomeResult is how a step ended, as its executor reports it.
type OutcomeResult string

// Outcome results (the values of api/v1alpha1.StepOutcome). Anything but Succeeded counts
// as a failure of the step.
const (
	OutcomeSucceeded OutcomeResult = "Succeeded"
	OutcomeFailed    OutcomeResult = "Failed"
	// OutcomeRefused: the executor would not start it (a process still uses the GPU, no
	// command configured).
	OutcomeRefused OutcomeResult = "Refused"
)

// UUIDs maps GPU indices (as in Action.GPUs) to the GPUs' UUIDs, in order; an index the
// facts do not list is left out.
func (f Facts) UUIDs(indices []int) []string {
	var out []string
	for _, i := range indices {
		for _, g := range f.GPUs {
			if g.Index == i {
				out = append(out, g.UUID)
				break
			}
		}
	}
	return out
}

// Outcome is the executor's report on a request: the ID of the request it answers.
type Outcome struct {
	ID     int64         `json:"id"`
	Result OutcomeResult `json:"result"`
	At     time.Time     `json:"at"`
	Detail string        `json:"detail,omitempty"`
}

// Evidence is an evidence bundle the agent recorded for a capture request.
type Evidence struct {
	ID     int64     `json:"id"`
	SHA256 string    `json:"sha256"`
	At     time.Time `json:"at"`
}
