package acceptance

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// DefaultAgentLostAfter is how long a node's agent may send no heartbeat before the node
// is held, when the governing policy sets no spec.agentLostAfter (the built-in defaults
// set none): four of the agent's default 30 s intervals.
const DefaultAgentLostAfter = 2 * time.Minute

// AgentLostAfter is how long policy lets a node's agent go without a heartbeat: its
// spec.agentLostAfter, or DefaultAgentLostAfter when it sets none. 0 turns the check off.
func AgentLostAfter(policy *v1alpha1.GPUNodePolicy) time.Duration {
	if policy == nil || policy.Spec.AgentLostAfter == nil {
		return DefaultAgentLostAfter
	}
	return max(policy.Spec.AgentLostAfter.Duration, 0)
}

// AgentVerdict is the decision about a node's agent.
type AgentVerdict struct {
	// Hold: the node must carry the liveness hold (place it or keep it); false: release it.
	Hold bool
	// Status, Reason and Message are the AgentHeartbeat condition's. They do not change
	// with every heartbeat, so that a fresh heartbeat alone writes nothing.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Recheck is how soon to decide again when no event comes: when the latest heartbeat
	// turns stale. 0: only a change of the facts changes the verdict.
	Recheck time.Duration
}

// DecideAgent decides at now whether the node whose status is st must be held because its
// agent is lost, under policy; held says whether the node carries the liveness hold now.
//
// The agent is lost when its latest heartbeat (status.agent.heartbeatTime, the agent's
// clock) is policy's AgentLostAfter or more before now; the node is then held. A heartbeat
// older than watchingSince, when the deciding controller began to watch, counts from
// watchingSince: a controller that starts together with an API server that was down (no
// agent could write meanwhile) gives every agent the whole limit to write again, rather
// than holding the fleet at once. Once the agent is back, the hold stays until the node's
// GPUs are healthy (healthyGPUs). An agent that never sent a heartbeat (a new node, or an
// agent older than heartbeats) is not judged, nor is any agent when the limit is 0.
func DecideAgent(st *v1alpha1.GPUNodeStatus, policy *v1alpha1.GPUNodePolicy, held bool, watchingSince, now time.Time) AgentVerdict {
	limit := AgentLostAfter(policy)
	switch {
	case limit == 0:
		return AgentVerdict{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonHeartbeatNotChecked,
			Message: fmt.Sprintf("%s sets agentLostAfter 0s: the agent's heartbeat is not checked", describePolicy(policy))}
	case st.Agent == nil || st.Agent.HeartbeatTime.IsZero():
		return AgentVerdict{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonNoHeartbeat,
			Message: "the agent has sent no heartbeat (status.agent.heartbeatTime) yet: a new node, or an agent that predates heartbeats; it is not judged lost"}
	}
	beat := st.Agent.HeartbeatTime.Time
	from := beat
	if watchingSince.After(from) {
		from = watchingSince
	}
	if now.Sub(from) >= limit {
		return AgentVerdict{Hold: true, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAgentLost, Message: fmt.Sprintf(
			"%s: no heartbeat from the agent since %s (%s allows %s): the node is held until the agent is back and its GPUs are healthy",
			v1alpha1.HoldReasonAgentLost, beat.UTC().Format(time.RFC3339), describePolicy(policy), limit)}
	}
	recheck := from.Add(limit).Sub(now)
	if held {
		if why := healthyGPUs(st); why != "" {
			return AgentVerdict{Hold: true, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonWaitingForHealthyGPUs, Recheck: recheck,
				Message: "the agent is back; the node stays held (" + v1alpha1.HoldReasonAgentLost + ") until its GPUs are healthy: " + why}
		}
	}
	return AgentVerdict{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHeartbeatFresh, Recheck: recheck, Message: fmt.Sprintf(
		"the agent's heartbeat is fresh; the node is held when none comes for %s (%s)", limit, describePolicy(policy))}
}

// healthyGPUs says why st's GPUs are not healthy enough for the node to leave the liveness
// hold, or "" when they are: the agent can read them and none is unhealthy (degraded is
// advisory and does not keep the node out of service).
func healthyGPUs(st *v1alpha1.GPUNodeStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGPUHealthy); c != nil && c.Status != metav1.ConditionTrue {
		return fmt.Sprintf("%s is %s (%s): %s", v1alpha1.ConditionGPUHealthy, c.Status, c.Reason, c.Message)
	}
	unhealthy := 0
	for _, g := range st.GPUHealth {
		if g.Health == v1alpha1.HealthUnhealthy {
			unhealthy++
		}
	}
	if unhealthy > 0 || st.Health == v1alpha1.HealthUnhealthy {
		return fmt.Sprintf("%d of %d GPUs unhealthy", unhealthy, len(st.GPUHealth))
	}
	return ""
}

// describePolicy names policy for a person: `GPUNodePolicy "name"`, or the built-in
// defaults.
func describePolicy(policy *v1alpha1.GPUNodePolicy) string {
	if policy == nil || nodepolicy.IsBuiltIn(policy) {
		return "the built-in defaults (no GPUNodePolicy selects the node)"
	}
	return fmt.Sprintf("GPUNodePolicy %q", policy.Name)
}
