package stack

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

const agentImage, agentWanted = "ghcr.io/gpunode/gpunode", "0.2.0"

// agentPool is a container pool whose agent is a Container too.
func agentPool(name string) *v1alpha1.StackPool {
	p := containerPool(name)
	p.Spec.Agent = v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Image: agentImage, Version: agentWanted}
	return p
}

func TestTheAgentIsHandedOverOneAgentAtATime(t *testing.T) {
	tests := []struct {
		name    string
		facts   AgentFacts
		want    AgentDecision
		waiting string
	}{
		{"a node of no agent pool keeps the chart's agent and gets no label",
			AgentFacts{}, AgentDecision{}, ""},
		{"a node joining an agent pool turns the chart's agent off and waits for its pod to leave",
			AgentFacts{Want: "a", ChartPod: "gpunode-agent-x7k2p"}, AgentDecision{ChartOff: true}, "the chart's agent pod gpunode-agent-x7k2p"},
		{"once the chart's pod is gone the pool's agent is put on the node",
			AgentFacts{Want: "a", ChartOff: true}, AgentDecision{ChartOff: true, StackAgent: "a"}, ""},
		{"a node whose pool's agent runs keeps both labels",
			AgentFacts{Want: "a", ChartOff: true, StackAgent: "a", PoolPods: map[string]string{"a": "gpunode-a-agent-1"}},
			AgentDecision{ChartOff: true, StackAgent: "a"}, ""},
		{"a node moving to another agent pool first takes the old pool's agent off",
			AgentFacts{Want: "b", ChartOff: true, StackAgent: "a", PoolPods: map[string]string{"a": "gpunode-a-agent-1"}},
			AgentDecision{ChartOff: true}, `the agent of StackPool "a"`},
		{"the new pool's agent waits while the old pool's agent pod is still on the node",
			AgentFacts{Want: "b", ChartOff: true, PoolPods: map[string]string{"a": "gpunode-a-agent-1"}},
			AgentDecision{ChartOff: true}, `the agent pod gpunode-a-agent-1 of StackPool "a"`},
		{"a node leaving its agent pool loses the pool's agent at once and keeps the chart's off while the pod is there",
			AgentFacts{ChartOff: true, StackAgent: "a", PoolPods: map[string]string{"a": "gpunode-a-agent-1"}},
			AgentDecision{ChartOff: true}, `the agent pod gpunode-a-agent-1 of StackPool "a"`},
		{"once the pool's agent pod is gone the chart's agent comes back",
			AgentFacts{ChartOff: true}, AgentDecision{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideAgent(tt.facts)
			if got.ChartOff != tt.want.ChartOff || got.StackAgent != tt.want.StackAgent {
				t.Errorf("DecideAgent(%+v) = %+v, want chart-agent off %v, stack-agent %q", tt.facts, got, tt.want.ChartOff, tt.want.StackAgent)
			}
			if (tt.waiting == "") != (got.Waiting == "") || !strings.Contains(got.Waiting, tt.waiting) {
				t.Errorf("waiting = %q, want it to name %q", got.Waiting, tt.waiting)
			}
			if got.StackAgent != "" && got.Waiting != "" {
				t.Errorf("the pool's agent is put on the node while the hand-over waits for %s: two agents", got.Waiting)
			}
		})
	}
}

func TestTheAgentOfAPoolIsReadyWhenItsPodRunsAndItReportsTheWantedVersion(t *testing.T) {
	reporting := func(version string) *v1alpha1.GPUNode {
		gn := reportingGPUNode("n", driverWanted, true)
		gn.Status.Versions.Agent = version
		return gn
	}
	pod := func(pool, version string) []corev1.Pod {
		return []corev1.Pod{runningPod(pool, ComponentAgent, "n", version)}
	}
	tests := []struct {
		name    string
		pool    *v1alpha1.StackPool
		gn      *v1alpha1.GPUNode
		pods    []corev1.Pod
		ready   bool
		message string
		running string
	}{
		{"the chart's agent is ready and its reported version is shown", containerPool("a"), reporting("0.1.0"), nil, true, "", "0.1.0"},
		{"the pool's agent pod at the wanted version, reporting it, is ready", agentPool("a"), reporting(agentWanted), pod("a", agentWanted), true, "", agentWanted},
		{"a reported version with a leading v is the same version", agentPool("a"), reporting("v" + agentWanted), pod("a", agentWanted), true, "", "v" + agentWanted},
		{"no agent pod of the pool on the node is not ready", agentPool("a"), reporting("0.1.0"), nil, false,
			"agent: no pod of DaemonSet gpunode-a-agent on the node yet", "0.1.0"},
		{"an agent pod of the previous version is not ready until it is deleted", agentPool("a"), reporting("0.1.0"), pod("a", "0.1.0"), false,
			"agent: pod gpunode-a-agent-n runs version 0.1.0, pool wants 0.2.0", "0.1.0"},
		{"the pool's agent pod while the agent still reports the old version is not ready", agentPool("a"), reporting("0.1.0"), pod("a", agentWanted), false,
			"agent: the agent reports version 0.1.0, pool wants 0.2.0", "0.1.0"},
		{"an agent that has not reported its version is not ready", agentPool("a"), reporting(""), pod("a", agentWanted), false,
			"agent: the agent has not reported its version yet", ""},
		{"the agent pod of the pool the node left keeps even the chart's agent not ready", containerPool("b"), reporting("0.1.0"), pod("a", agentWanted), false,
			`agent: pod gpunode-a-agent-n of StackPool "a" is still on the node`, "0.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agentReadiness(tt.pool, NodeFacts{Name: "n", GPUNode: tt.gn, Pods: tt.pods})
			if got.Ready != tt.ready || !strings.HasPrefix(got.Message, tt.message) || (tt.message == "") != (got.Message == "") {
				t.Errorf("agent = %+v, want ready %v with a message starting %q", got, tt.ready, tt.message)
			}
			if got.Running != tt.running {
				t.Errorf("running = %q, want %q", got.Running, tt.running)
			}
		})
	}
}
