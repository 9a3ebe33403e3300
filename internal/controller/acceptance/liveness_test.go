package acceptance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// beating returns a status of 8 healthy GPUs whose agent's latest heartbeat was ago
// before at (no heartbeat when ago is negative), changed by each option.
func beating(ago time.Duration, options ...func(*v1alpha1.GPUNodeStatus)) *v1alpha1.GPUNodeStatus {
	st := gpuNode("n", 8).Status
	for i := range 8 {
		st.GPUHealth = append(st.GPUHealth, v1alpha1.GPUHealth{Index: int32(i), Health: v1alpha1.HealthHealthy, Action: "none"})
	}
	st.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionGPUHealthy, Status: metav1.ConditionTrue, Reason: "Healthy"}}
	if ago >= 0 {
		st.Agent = &v1alpha1.AgentStatus{HeartbeatTime: metav1.NewTime(at.Add(-ago))}
	}
	for _, o := range options {
		o(&st)
	}
	return &st
}

func gpu3Unhealthy(st *v1alpha1.GPUNodeStatus) {
	st.GPUHealth[3].Health, st.Health = v1alpha1.HealthUnhealthy, v1alpha1.HealthUnhealthy
	st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, "Unhealthy"
}

func gpu3Degraded(st *v1alpha1.GPUNodeStatus) {
	st.GPUHealth[3].Health, st.Health = v1alpha1.HealthDegraded, v1alpha1.HealthDegraded
	st.Conditions[0].Reason = "Degraded"
}

func gpusUnreadable(st *v1alpha1.GPUNodeStatus) {
	st.Conditions[0].Status, st.Conditions[0].Reason, st.Conditions[0].Message = metav1.ConditionUnknown, "GPUsUnreadable", "driver not loaded"
}

func lostAfter(d time.Duration) *v1alpha1.GPUNodePolicy {
	p := policy("fleet", 1, nil, 8)
	p.Spec.AgentLostAfter = &metav1.Duration{Duration: d}
	return p
}

func TestAnAgentWithoutAHeartbeatForThePolicysLimitIsLostAndItsNodeHeld(t *testing.T) {
	fleet := policy("fleet", 1, nil, 8)
	never := time.Time{}
	cases := []struct {
		name          string
		status        *v1alpha1.GPUNodeStatus
		policy        *v1alpha1.GPUNodePolicy
		held          bool
		watchingSince time.Time
		wantHold      bool
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantRecheck   time.Duration
	}{
		{"an agent that beat 30 s ago is fresh and asks to be checked when its heartbeat turns stale",
			beating(30 * time.Second), fleet, false, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, 90 * time.Second},
		{"an agent silent for the default 2 minutes is lost and its node held",
			beating(2 * time.Minute), fleet, false, never, true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"an agent silent for an hour is lost",
			beating(time.Hour), fleet, false, never, true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"a lost agent's node stays held while no heartbeat comes",
			beating(time.Hour), fleet, true, never, true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"the built-in defaults allow the same 2 minutes",
			beating(119 * time.Second), nodepolicy.BuiltIn(), false, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, time.Second},
		{"the built-in defaults hold a node silent for 2 minutes",
			beating(2 * time.Minute), nodepolicy.BuiltIn(), false, never, true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"a policy's shorter limit holds sooner",
			beating(31 * time.Second), lostAfter(30 * time.Second), false, never, true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"a policy's longer limit keeps a silent agent's node in service",
			beating(5 * time.Minute), lostAfter(10 * time.Minute), false, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, 5 * time.Minute},
		{"a heartbeat older than the controller's start counts from the start",
			beating(time.Hour), fleet, false, at.Add(-time.Minute), false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, time.Minute},
		{"a heartbeat older than the controller's start is lost once the limit passed since the start",
			beating(time.Hour), fleet, false, at.Add(-2 * time.Minute), true, metav1.ConditionFalse, v1alpha1.ReasonAgentLost, 0},
		{"an agent that never sent a heartbeat is not judged",
			beating(-1), fleet, false, never, false, metav1.ConditionUnknown, v1alpha1.ReasonNoHeartbeat, 0},
		{"agentLostAfter 0s turns the check off and releases a held node",
			beating(time.Hour), lostAfter(0), true, never, false, metav1.ConditionUnknown, v1alpha1.ReasonHeartbeatNotChecked, 0},
		{"an agent back while a GPU is unhealthy keeps its node held",
			beating(time.Second, gpu3Unhealthy), fleet, true, never, true, metav1.ConditionTrue, v1alpha1.ReasonWaitingForHealthyGPUs, 119 * time.Second},
		{"an agent back that cannot read its GPUs keeps its node held",
			beating(time.Second, gpusUnreadable), fleet, true, never, true, metav1.ConditionTrue, v1alpha1.ReasonWaitingForHealthyGPUs, 119 * time.Second},
		{"an agent back with healthy GPUs releases its node",
			beating(time.Second), fleet, true, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, 119 * time.Second},
		{"a degraded GPU does not keep a node held",
			beating(time.Second, gpu3Degraded), fleet, true, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, 119 * time.Second},
		{"an unhealthy GPU with a live agent is remediation's to hold, not liveness's",
			beating(time.Second, gpu3Unhealthy), fleet, false, never, false, metav1.ConditionTrue, v1alpha1.ReasonHeartbeatFresh, 119 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := DecideAgent(tc.status, tc.policy, tc.held, tc.watchingSince, at)
			if v.Hold != tc.wantHold || v.Status != tc.wantStatus || v.Reason != tc.wantReason || v.Recheck != tc.wantRecheck {
				t.Errorf("DecideAgent = %+v, want hold %v, %s/%s, recheck %s", v, tc.wantHold, tc.wantStatus, tc.wantReason, tc.wantRecheck)
			}
			if v.Message == "" {
				t.Error("the verdict says nothing to a person")
			}
		})
	}
}

func TestALostAgentsMessageNamesTheLastHeartbeatAndThePolicysLimit(t *testing.T) {
	v := DecideAgent(beating(time.Hour), lostAfter(90*time.Second), false, time.Time{}, at)
	want := `agent-lost: no heartbeat from the agent since 2026-03-01T11:00:00Z (GPUNodePolicy "fleet" allows 1m30s): the node is held until the agent is back and its GPUs are healthy`
	if v.Message != want {
		t.Errorf("message = %q, want %q", v.Message, want)
	}
	// The message does not move with the clock: a pass a minute later writes nothing.
	if later := DecideAgent(beating(time.Hour), lostAfter(90*time.Second), true, time.Time{}, at.Add(time.Minute)); later.Message != v.Message {
		t.Errorf("a minute later the message is %q, want it unchanged", later.Message)
	}
}

func TestOnlyAHeartbeatOnANodeNotHeldByLivenessIsNoReasonForAPass(t *testing.T) {
	beat := func(gn *v1alpha1.GPUNode, ago time.Duration) *v1alpha1.GPUNode {
		gn.Status.Agent = &v1alpha1.AgentStatus{HeartbeatTime: metav1.NewTime(at.Add(-ago))}
		return gn
	}
	old := beat(gpuNode("n", 8), time.Minute)
	old.ResourceVersion = "1"
	cases := []struct {
		name   string
		change func(*v1alpha1.GPUNode)
		want   bool
	}{
		{"a fresh heartbeat alone is skipped", func(gn *v1alpha1.GPUNode) { beat(gn, 0) }, true},
		{"a heartbeat with a new resourceVersion and managed fields is skipped", func(gn *v1alpha1.GPUNode) {
			beat(gn, 0)
			gn.ResourceVersion, gn.ManagedFields = "2", []metav1.ManagedFieldsEntry{{Manager: "gpunode-agent-heartbeat"}}
		}, true},
		{"a heartbeat on a node held by liveness is the agent's return and is judged", func(gn *v1alpha1.GPUNode) {
			beat(gn, 0)
			gn.Status.Holds = []v1alpha1.Hold{{Owner: v1alpha1.HoldOwnerLiveness, Reason: v1alpha1.HoldReasonAgentLost}}
		}, false},
		{"a heartbeat with a change of health is judged", func(gn *v1alpha1.GPUNode) { beat(gn, 0).Status.Health = v1alpha1.HealthUnhealthy }, false},
		{"a heartbeat with a spec change is judged", func(gn *v1alpha1.GPUNode) { beat(gn, 0).Spec.AcceptanceGeneration = 3 }, false},
		{"a change without a new heartbeat is judged", func(gn *v1alpha1.GPUNode) { gn.Status.Versions.Driver = "590.1" }, false},
		{"a resync that changed nothing is judged as before", func(*v1alpha1.GPUNode) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := old.DeepCopy()
			tc.change(b)
			if got := heartbeatOnly(old, b); got != tc.want {
				t.Errorf("heartbeatOnly = %v, want %v", got, tc.want)
			}
		})
	}
}
