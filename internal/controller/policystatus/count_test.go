package policystatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func policy(name string, priority int32, match map[string]string) v1alpha1.GPUNodePolicy {
	return v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GPUNodePolicySpec{Priority: priority, NodeSelector: metav1.LabelSelector{MatchLabels: match}}}
}

func gpuNode(name string) v1alpha1.GPUNode {
	return v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}}
}

func TestCount(t *testing.T) {
	h100 := policy("h100", 10, map[string]string{"class": "h100"})
	all := policy("all", 1, nil)
	cases := []struct {
		name     string
		gpuNodes []v1alpha1.GPUNode
		labels   map[string]map[string]string
		policies []v1alpha1.GPUNodePolicy
		want     map[string]int32
	}{
		{"a policy that selects no node counts zero",
			[]v1alpha1.GPUNode{gpuNode("a")}, map[string]map[string]string{"a": {"class": "a100"}},
			[]v1alpha1.GPUNodePolicy{h100}, map[string]int32{"h100": 0}},
		{"a node counts for the policy that wins the selection only",
			[]v1alpha1.GPUNode{gpuNode("a"), gpuNode("b")}, map[string]map[string]string{"a": {"class": "h100"}, "b": {"class": "a100"}},
			[]v1alpha1.GPUNodePolicy{h100, all}, map[string]int32{"h100": 1, "all": 1}},
		{"a Node without a GPUNode is not a GPU node and does not count",
			nil, map[string]map[string]string{"a": {"class": "h100"}},
			[]v1alpha1.GPUNodePolicy{h100}, map[string]int32{"h100": 0}},
		{"a GPUNode whose Node is gone does not count",
			[]v1alpha1.GPUNode{gpuNode("gone")}, map[string]map[string]string{},
			[]v1alpha1.GPUNodePolicy{all}, map[string]int32{"all": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Count(c.gpuNodes, c.labels, c.policies)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("policy %s: %d nodes, want %d (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
