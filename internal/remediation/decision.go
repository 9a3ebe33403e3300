package remediation

import "time"

// HoldOp is what to do with remediation's hold on the node.
type HoldOp string

// Hold operations.
const (
	HoldKeep    HoldOp = ""
	HoldPlace   HoldOp = "place"
	HoldRelease HoldOp = "release"
)

// ActionKind is something the reconciler (or, through it, the agent) carries out.
type ActionKind string

// Action kinds.
const (
	// ActionCaptureEvidence asks the agent for an evidence bundle (request ID).
	ActionCaptureEvidence ActionKind = "capture-evidence"
	// ActionEvictPods evicts, through the Eviction API, the pods using the GPUs (all GPU
	// pods of the node when GPUs is empty). It is repeated while pods remain.
	ActionEvictPods ActionKind = "evict-pods"
	// The steps the executor carries out once per request ID.
	ActionResetGPU     ActionKind = "reset-gpu"
	ActionReloadDriver ActionKind = "reload-driver"
	ActionRebootNode   ActionKind = "reboot-node"
	ActionPowerCycle   ActionKind = "power-cycle"
	// ActionRequestAcceptance raises spec.acceptanceGeneration to ID.
	ActionRequestAcceptance ActionKind = "request-acceptance"
)

// Action is one thing to carry out. GPUs names the GPU indices it is for; empty means the
// whole node. ID is the request ID (the acceptance generation for ActionRequestAcceptance).
type Action struct {
	Kind ActionKind `json:"kind"`
	GPUs []int      `json:"gpus,omitempty"`
	ID   int64      `json:"id,omitempty"`
}

// Wait is what a decision waits for before the next move.
type Wait string

// Waits.
const (
	WaitNothing    Wait = ""
	WaitBudget     Wait = "budget"
	WaitPaused     Wait = "paused"
	WaitHold       Wait = "hold"
	WaitEvidence   Wait = "evidence"
	WaitBackoff    Wait = "backoff"
	WaitDrain      Wait = "drain"
	WaitOutcome    Wait = "outcome"
	WaitAcceptance Wait = "acceptance"
	WaitRelease    Wait = "release"
)

// Decision is the next move for one node. The reconciler persists State first, then applies
// Hold (HoldPlace adds remediation's hold, HoldRelease removes it), then carries out Actions
// in order. Actions are only ever given while the facts already show remediation's hold.
type Decision struct {
	Phase      Phase    `json:"phase,omitempty"`
	Hold       HoldOp   `json:"hold,omitempty"`
	HoldReason string   `json:"holdReason,omitempty"`
	Actions    []Action `json:"actions,omitempty"`
	State      State    `json:"state"`
	// Wait and WaitUntil: what the node waits for, and when time alone next moves it
	// (a timeout, the end of a backoff); zero when only new facts will.
	Wait      Wait      `json:"wait,omitempty"`
	WaitUntil time.Time `json:"waitUntil,omitzero"`
	// Reason (CamelCase, for a condition) and Message (for a person).
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// RequeueAfter is how long until time alone changes the decision (0: never).
func (d Decision) RequeueAfter(now time.Time) time.Duration {
	if d.WaitUntil.IsZero() {
		return 0
	}
	return max(d.WaitUntil.Sub(now), time.Millisecond)
}

// Decision reasons.
const (
	ReasonNoFault             = "NoFault"
	ReasonWaitingForBudget    = "WaitingForBudget"
	ReasonAutomationPaused    = "AutomationPaused"
	ReasonRemediationDisabled = "RemediationDisabled"
	ReasonPlacingHold         = "PlacingHold"
	ReasonCapturingEvidence   = "CapturingEvidence"
	ReasonBackingOff          = "BackingOff"
	ReasonDraining            = "Draining"
	ReasonStepStarted         = "StepStarted"
	ReasonWaitingForOutcome   = "WaitingForOutcome"
	ReasonAccepting           = "Accepting"
	ReasonRecovered           = "Recovered"
	ReasonClearedWithoutStep  = "ClearedWithoutStep"
	ReasonInMaintenance       = "InMaintenance"
	ReasonReleased            = "ReleasedFromMaintenance"
)
