package stack

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestMemberFindsTheOnePoolThatSelectsANode(t *testing.T) {
	wide := containerPool("wide")
	wide.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "gpu", Operator: metav1.LabelSelectorOpExists},
	}}
	deleting := containerPool("deleting")
	deleting.DeletionTimestamp = &metav1.Time{}
	broken := containerPool("broken")
	broken.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "gpu", Operator: "Near"},
	}}
	tests := []struct {
		name     string
		labels   map[string]string
		pools    []v1alpha1.StackPool
		want     []string
		pool     string
		conflict bool
		err      string
	}{
		{"a node no pool selects belongs to none", map[string]string{"pool": "c"},
			[]v1alpha1.StackPool{*containerPool("a"), *containerPool("b")}, nil, "", false, ""},
		{"a node one pool selects belongs to it", map[string]string{"pool": "a"},
			[]v1alpha1.StackPool{*containerPool("a"), *containerPool("b")}, []string{"a"}, "a", false, ""},
		{"a node two pools select belongs to neither and is a conflict naming both", map[string]string{"pool": "b", "gpu": "h100"},
			[]v1alpha1.StackPool{*containerPool("b"), *wide}, []string{"b", "wide"}, "", true, ""},
		{"a pool being deleted selects nothing", map[string]string{"pool": "deleting"},
			[]v1alpha1.StackPool{*deleting}, nil, "", false, ""},
		{"a pool whose selector cannot be read selects nothing and is named in the error", map[string]string{"gpu": "h100"},
			[]v1alpha1.StackPool{*broken, *wide}, []string{"wide"}, "wide", false, `StackPool "broken"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Member(tt.labels, tt.pools)
			if !slices.Equal(m.Matching, tt.want) || m.Pool() != tt.pool || m.Conflict() != tt.conflict {
				t.Errorf("Member = %v (pool %q, conflict %v), want %v (pool %q, conflict %v)", m.Matching, m.Pool(), m.Conflict(), tt.want, tt.pool, tt.conflict)
			}
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error = %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestDecideNodeLabelsMembersAndHoldsWhatIsNotReady(t *testing.T) {
	ready := &v1alpha1.StackNodeStatus{Name: "n", Driver: v1alpha1.NodeOperandStatus{Ready: true}, Toolkit: v1alpha1.NodeOperandStatus{Ready: true}, Agent: v1alpha1.NodeOperandStatus{Ready: true}}
	notReady := &v1alpha1.StackNodeStatus{Name: "n", Driver: v1alpha1.NodeOperandStatus{Message: "driver: NVML reports 570.1, pool wants 580.95.05"},
		Toolkit: v1alpha1.NodeOperandStatus{Ready: true}, Agent: v1alpha1.NodeOperandStatus{Ready: true}}
	tests := []struct {
		name  string
		m     Membership
		ready *v1alpha1.StackNodeStatus
		want  NodeDecision
	}{
		{"a node no pool selects has no label and no hold", Membership{}, nil, NodeDecision{}},
		{"a member whose operands are ready is labelled and not held", Membership{Matching: []string{"a"}}, ready, NodeDecision{Pool: "a"}},
		{"a member whose driver is not ready is labelled and held with what is missing", Membership{Matching: []string{"a"}}, notReady,
			NodeDecision{Pool: "a", Hold: "stack-not-ready: driver: NVML reports 570.1, pool wants 580.95.05"}},
		{"a member not judged yet is held", Membership{Matching: []string{"a"}}, nil,
			NodeDecision{Pool: "a", Hold: "stack-not-ready: the pool's operands are not judged yet"}},
		{"a node two pools select has no label and is held naming both", Membership{Matching: []string{"a", "b"}}, nil,
			NodeDecision{Hold: "pool-conflict: StackPools a, b all select the node; it belongs to none of them until one alone does"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideNode(tt.m, tt.ready); got != tt.want {
				t.Errorf("DecideNode = %+v, want %+v", got, tt.want)
			}
		})
	}
}
