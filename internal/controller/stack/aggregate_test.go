package stack

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func member(name, driver string, ready bool) v1alpha1.StackNodeStatus {
	st := v1alpha1.StackNodeStatus{Name: name,
		Driver:  v1alpha1.NodeOperandStatus{Wanted: driverWanted, Running: driver, Ready: ready},
		Toolkit: v1alpha1.NodeOperandStatus{Wanted: toolkitWanted, Running: toolkitWanted, Ready: true},
		Agent:   v1alpha1.NodeOperandStatus{Running: "0.1.0", Ready: true}}
	if !ready {
		st.Driver.Message = fmt.Sprintf("driver: NVML reports %s, pool wants %s", driver, driverWanted)
	}
	return st
}

func TestAggregateCountsMembersVersionsAndConditions(t *testing.T) {
	many := make([]v1alpha1.StackNodeStatus, 0, 300)
	for i := range 300 {
		many = append(many, member(fmt.Sprintf("node-%03d", i), driverWanted, i%100 != 7))
	}
	tests := []struct {
		name            string
		pool            *v1alpha1.StackPool
		facts           PoolFacts
		nodes, ready    int32
		summary         string
		first           string
		listed, omitted int
		readyCond       metav1.ConditionStatus
		conflict, owned metav1.ConditionStatus
		readyReason     string
	}{
		{"a pool no node joined is not ready and says so", containerPool("a"), PoolFacts{},
			0, 0, "none", "", 0, 0, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonNoNodes},
		{"a pool whose members all run the wanted driver is ready", containerPool("a"),
			PoolFacts{Members: []v1alpha1.StackNodeStatus{member("n2", driverWanted, true), member("n1", driverWanted, true)}},
			2, 2, "580.95.05×2", "n1", 2, 0, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonAllNodesReady},
		{"a member on the old driver is listed first and counted apart", containerPool("a"),
			PoolFacts{Members: []v1alpha1.StackNodeStatus{member("n1", driverWanted, true), member("n2", driverWanted, true), member("n3", "570.172.08", false)}},
			3, 2, "580.95.05×2,570.172.08×1", "n3", 3, 0, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonNodesNotReady},
		{"nodes another pool selects too make the conflict condition true", containerPool("a"),
			PoolFacts{Members: []v1alpha1.StackNodeStatus{member("n1", driverWanted, true)}, Conflicting: []string{"n9"}},
			1, 1, "580.95.05×1", "n1", 1, 0, metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse, v1alpha1.ReasonAllNodesReady},
		{"a ClusterPolicy that deploys the driver makes the pool the GPU Operator's", containerPool("a"),
			PoolFacts{GPUOperator: GPUOperator{ClusterPolicy: "cluster-policy", Driver: true}},
			0, 0, "none", "", 0, 0, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonNoNodes},
		{"a pool of 300 lists its 3 nodes not ready first and caps the list", containerPool("a"), PoolFacts{Members: many},
			300, 297, "580.95.05×300", "node-007", v1alpha1.MaxStackNodeStatus, 300 - v1alpha1.MaxStackNodeStatus,
			metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonNodesNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, conds := Aggregate(tt.pool, tt.facts)
			if st.Nodes != tt.nodes || st.ReadyNodes != tt.ready {
				t.Errorf("nodes %d ready %d, want %d and %d", st.Nodes, st.ReadyNodes, tt.nodes, tt.ready)
			}
			if st.Driver.Summary != tt.summary || st.Driver.Wanted != driverWanted {
				t.Errorf("driver = %+v, want wanted %s and summary %q", st.Driver, driverWanted, tt.summary)
			}
			if len(st.NodeStatus) != tt.listed || int(st.NodeStatusOmitted) != tt.omitted {
				t.Errorf("nodeStatus has %d (omitted %d), want %d (omitted %d)", len(st.NodeStatus), st.NodeStatusOmitted, tt.listed, tt.omitted)
			}
			if tt.first != "" && st.NodeStatus[0].Name != tt.first {
				t.Errorf("first in nodeStatus = %s, want %s", st.NodeStatus[0].Name, tt.first)
			}
			for typ, want := range map[string]metav1.ConditionStatus{
				v1alpha1.ConditionStackReady: tt.readyCond, v1alpha1.ConditionNodesConflicting: tt.conflict, v1alpha1.ConditionOwnedByGPUOperator: tt.owned,
			} {
				c := meta.FindStatusCondition(conds, typ)
				if c == nil || c.Status != want {
					t.Errorf("condition %s = %+v, want %s", typ, c, want)
				}
			}
			if c := meta.FindStatusCondition(conds, v1alpha1.ConditionStackReady); c.Reason != tt.readyReason {
				t.Errorf("Ready reason = %s, want %s (%s)", c.Reason, tt.readyReason, c.Message)
			}
		})
	}
}
