package remediation

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// refuseStamps records a Warning Event on gn for a release annotation the decisions
// ignore, and on the pool's policy (nil: none) for such a resume annotation: malformed, or
// stamped further in the future than remediation.MaxStampSkew. Facts drops a malformed
// stamp and the decisions a future one; this says so where a person looks.
func (r *Reconciler) refuseStamps(gn *v1alpha1.GPUNode, pool *v1alpha1.GPUNodePolicy, now time.Time) {
	r.refuseStamp(gn, v1alpha1.AnnotationRelease, "gpunode release "+gn.Name, now)
	if pool != nil {
		r.refuseStamp(pool, v1alpha1.AnnotationResumeRemediation, "gpunode resume "+pool.Name, now)
	}
}

func (r *Reconciler) refuseStamp(obj client.Object, key, retry string, now time.Time) {
	v := obj.GetAnnotations()[key]
	if _, err := remediation.ParseStamp(v, now); err != nil {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonRequestRefused, "RefuseRequest",
			"annotation %s refused: %v; the request counts as never made: '%s' makes a new one", key, err, retry)
	}
}
