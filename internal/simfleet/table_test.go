package simfleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

func TestARowSaysWhatRemediationDoes(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		rem  *v1alpha1.RemediationStatus
		want string
	}{
		{"no remediation shows nothing", nil, ""},
		{"a step in flight shows the step and its request",
			&v1alpha1.RemediationStatus{Current: &v1alpha1.StepAttempt{Step: v1alpha1.StepResetGPU, RequestID: 7}, Waiting: "Recovering: ..."},
			"reset-gpu (request 7)"},
		{"a wait shows its reason without the message",
			&v1alpha1.RemediationStatus{Waiting: "OverBudget: 2 of 10 nodes held"}, "OverBudget"},
		{"a finished remediation shows its last step and outcome",
			&v1alpha1.RemediationStatus{History: []v1alpha1.StepAttempt{
				{Step: v1alpha1.StepResetGPU, Started: now, Outcome: v1alpha1.OutcomeSucceeded},
				{Step: v1alpha1.StepRebootNode, Started: now, Outcome: v1alpha1.OutcomeFailed}}},
			"last: reboot-node Failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Row
			fillFromGPUNode(&r, &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{Remediation: tc.rem}})
			if r.Remediation != tc.want {
				t.Errorf("remediation column %q, want %q", r.Remediation, tc.want)
			}
		})
	}
}

func TestTheTableCountsHealthyGPUsAndListsHoldsOldestFirst(t *testing.T) {
	gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{AcceleratorClass: "h100-80g", GPUCount: 3, Phase: v1alpha1.PhaseRecovering,
		Health: v1alpha1.HealthUnhealthy, GPUHealth: []v1alpha1.GPUHealth{
			{Index: 0, Health: v1alpha1.HealthHealthy}, {Index: 1, Health: v1alpha1.HealthUnhealthy}, {Index: 2, Health: v1alpha1.HealthHealthy}}}}
	r := Row{Node: "sim-002", Holds: []string{"remediation", "acceptance"}}
	fillFromGPUNode(&r, gn)
	out := Render([]Row{r, {Node: "sim-003"}})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NODE") {
		t.Fatalf("table:\n%s\nwant a header and two rows", out)
	}
	for _, want := range []string{"sim-002", "h100-80g", "2/3", "Recovering", "unhealthy", "remediation,acceptance"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	if f := strings.Fields(lines[2]); len(f) != 7 || f[1] != "-" || f[2] != "-" {
		t.Errorf("a node without a GPUNode renders as %q, want dashes in every column", lines[2])
	}
}
