package acceptance

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestSelectPolicy(t *testing.T) {
	h100Labels := map[string]string{v1alpha1.LabelAcceleratorClass: h100Class, "zone": "a"}
	deleting := policy("deleting", 900, nil, 8)
	deleting.DeletionTimestamp = &metav1.Time{Time: at}
	bad := policy("bad-selector", 800, nil, 8)
	bad.Spec.NodeSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}
	tests := []struct {
		name     string
		policies []*v1alpha1.GPUNodePolicy
		want     string
		wantErr  string
	}{
		{"no policy selects nothing", nil, "", ""},
		{"a policy whose selector does not match the node's labels is not selected",
			[]*v1alpha1.GPUNodePolicy{policy("b200", 10, map[string]string{v1alpha1.LabelAcceleratorClass: "b200"}, 8)}, "", ""},
		{"an empty selector selects every node",
			[]*v1alpha1.GPUNodePolicy{policy("everyone", 0, nil, 0)}, "everyone", ""},
		{"the highest priority wins among matching policies",
			[]*v1alpha1.GPUNodePolicy{policy("low", 1, nil, 8), policy("high", 5, map[string]string{"zone": "a"}, 8), policy("higher-but-other-zone", 9, map[string]string{"zone": "b"}, 8)}, "high", ""},
		{"equal priorities go to the name that sorts first",
			[]*v1alpha1.GPUNodePolicy{policy("zeta", 3, nil, 8), policy("alpha", 3, nil, 8)}, "alpha", ""},
		{"a policy being deleted is ignored",
			[]*v1alpha1.GPUNodePolicy{deleting, policy("fleet", 1, nil, 8)}, "fleet", ""},
		{"a policy with an invalid selector is ignored and named, the others still compete",
			[]*v1alpha1.GPUNodePolicy{bad, policy("fleet", 1, nil, 8)}, "fleet", `GPUNodePolicy "bad-selector"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []v1alpha1.GPUNodePolicy
			for _, p := range tt.policies {
				items = append(items, *p)
			}
			got, err := SelectPolicy(h100Labels, items)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("selected %q, want %q", name, tt.want)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecideRequest(t *testing.T) {
	fleet := policy("fleet", 1, nil, 8)
	requested := func(gn *v1alpha1.GPUNode, gen int64) *v1alpha1.GPUNode {
		gn.Spec.AcceptanceGeneration = gen
		return gn
	}
	base := CurrentBasis(gpuNode("n", 8), fleet)
	changedPolicy := policy("fleet", 1, nil, 4)
	tests := []struct {
		name       string
		gn         *v1alpha1.GPUNode
		recorded   *Basis
		policy     *v1alpha1.GPUNodePolicy
		wantNeeded bool
		wantReason string
	}{
		{"a node whose agent has not published its inventory waits", &v1alpha1.GPUNode{Spec: v1alpha1.GPUNodeSpec{NodeName: "n"}}, nil, fleet, false, v1alpha1.ReasonWaitingForInventory},
		{"a new node never accepted is asked for acceptance", gpuNode("n", 8), nil, fleet, true, v1alpha1.ReasonNewNode},
		{"a request the agent has not answered is not repeated", requested(gpuNode("n", 8), 1), &base, fleet, false, v1alpha1.ReasonPending},
		{"an outstanding request is not repeated even when the policy changed", requested(gpuNode("n", 8), 1), &base, changedPolicy, false, v1alpha1.ReasonPending},
		{"an answered request with nothing changed asks nothing", answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptancePassed), &base, fleet, false, v1alpha1.ReasonAnswered},
		{"a failed run with nothing changed is not retried", answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptanceFailed), &base, fleet, false, v1alpha1.ReasonAnswered},
		{"a change of the policy's spec asks again", answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptancePassed), &base, changedPolicy, true, v1alpha1.ReasonPolicyChanged},
		{"another policy winning asks again", answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptancePassed), &base, policy("other", 1, nil, 8), true, v1alpha1.ReasonPolicyChanged},
		{"a changed inventory asks again", answered(requested(gpuNode("n", 7), 1), "r", v1alpha1.AcceptancePassed), &base, fleet, true, v1alpha1.ReasonInventoryChanged},
		{"a changed driver asks again", func() *v1alpha1.GPUNode {
			gn := answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptancePassed)
			gn.Status.Versions.Driver = "590.10"
			return gn
		}(), &base, fleet, true, v1alpha1.ReasonDriverChanged},
		{"a request whose basis was not recorded asks again", answered(requested(gpuNode("n", 8), 1), "r", v1alpha1.AcceptancePassed), nil, fleet, true, v1alpha1.ReasonBasisUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var recorded Basis
			if tt.recorded != nil {
				recorded = *tt.recorded
			}
			got := DecideRequest(tt.gn, recorded, tt.recorded != nil, CurrentBasis(tt.gn, tt.policy))
			if got.Needed != tt.wantNeeded || got.Reason != tt.wantReason {
				t.Errorf("DecideRequest = %+v, want needed %v reason %s", got, tt.wantNeeded, tt.wantReason)
			}
			if got.Message == "" {
				t.Error("the decision has no message")
			}
		})
	}
}

func TestTheRecordedBasisReadsBackWhatWasRendered(t *testing.T) {
	gn := gpuNode("n", 8)
	want := CurrentBasis(gn, policy("fleet", 1, nil, 8))
	gn.Annotations = map[string]string{AnnotationBasis: want.Render()}
	got, ok := RecordedBasis(gn)
	if !ok || got != want {
		t.Fatalf("RecordedBasis = %+v, %v; want %+v, true", got, ok, want)
	}
	gn.Annotations[AnnotationBasis] = "{not json"
	if _, ok := RecordedBasis(gn); ok {
		t.Error("an unreadable annotation was read as a basis")
	}
}
