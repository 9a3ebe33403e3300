package cli

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
)

// agentExplanation is the node agent's liveness as the acceptance controller decides it.
type agentExplanation struct {
	// HeartbeatTime is the agent's latest heartbeat (zero: none yet).
	HeartbeatTime time.Time `json:"heartbeatTime,omitzero"`
	// LostAfter is the governing policy's agentLostAfter (0: not checked).
	LostAfter string `json:"lostAfter"`
	// Lost: the node is (or is to be) held by liveness, reason agent-lost.
	Lost bool `json:"lost"`
	// Reason and Message are the AgentHeartbeat condition's, decided now.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// At is the time it was decided at.
	At time.Time `json:"-"`
}

// explainAgent decides on gn's agent at now under policy, as acceptance.DecideAgent does
// (from the time of the heartbeat alone: a just-started controller waits longer); held
// says whether the liveness hold is on the node.
func explainAgent(gn *v1alpha1.GPUNode, policy *v1alpha1.GPUNodePolicy, held bool, now time.Time) agentExplanation {
	v := acceptance.DecideAgent(&gn.Status, policy, held, time.Time{}, now)
	e := agentExplanation{LostAfter: acceptance.AgentLostAfter(policy).String(), Lost: v.Hold, Reason: v.Reason, Message: v.Message, At: now}
	if a := gn.Status.Agent; a != nil {
		e.HeartbeatTime = a.HeartbeatTime.Time
	}
	return e
}

// String is the explanation's "agent:" line.
func (e agentExplanation) String() string {
	beat := "none yet"
	if !e.HeartbeatTime.IsZero() {
		beat = fmt.Sprintf("%s (%s ago)", e.HeartbeatTime.UTC().Format(time.RFC3339), e.At.Sub(e.HeartbeatTime).Truncate(time.Second))
	}
	state := "alive"
	switch {
	case e.Lost:
		state = "lost"
	case e.Reason == v1alpha1.ReasonNoHeartbeat || e.Reason == v1alpha1.ReasonHeartbeatNotChecked:
		state = "not judged"
	}
	return fmt.Sprintf("agent: %s, last heartbeat %s: %s\n", state, beat, e.Message)
}
