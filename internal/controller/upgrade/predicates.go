package upgrade

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// metadataChanged passes creations, deletions and the Node updates that change labels
// (membership, failure domains) or annotations (holds).
func metadataChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			!equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
	}}
}

// planFactsChanged passes the GPUNode updates that change what the planner reads: the
// versions the agent reports and remediation's claim (a heartbeat alone starts no pass).
func planFactsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(*v1alpha1.GPUNode)
		b, ok2 := e.ObjectNew.(*v1alpha1.GPUNode)
		if !ok1 || !ok2 {
			return true
		}
		return a.Status.Versions.Driver != b.Status.Versions.Driver ||
			!equality.Semantic.DeepEqual(a.Status.Stack, b.Status.Stack) ||
			(a.Status.Remediation == nil) != (b.Status.Remediation == nil) ||
			(a.Status.Remediation != nil && a.Status.Remediation.Phase != b.Status.Remediation.Phase)
	}}
}
