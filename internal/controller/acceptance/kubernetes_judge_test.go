package acceptance

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func check(id string, status v1alpha1.CheckStatus, msg string) v1alpha1.Check {
	return v1alpha1.Check{ID: id, Layer: LayerKubernetes, Status: status, Message: msg}
}

func TestKubernetesGates(t *testing.T) {
	tests := []struct {
		name   string
		layers []v1alpha1.Layer
		want   bool
	}{
		{"a policy without layers runs the node-local layers only: L2 does not gate", nil, false},
		{"a policy listing node-local layers only does not gate on L2", []v1alpha1.Layer{"host", "hardware"}, false},
		{"a policy listing kubernetes gates on L2", []v1alpha1.Layer{"hardware", "kubernetes"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy("fleet", 1, nil, 8)
			p.Spec.Acceptance.Layers = tt.layers
			if got := KubernetesGates(p); got != tt.want {
				t.Errorf("KubernetesGates = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTheKubernetesInventoryCondition(t *testing.T) {
	tests := []struct {
		name       string
		j          KubernetesJudgement
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    []string
	}{
		{"all passing checks give True/Passed with the counts",
			KubernetesJudgement{Record: "node-a-1", Gates: true, Checks: []v1alpha1.Check{check(CheckNodeReady, statusPass, "ok"), check(CheckDevicePlugin, statusSkip, "none")}},
			metav1.ConditionTrue, v1alpha1.ReasonKubernetesPassed, []string{"record node-a-1: 1 pass, 0 warn, 0 fail, 1 skip (gating", "kubernetes.device-plugin skip: none"}},
		{"a warning gives True/Warned and names it",
			KubernetesJudgement{Record: "node-a-1", Gates: true, Checks: []v1alpha1.Check{check(CheckTaints, statusWarn, "cordoned")}},
			metav1.ConditionTrue, v1alpha1.ReasonKubernetesWarned, []string{"kubernetes.taints warn: cordoned"}},
		{"a failure gives False/Failed with its evidence",
			KubernetesJudgement{Record: "node-a-1", Checks: []v1alpha1.Check{{ID: CheckAllocatable, Status: statusFail, Message: "0 allocatable", Evidence: []string{"allocatable: none"}}}},
			metav1.ConditionFalse, v1alpha1.ReasonKubernetesFailed, []string{"kubernetes.allocatable fail: 0 allocatable [allocatable: none]", "(advisory: the policy's layers do not include kubernetes)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason, msg := tt.j.Condition()
			if status != tt.wantStatus || reason != tt.wantReason {
				t.Errorf("Condition = %s/%s, want %s/%s", status, reason, tt.wantStatus, tt.wantReason)
			}
			for _, want := range tt.wantMsg {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
		})
	}
}

func TestApplyingTheKubernetesJudgementToTheRecordsVerdict(t *testing.T) {
	passed := Verdict{Accepted: true, Reason: v1alpha1.ReasonPassed, Message: "record node-a-1 passed"}
	failedRun := Verdict{Reason: v1alpha1.ReasonRunFailed, Message: "acceptance-failed: 1 checks failed: hardware.ecc"}
	failing := []v1alpha1.Check{check(CheckNodeReady, statusPass, "ok"), check(CheckAllocatable, statusFail, "0 allocatable, 8 expected"),
		check(CheckLabels, statusFail, "label missing"), check(CheckTaints, statusWarn, "cordoned")}
	tests := []struct {
		name string
		j    KubernetesJudgement
		v    Verdict
		want Verdict
	}{
		{"a gating failure holds a passed record, the first failed check's ID leading",
			KubernetesJudgement{Record: "node-a-1", Gates: true, Checks: failing}, passed,
			Verdict{Reason: v1alpha1.ReasonKubernetesCheckFailed, Message: "kubernetes.allocatable: 0 allocatable, 8 expected (and kubernetes.labels) (record node-a-1)"}},
		{"an advisory failure leaves a passed record accepted", KubernetesJudgement{Record: "node-a-1", Checks: failing}, passed, passed},
		{"warnings alone leave a passed record accepted",
			KubernetesJudgement{Record: "node-a-1", Gates: true, Checks: []v1alpha1.Check{check(CheckTaints, statusWarn, "cordoned")}}, passed, passed},
		{"a failed record keeps its own reason", KubernetesJudgement{Record: "node-a-1", Gates: true, Checks: failing}, failedRun, failedRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.j.Apply(tt.v); got != tt.want {
				t.Errorf("Apply = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWhenLayerKubernetesIsJudgedAgain(t *testing.T) {
	judgedWith := func(record string, status metav1.ConditionStatus) *v1alpha1.GPUNode {
		gn := gpuNode("node-a", 8)
		meta.SetStatusCondition(&gn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionKubernetesInventory, Status: status,
			Reason: v1alpha1.ReasonKubernetesFailed, Message: recordPrefix(record) + "0 pass, 0 warn, 1 fail, 0 skip"})
		return gn
	}
	tests := []struct {
		name           string
		gn             *v1alpha1.GPUNode
		record         string
		gates, accepts bool
		want           bool
	}{
		{"a record never judged is judged", gpuNode("node-a", 8), "node-a-2", false, true, true},
		{"a new record is judged though an older one was", judgedWith("node-a-1", metav1.ConditionTrue), "node-a-2", true, true, true},
		{"a gating failure of a passed record is judged again until it passes", judgedWith("node-a-2", metav1.ConditionFalse), "node-a-2", true, true, true},
		{"a record that passed L2 is not judged again: drift does not undo acceptance", judgedWith("node-a-2", metav1.ConditionTrue), "node-a-2", true, true, false},
		{"an advisory failure is not judged again", judgedWith("node-a-2", metav1.ConditionFalse), "node-a-2", false, true, false},
		{"a failure beside a failed record is not judged again", judgedWith("node-a-2", metav1.ConditionFalse), "node-a-2", true, false, false},
		{"a record whose name extends another's is not taken for it", judgedWith("node-a-2", metav1.ConditionTrue), "node-a-20", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedKubernetesJudgement(tt.gn, tt.record, tt.gates, tt.accepts); got != tt.want {
				t.Errorf("NeedKubernetesJudgement(record %s) = %v, want %v", tt.record, got, tt.want)
			}
		})
	}
}
