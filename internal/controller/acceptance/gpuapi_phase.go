package acceptance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// switchRecheck is when a pass that placed the switch's hold runs again (the Node is not
// watched).
const switchRecheck = time.Second

// gpuAPISwitch carries out DecideGPUAPISwitch on s's node: the switch's hold (owner
// gpu-api, reason GPUAPISwitch), the acceptance request on the new API (with the basis,
// as the request phase records it) and condition GPUAPI, with an Event when it changes.
// It runs after evaluate (a failed run on the new API is held by acceptance before the
// switch's hold goes) and before request (which then sees this pass's request outstanding).
func (r *Reconciler) gpuAPISwitch(ctx context.Context, s *scope) error {
	gn := s.gn
	if s.node == nil || s.policy == nil {
		return nil
	}
	ops := r.ops(ctx, s)
	// The Node as this pass read it: only this phase places or releases the switch's hold.
	holds, err := nodeops.ParseHolds(s.node.Name, s.node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return fmt.Errorf("read holds of GPUNode %q: %w", gn.Name, err)
	}
	f := SwitchFacts{
		Label: s.node.Labels[v1alpha1.LabelGPUAPI], Reported: gn.Status.GPUAPI,
		Settled:     settledAPI(meta.FindStatusCondition(gn.Status.Conditions, ConditionGPUAPI)),
		Outstanding: Outstanding(gn),
	}
	if h, ok := holds.Find(HoldOwnerGPUAPI); ok {
		f.Held, f.HeldSince = true, h.Since
	}
	if la := gn.Status.LastAcceptance; la != nil {
		f.Answered, f.Generation = la.Time.Time, la.Generation
	}
	if f.Outstanding {
		f.Generation = gn.Spec.AcceptanceGeneration
	}
	d := DecideGPUAPISwitch(f)
	switch {
	case d.Hold && !f.Held:
		if err := ops.Hold(ctx, s.node.Name, HoldOwnerGPUAPI, HoldReasonGPUAPISwitch); err != nil {
			return fmt.Errorf("hold GPUNode %q for its GPU API switch: %w", gn.Name, err)
		}
		r.Recorder.Eventf(gn, s.node, corev1.EventTypeWarning, HoldReasonGPUAPISwitch, "Hold", "%s", d.Message)
		if s.result.RequeueAfter == 0 || s.result.RequeueAfter > switchRecheck {
			s.result.RequeueAfter = switchRecheck // the next step needs no new fact: the hold is one
		}
	case d.Release:
		if err := ops.Release(ctx, s.node.Name, HoldOwnerGPUAPI); err != nil {
			return fmt.Errorf("release GPUNode %q after its GPU API switch: %w", gn.Name, err)
		}
		if d.Reason != "" {
			r.Recorder.Eventf(gn, s.node, corev1.EventTypeNormal, d.Reason, "Release", "%s", d.Message)
		}
	}
	if d.RequestAcceptance {
		reason := truncate("GPU API switched to "+f.Reported, 256)
		if err := r.applyRequest(ctx, gn, gn.Spec.AcceptanceGeneration+1, reason, CurrentBasis(gn, s.policy).Render()); err != nil {
			return err
		}
		d.Message = fmt.Sprintf("switched to %s: acceptance generation %d requested", f.Reported, gn.Spec.AcceptanceGeneration)
		r.Recorder.Eventf(gn, s.node, corev1.EventTypeNormal, HoldReasonGPUAPISwitch, "RequestAcceptance", "%s", d.Message)
	}
	if d.Reason != "" {
		r.setCondition(gn, ConditionGPUAPI, d.Status, d.Reason, d.Message)
	}
	log.FromContext(ctx).V(1).Info("decided the GPU API", "label", f.Label, "reported", f.Reported, "settled", f.Settled,
		"held", f.Held, "reason", d.Reason)
	return nil
}
