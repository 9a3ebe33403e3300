package stack

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// ComponentAgent is LabelComponent's value on a pool's agent DaemonSet and pods.
const ComponentAgent = "agent"

// AgentSource is who deploys pool p's agent: Container, or Chart (the default).
func AgentSource(p *v1alpha1.StackPool) v1alpha1.OperandSource {
	if p.Spec.Agent.Source == v1alpha1.SourceContainer {
		return v1alpha1.SourceContainer
	}
	return v1alpha1.SourceChart
}

// AgentFacts is what the hand-over of one Node's agent is decided from.
type AgentFacts struct {
	// Want is the pool whose agent DaemonSet is to serve the Node: its pool when that
	// pool's agent source is Container; "" for the chart's DaemonSet.
	Want string
	// StackAgent is the Node's gpunode.dev/stack-agent label ("" when absent).
	StackAgent string
	// ChartOff is whether the Node has gpunode.dev/chart-agent=off.
	ChartOff bool
	// ChartPod is a pod of the chart's agent DaemonSet on the Node ("" when none).
	ChartPod string
	// PoolPods are the pools' agent pods on the Node: pod name by pool.
	PoolPods map[string]string
}

// AgentDecision is the Node's hand-over labels.
type AgentDecision struct {
	// ChartOff: gpunode.dev/chart-agent=off (the chart's agent keeps off the Node).
	ChartOff bool
	// StackAgent is gpunode.dev/stack-agent's value ("" removes it): the pool whose agent
	// DaemonSet runs on the Node.
	StackAgent string
	// Waiting says which agent pod the hand-over waits for to leave; "" when none.
	Waiting string
}

// DecideAgent hands a Node's agent over between the chart's DaemonSet and a pool's, one
// agent at a time: the agent that is to stop is told first (its label goes), and the one
// that is to start is told only once no other agent pod is on the Node.
//   - to a pool: chart-agent=off at once; stack-agent=<pool> once neither the chart's agent
//     pod nor another pool's is on the Node (a Node moving from pool a to pool b loses
//     stack-agent=a first);
//   - back to the chart: stack-agent goes at once; chart-agent=off goes once no pool's
//     agent pod is on the Node.
func DecideAgent(f AgentFacts) AgentDecision {
	if f.Want == "" {
		for _, pool := range slices.Sorted(maps.Keys(f.PoolPods)) {
			return AgentDecision{ChartOff: f.ChartOff, Waiting: fmt.Sprintf("the agent pod %s of StackPool %q to leave the node", f.PoolPods[pool], pool)}
		}
		return AgentDecision{}
	}
	d := AgentDecision{ChartOff: true}
	switch {
	case f.StackAgent == f.Want:
		d.StackAgent = f.Want
	case f.StackAgent != "":
		d.Waiting = fmt.Sprintf("the agent of StackPool %q to be told to leave the node", f.StackAgent)
	case f.ChartPod != "":
		d.Waiting = fmt.Sprintf("the chart's agent pod %s to leave the node", f.ChartPod)
	default:
		for _, pool := range slices.Sorted(maps.Keys(f.PoolPods)) {
			if pool != f.Want {
				d.Waiting = fmt.Sprintf("the agent pod %s of StackPool %q to leave the node", f.PoolPods[pool], pool)
				return d
			}
		}
		d.StackAgent = f.Want
	}
	return d
}

// agentReadiness: with the chart's agent, ready (the chart's DaemonSet is judged by the
// chart); Container: the pool's agent pod on the node is Running and Ready with the wanted
// version label, and the agent reports the wanted version (GPUNode status.versions.agent).
func agentReadiness(p *v1alpha1.StackPool, f NodeFacts) v1alpha1.NodeOperandStatus {
	st := v1alpha1.NodeOperandStatus{}
	if f.GPUNode != nil {
		st.Running = f.GPUNode.Status.Versions.Agent
	}
	if msg := otherPoolPod(p, f.Pods, ComponentAgent); msg != "" {
		return notReady(st, "agent: "+msg)
	}
	if AgentSource(p) != v1alpha1.SourceContainer {
		st.Ready = true
		return st
	}
	st.Wanted = p.Spec.Agent.Version
	if msg := podProblem(p, f.Pods, ComponentAgent, st.Wanted); msg != "" {
		return notReady(st, "agent: "+msg)
	}
	switch {
	case f.GPUNode == nil:
		return notReady(st, "agent: the node's GPUNode does not exist yet (its agent has not reported)")
	case st.Running == "":
		return notReady(st, "agent: the agent has not reported its version yet")
	case strings.TrimPrefix(st.Running, "v") != strings.TrimPrefix(st.Wanted, "v"):
		return notReady(st, fmt.Sprintf("agent: the agent reports version %s, pool wants %s", st.Running, st.Wanted))
	}
	st.Ready = true
	return st
}

// otherPoolPod says that an operand pod of component of another pool is still on the node
// (the node left that pool, and that pool's DaemonSet has not removed it yet); "" when none
// is.
func otherPoolPod(p *v1alpha1.StackPool, pods []corev1.Pod, component string) string {
	for i := range pods {
		pod := &pods[i]
		if other := pod.Labels[v1alpha1.LabelStackPool]; other != "" && other != p.Name && pod.Labels[LabelComponent] == component {
			return fmt.Sprintf("pod %s of StackPool %q is still on the node (the node left that pool; its DaemonSet removes the pod)", pod.Name, other)
		}
	}
	return ""
}
