package remediation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

func TestOnlyChangesToTheFactsEnqueueAGPUNodeAndANewFaultGoesFirst(t *testing.T) {
	base := func() *v1alpha1.GPUNode {
		gn := &v1alpha1.GPUNode{Spec: v1alpha1.GPUNodeSpec{NodeName: "n"}}
		gn.Annotations = map[string]string{AnnotationState: `{"phase":"Suspect"}`}
		gn.Status.GPUHealth = []v1alpha1.GPUHealth{{Index: 0, Health: v1alpha1.HealthHealthy}, {Index: 1, Health: v1alpha1.HealthHealthy}}
		return gn
	}
	tests := []struct {
		name             string
		change           func(*v1alpha1.GPUNode)
		wantSame, wantNF bool
	}{
		{"the controller's own state annotation is not a change of the facts",
			func(gn *v1alpha1.GPUNode) { gn.Annotations[AnnotationState] = `{"phase":"Quarantined"}` }, true, false},
		{"the controller's status.remediation and phase are not a change of the facts",
			func(gn *v1alpha1.GPUNode) {
				gn.Status.Remediation, gn.Status.Phase = &v1alpha1.RemediationStatus{Trigger: "x"}, v1alpha1.PhaseQuarantined
			}, true, false},
		{"a GPU turning unhealthy is a new fault",
			func(gn *v1alpha1.GPUNode) { gn.Status.GPUHealth[1].Health = v1alpha1.HealthUnhealthy }, false, true},
		{"the GPUs becoming unreadable is a new fault",
			func(gn *v1alpha1.GPUNode) {
				gn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionGPUHealthy, Reason: ReasonGPUsUnreadable}}
			}, false, true},
		{"the pods on a GPU changing is a change but not a new fault",
			func(gn *v1alpha1.GPUNode) { gn.Status.GPUHealth[0].Pods = []string{"ns/p"} }, false, false},
		{"the agent's answer is a change but not a new fault",
			func(gn *v1alpha1.GPUNode) { gn.Status.RemediationAnswer = &v1alpha1.RemediationAnswer{ID: 3} }, false, false},
		{"a state annotation a person deleted is a change",
			func(gn *v1alpha1.GPUNode) { delete(gn.Annotations, AnnotationState) }, false, false},
		{"a release annotation is a change",
			func(gn *v1alpha1.GPUNode) { gn.Annotations[v1alpha1.AnnotationRelease] = "2026-03-01T12:00:00Z" }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			tt.change(b)
			if got := sameFacts(a, b); got != tt.wantSame {
				t.Errorf("sameFacts = %v, want %v", got, tt.wantSame)
			}
			if got := newFault(a, b); got != tt.wantNF {
				t.Errorf("newFault = %v, want %v", got, tt.wantNF)
			}
		})
	}
}

func TestFactsMapPodsProcessesAndAnUnreadableDriver(t *testing.T) {
	since := metav1.NewTime(at)
	gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{
		GPUHealth: []v1alpha1.GPUHealth{{Index: 2, UUID: "GPU-b", Health: v1alpha1.HealthUnhealthy, Action: "reset-gpu",
			Pods: []string{"ns/a", "ns/b"}, Processes: new(int32(3))}},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionGPUHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonGPUsUnreadable, LastTransitionTime: since}},
	}}
	f := Facts(gn, nil, nil, "p", "", remediation.State{})
	if len(f.GPUs) != 1 || f.GPUs[0].Pods != 2 || f.GPUs[0].Processes != 3 {
		t.Fatalf("GPUs = %+v, want 2 pods and 3 processes on GPU 2", f.GPUs)
	}
	if len(f.NodeFaults) != 1 || !f.NodeFaults[0].Fatal || f.NodeFaults[0].Action != "reload-driver" || !f.NodeFaults[0].Since.Equal(at) {
		t.Fatalf("NodeFaults = %+v, want one fatal driver-not-loaded fault asking for reload-driver since the condition's transition", f.NodeFaults)
	}
	gn.Status.GPUHealth[0].Processes, gn.Status.Conditions = nil, nil
	f = Facts(gn, nil, nil, "p", "", remediation.State{})
	if f.GPUs[0].Processes != 0 || len(f.NodeFaults) != 0 {
		t.Fatalf("unknown processes and a readable driver gave %+v", f)
	}
}

func TestAPoolMembersMissingDriverIsTheStacksNotAFault(t *testing.T) {
	gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionGPUHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonGPUsUnreadable, LastTransitionTime: metav1.NewTime(at)}},
		Stack: &v1alpha1.StackStatus{Driver: v1alpha1.OperandReadiness{Message: "driver not loaded"}},
	}}
	member := map[string]string{v1alpha1.LabelStackPool: "h100"}
	if f := Facts(gn, member, nil, "p", "", remediation.State{}); len(f.NodeFaults) != 0 {
		t.Errorf("a pool member waiting for its driver has node faults %+v, want none (the stack holds it)", f.NodeFaults)
	}
	if f := Facts(gn, nil, nil, "p", "", remediation.State{}); len(f.NodeFaults) != 1 {
		t.Errorf("a node no pool governs whose driver is gone has node faults %+v, want driver-not-loaded", f.NodeFaults)
	}
}
