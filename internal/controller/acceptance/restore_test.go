package acceptance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestDueHolds(t *testing.T) {
	hold := func(owner, reason string) v1alpha1.Hold {
		return v1alpha1.Hold{Owner: owner, Reason: reason, Message: reason + " (message)", Since: metav1.NewTime(at)}
	}
	accepted := func(status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionAccepted, Status: status, Reason: "ExpectationNotMet", Message: "gpu-count: 7 GPUs found, 8 expected"}
	}
	cases := []struct {
		name       string
		holds      []v1alpha1.Hold
		conditions []metav1.Condition
		want       []string // owner: reason
	}{
		{"a node with no recorded hold has none due", nil, nil, nil},
		{"a recorded acceptance hold is due while acceptance has not run",
			[]v1alpha1.Hold{hold(v1alpha1.HoldOwnerAcceptance, "new-node")}, nil,
			[]string{"acceptance: new-node (message)"}},
		{"a recorded acceptance hold is due with the failed verdict's message",
			[]v1alpha1.Hold{hold(v1alpha1.HoldOwnerAcceptance, "new-node")}, []metav1.Condition{accepted(metav1.ConditionFalse)},
			[]string{"acceptance: gpu-count: 7 GPUs found, 8 expected"}},
		{"a passed verdict makes a recorded acceptance hold not due (the pass released it)",
			[]v1alpha1.Hold{hold(v1alpha1.HoldOwnerAcceptance, "new-node")}, []metav1.Condition{accepted(metav1.ConditionTrue)}, nil},
		{"a recorded liveness hold is due",
			[]v1alpha1.Hold{hold(v1alpha1.HoldOwnerLiveness, "agent-lost")}, nil, []string{"liveness: agent-lost (message)"}},
		{"another owner's hold is never this controller's to restore",
			[]v1alpha1.Hold{hold(v1alpha1.HoldOwnerRemediation, "xid-79"), hold("operator", "rack-move")}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.GPUNodeStatus{Holds: tc.holds, Conditions: tc.conditions}
			var got []string
			for _, d := range DueHolds(st) {
				got = append(got, d.Hold.Owner+": "+d.Hold.Reason)
				if !d.Hold.Since.Equal(at) || d.Why == "" {
					t.Errorf("due hold %+v: want the recorded since %s and a reason why", d, at)
				}
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("DueHolds = %q, want %q", got, tc.want)
			}
		})
	}
}
