package stack

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// maxRunningVersions caps status.driver.running and status.toolkit.running.
const maxRunningVersions = 32

// PoolFacts is what a pool's status is decided from.
type PoolFacts struct {
	// Members is the readiness of each member node.
	Members []v1alpha1.StackNodeStatus
	// Conflicting are the Nodes the pool selects that another pool selects too, sorted.
	Conflicting []string
	// GPUOperator is what the GPU Operator's objects deploy.
	GPUOperator GPUOperator
	// Sources are the effective sources of the members, to find the GPU Operator's owners.
	Sources []Sources
}

// Aggregate is pool p's status (without the conditions' times): the member counts, the
// versions wanted and running, the not-ready nodes first in nodeStatus (capped at
// MaxStackNodeStatus), and the conditions Ready, NodesConflicting, OwnedByGPUOperator.
func Aggregate(p *v1alpha1.StackPool, f PoolFacts) (v1alpha1.StackPoolStatus, []metav1.Condition) {
	st := v1alpha1.StackPoolStatus{ObservedGeneration: p.Generation, Nodes: int32(len(f.Members))}
	driverRunning, toolkitRunning, agentRunning := map[string]int32{}, map[string]int32{}, map[string]int32{}
	for _, m := range f.Members {
		if Ready(m) {
			st.ReadyNodes++
		}
		if m.Driver.Running != "" {
			driverRunning[m.Driver.Running]++
		}
		if m.Toolkit.Running != "" {
			toolkitRunning[m.Toolkit.Running]++
		}
		if m.Agent.Running != "" {
			agentRunning[m.Agent.Running]++
		}
	}
	st.ConflictingNodes = int32(len(f.Conflicting))
	st.Driver = versions(p.Spec.Driver.Source, p.Spec.Driver.Version, driverRunning)
	st.Toolkit = versions(p.Spec.Toolkit.Source, p.Spec.Toolkit.Version, toolkitRunning)
	st.Agent = versions(AgentSource(p), p.Spec.Agent.Version, agentRunning)
	driverOwner, toolkitOwner := owners(f.Sources)
	if p.Spec.Driver.Source == v1alpha1.SourceContainer && driverOwner == "" {
		if owner, _, all := f.GPUOperator.DriverOwnsAll(); all {
			driverOwner = owner
		}
	}
	if p.Spec.Toolkit.Source == v1alpha1.SourceContainer && toolkitOwner == "" {
		toolkitOwner, _ = f.GPUOperator.ToolkitOwner()
	}
	if driverOwner != "" {
		st.Driver.Source = v1alpha1.SourceGPUOperator
	}
	if toolkitOwner != "" {
		st.Toolkit.Source = v1alpha1.SourceGPUOperator
	}

	nodes := slices.Clone(f.Members)
	slices.SortFunc(nodes, func(a, b v1alpha1.StackNodeStatus) int {
		if ra, rb := Ready(a), Ready(b); ra != rb {
			if !ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(nodes) > v1alpha1.MaxStackNodeStatus {
		st.NodeStatusOmitted = int32(len(nodes) - v1alpha1.MaxStackNodeStatus)
		nodes = nodes[:v1alpha1.MaxStackNodeStatus]
	}
	st.NodeStatus = nodes

	conds := []metav1.Condition{readyCondition(p, st), conflictCondition(f.Conflicting), ownedCondition(p, driverOwner, toolkitOwner)}
	return st, conds
}

func versions(src v1alpha1.OperandSource, wanted string, running map[string]int32) v1alpha1.OperandVersions {
	out := v1alpha1.OperandVersions{Source: src, Wanted: wanted, Summary: "none"}
	for v, n := range running {
		out.Running = append(out.Running, v1alpha1.VersionCount{Version: v, Nodes: n})
	}
	slices.SortFunc(out.Running, func(a, b v1alpha1.VersionCount) int {
		if a.Nodes != b.Nodes {
			return cmp.Compare(b.Nodes, a.Nodes)
		}
		return cmp.Compare(a.Version, b.Version)
	})
	if len(out.Running) > maxRunningVersions {
		out.Running = out.Running[:maxRunningVersions]
	}
	if len(out.Running) > 0 {
		parts := make([]string, len(out.Running))
		for i, r := range out.Running {
			parts[i] = fmt.Sprintf("%s×%d", r.Version, r.Nodes)
		}
		out.Summary = truncate(strings.Join(parts, ","), 512)
	}
	return out
}

// owners are the GPU Operator objects that took over the members' driver and toolkit
// (the first of each, by name).
func owners(srcs []Sources) (driver, toolkit string) {
	for _, s := range srcs {
		if s.DriverOwner != "" && (driver == "" || s.DriverOwner < driver) {
			driver = s.DriverOwner
		}
		if s.ToolkitOwner != "" && (toolkit == "" || s.ToolkitOwner < toolkit) {
			toolkit = s.ToolkitOwner
		}
	}
	return driver, toolkit
}

func readyCondition(p *v1alpha1.StackPool, st v1alpha1.StackPoolStatus) metav1.Condition {
	operands := "the driver and toolkit are"
	if AgentSource(p) == v1alpha1.SourceContainer {
		operands = "the driver, toolkit and agent are"
	}
	c := metav1.Condition{Type: v1alpha1.ConditionStackReady}
	switch {
	case st.Nodes == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonNoNodes, "no Node is a member: none matches spec.nodeSelector, or each that does is matched by another pool too"
	case st.ReadyNodes == st.Nodes:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonAllNodesReady, fmt.Sprintf("%s ready on all %d nodes", operands, st.Nodes)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonNodesNotReady
		c.Message = fmt.Sprintf("%d of %d nodes ready", st.ReadyNodes, st.Nodes)
		if len(st.NodeStatus) > 0 && !Ready(st.NodeStatus[0]) {
			c.Message += fmt.Sprintf("; %s: %s", st.NodeStatus[0].Name, strings.TrimPrefix(NotReadyReason(st.NodeStatus[0]), v1alpha1.HoldReasonStackNotReady+": "))
		}
	}
	return c
}

func conflictCondition(conflicting []string) metav1.Condition {
	if len(conflicting) == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionNodesConflicting, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoConflict,
			Message: "no Node this pool selects is selected by another pool"}
	}
	shown := conflicting
	if len(shown) > 10 {
		shown = shown[:10]
	}
	msg := fmt.Sprintf("%d Nodes are selected by another pool too and belong to none (held, reason %s): %s",
		len(conflicting), v1alpha1.HoldReasonPoolConflict, strings.Join(shown, ", "))
	if len(shown) < len(conflicting) {
		msg += fmt.Sprintf(" and %d more", len(conflicting)-len(shown))
	}
	return metav1.Condition{Type: v1alpha1.ConditionNodesConflicting, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConflict, Message: msg}
}

func ownedCondition(p *v1alpha1.StackPool, driverOwner, toolkitOwner string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionOwnedByGPUOperator}
	var parts []string
	reason := ""
	if driverOwner != "" {
		parts = append(parts, ownedMessage("driver", driverOwner))
		reason = v1alpha1.ReasonClusterPolicy
		if strings.HasPrefix(driverOwner, "NVIDIADriver ") {
			reason = v1alpha1.ReasonNVIDIADriver
		}
	}
	if toolkitOwner != "" {
		parts = append(parts, ownedMessage("toolkit", toolkitOwner))
		reason = cmp.Or(reason, v1alpha1.ReasonClusterPolicy)
	}
	for _, o := range []struct {
		name string
		src  v1alpha1.OperandSource
	}{{"driver", p.Spec.Driver.Source}, {"toolkit", p.Spec.Toolkit.Source}} {
		if o.src == v1alpha1.SourceGPUOperator {
			parts = append(parts, "the "+o.name+" is the GPU Operator's (spec source GPUOperator)")
			reason = cmp.Or(reason, v1alpha1.ReasonGPUOperatorSource)
		}
	}
	if len(parts) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonNotOwned, "gpunode provides every operand the pool names"
		return c
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, strings.Join(parts, "; ")
	return c
}
