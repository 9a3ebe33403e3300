package nodepolicy

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

func policy(name string, prio int32, match map[string]string) v1alpha1.GPUNodePolicy {
	return v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GPUNodePolicySpec{Priority: prio, NodeSelector: metav1.LabelSelector{MatchLabels: match}}}
}

func TestThePolicyOfANodeIsTheMatchingOneOfHighestPriorityThenFirstName(t *testing.T) {
	bad := policy("bad", 9, nil)
	bad.Spec.NodeSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Sideways"}}
	deleting := policy("deleting", 99, nil)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name     string
		policies []v1alpha1.GPUNodePolicy
		want     string
		wantErrs int
	}{
		{"no policy: none", nil, "", 0},
		{"a policy for other nodes: none", []v1alpha1.GPUNodePolicy{policy("a", 0, map[string]string{"pool": "b"})}, "", 0},
		{"an empty selector selects every node", []v1alpha1.GPUNodePolicy{policy("all", 0, nil)}, "all", 0},
		{"the highest priority wins", []v1alpha1.GPUNodePolicy{policy("a", 1, nil), policy("z", 5, map[string]string{"pool": "a"})}, "z", 0},
		{"equal priorities go to the first name", []v1alpha1.GPUNodePolicy{policy("m", 1, nil), policy("b", 1, nil)}, "b", 0},
		{"a policy with a broken selector is skipped and reported", []v1alpha1.GPUNodePolicy{bad, policy("ok", 0, nil)}, "ok", 1},
		{"a policy being deleted governs nothing", []v1alpha1.GPUNodePolicy{deleting, policy("ok", 0, nil)}, "ok", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Select(map[string]string{"pool": "a"}, tc.policies)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want || len(errs) != tc.wantErrs {
				t.Errorf("selected %q with %d errors (%v), want %q with %d", name, len(errs), errs, tc.want, tc.wantErrs)
			}
		})
	}
}

func TestANodeNoPolicySelectsIsGovernedByTheBuiltInDefaults(t *testing.T) {
	cases := []struct {
		name        string
		policies    []v1alpha1.GPUNodePolicy
		want        string
		wantBuiltIn bool
	}{
		{"no policy at all gives the built-in defaults", nil, BuiltInName, true},
		{"policies for other nodes give the built-in defaults", []v1alpha1.GPUNodePolicy{policy("b", 0, map[string]string{"pool": "b"})}, BuiltInName, true},
		{"a policy that selects the node governs it", []v1alpha1.GPUNodePolicy{policy("b", 0, map[string]string{"pool": "b"}), policy("a", 0, map[string]string{"pool": "a"})}, "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Governing(map[string]string{"pool": "a"}, tc.policies)
			if got == nil || got.Name != tc.want || IsBuiltIn(got) != tc.wantBuiltIn {
				t.Fatalf("governed by %+v, want %q (built-in %v)", got, tc.want, tc.wantBuiltIn)
			}
			if tc.wantBuiltIn && !reflect.DeepEqual(got.Spec, v1alpha1.GPUNodePolicySpec{}) {
				t.Errorf("the built-in defaults have a spec %+v, want the empty one (every field its default)", got.Spec)
			}
		})
	}
}
