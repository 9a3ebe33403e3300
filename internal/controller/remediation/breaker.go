package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// persistBreakers writes the breakers the plan tripped into their policies' status (with
// the RemediationPaused condition and a Warning Event), and marks a resumed breaker's
// condition False. Closing a breaker is a person's act (the resume annotation); this never
// clears status.breaker, which keeps the last trip for the record.
func (r *Reconciler) persistBreakers(ctx context.Context, fl *loaded, plan remediation.Plan) error {
	for pool, b := range plan.Breakers {
		p, ok := fl.policies[pool]
		if !ok {
			continue
		}
		upd, event := breakerStatus(p, b, r.Clock.Now())
		if upd == nil {
			continue
		}
		if err := r.applyBreaker(ctx, p, upd); err != nil {
			return fmt.Errorf("record the breaker of pool %q: %w", pool, err)
		}
		fl.policies[pool] = upd
		if event {
			r.Recorder.Eventf(upd, nil, corev1.EventTypeWarning, v1alpha1.ReasonCircuitBreakerOpen, "PauseRemediation", "%s", b.Reason)
		}
	}
	return nil
}

// breakerStatus is p with its status showing b, or nil when the status shows it already;
// tripped reports a new trip (an Event is due).
func breakerStatus(p *v1alpha1.GPUNodePolicy, b remediation.Breaker, now time.Time) (upd *v1alpha1.GPUNodePolicy, tripped bool) {
	cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRemediationPaused)
	upd = p.DeepCopy()
	switch {
	case b.Tripped():
		recorded := p.Status.Breaker != nil && p.Status.Breaker.TrippedAt.Time.Equal(b.TrippedAt)
		if recorded && cond != nil && cond.Status == metav1.ConditionTrue {
			return nil, false
		}
		upd.Status.Breaker = &v1alpha1.BreakerStatus{
			TrippedAt: metav1.NewTime(b.TrippedAt), Faulting: int32(b.Faulting), Nodes: int32(b.Nodes), Reason: truncate(b.Reason, 1024),
		}
		meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionRemediationPaused, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonCircuitBreakerOpen, Message: truncate(b.Reason, 32768), ObservedGeneration: p.Generation,
			LastTransitionTime: metav1.NewTime(now)})
		return upd, !recorded
	case cond != nil && cond.Status == metav1.ConditionTrue:
		meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionRemediationPaused, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonResumed, Message: "automation resumed at " + b.ResumedAt.UTC().Format(time.RFC3339),
			ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(now)})
		return upd, false
	}
	return nil, false
}
