package remediation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestQuiet(t *testing.T) {
	healthy := func() *v1alpha1.GPUNode {
		return &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{GPUHealth: []v1alpha1.GPUHealth{
			{Index: 0, Health: v1alpha1.HealthHealthy}, {Index: 1, Health: v1alpha1.HealthHealthy}}}}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.GPUNode)
		want   bool
	}{
		{"a healthy node remediation never touched is quiet", func(*v1alpha1.GPUNode) {}, true},
		{"a node whose agent published nothing yet is quiet", func(g *v1alpha1.GPUNode) { g.Status.GPUHealth = nil }, true},
		{"an unhealthy GPU is not", func(g *v1alpha1.GPUNode) { g.Status.GPUHealth[1].Health = v1alpha1.HealthUnhealthy }, false},
		{"a degraded GPU is not (a pool may remediate those)", func(g *v1alpha1.GPUNode) { g.Status.GPUHealth[0].Health = v1alpha1.HealthDegraded }, false},
		{"a node with remediation state is not", func(g *v1alpha1.GPUNode) {
			g.Annotations = map[string]string{v1alpha1.AnnotationRemediationState: `{"attempts":[]}`}
		}, false},
		{"a node asked to be released is not", func(g *v1alpha1.GPUNode) {
			g.Annotations = map[string]string{v1alpha1.AnnotationRelease: "2026-11-29T20:00:00Z"}
		}, false},
		{"a node with a remediation hold is not", func(g *v1alpha1.GPUNode) {
			g.Status.Holds = []v1alpha1.Hold{{Owner: v1alpha1.HoldOwnerRemediation, Reason: "x", Since: metav1.Now()}}
		}, false},
		{"a node with remediation status is not", func(g *v1alpha1.GPUNode) { g.Status.Remediation = &v1alpha1.RemediationStatus{} }, false},
		{"a node whose GPUs cannot be read is not (driver not loaded)", func(g *v1alpha1.GPUNode) {
			g.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionGPUHealthy, Status: metav1.ConditionUnknown, Reason: ReasonGPUsUnreadable}}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := healthy()
			tt.change(g)
			if got := quiet(g); got != tt.want {
				t.Errorf("quiet = %v, want %v", got, tt.want)
			}
		})
	}
}
