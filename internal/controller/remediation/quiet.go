package remediation

import (
	"k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// quiet reports whether gn gives remediation nothing to decide, so that a pass can skip
// loading and deciding the fleet: remediation never touched it (no state, no status), no
// release is asked, every GPU its agent published is healthy, and the agent can read its
// GPUs. Such a node's decision is always "no fault", and it neither counts towards a
// breaker nor waits for budget. Without the shortcut the first sync of a large fleet is
// quadratic (test/scale: 262 s of CPU at 5,000 nodes).
func quiet(gn *v1alpha1.GPUNode) bool {
	if gn.Annotations[v1alpha1.AnnotationRemediationState] != "" || gn.Annotations[v1alpha1.AnnotationRelease] != "" ||
		gn.Status.Remediation != nil {
		return false
	}
	if c := meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionGPUHealthy); c != nil && c.Reason == ReasonGPUsUnreadable {
		return false
	}
	for _, h := range gn.Status.Holds {
		if h.Owner == v1alpha1.HoldOwnerRemediation {
			return false
		}
	}
	for _, g := range gn.Status.GPUHealth {
		if g.Health != v1alpha1.HealthHealthy {
			return false
		}
	}
	return true
}
