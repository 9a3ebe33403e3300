package remediation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
)

// The controller writes with server-side apply as gpunode-remediation, each apply built
// afresh with exactly the fields it owns (docs/architecture.md):
//   - GPUNode metadata and spec: the annotations gpunode.dev/remediation-state and
//     gpunode.dev/remediation-controller-step, spec.remediation, and the
//     spec.acceptanceGeneration and spec.acceptanceReason it raises after a step (shared
//     with the acceptance controller, which raises them too: forced, and always applied
//     with their current values so that neither manager's apply drops them);
//   - GPUNode status.remediation;
//   - GPUNodePolicy status.breaker and the RemediationPaused condition.
//
// The decisions behind the metadata, spec and breaker writes read the object first, so
// those applies carry its resourceVersion: a write decided on a stale object fails with a
// conflict and the pass runs again, as the merge patches with optimistic locking did.

// applyNode applies upd's remediation-owned metadata and spec, guarded by gn's
// resourceVersion, and takes the new resourceVersion into gn with upd's changes.
func (r *Reconciler) applyNode(ctx context.Context, gn, upd *v1alpha1.GPUNode) error {
	annotations := map[string]any{}
	for _, k := range []string{AnnotationState, AnnotationControllerStep} {
		if v, ok := upd.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	spec := map[string]any{}
	if upd.Spec.Remediation != nil {
		req, err := applyfields.Of(upd.Spec.Remediation)
		if err != nil {
			return fmt.Errorf("spec.remediation of GPUNode %q: %w", gn.Name, err)
		}
		spec["remediation"] = req
	}
	if upd.Spec.AcceptanceGeneration != 0 {
		spec["acceptanceGeneration"] = upd.Spec.AcceptanceGeneration
	}
	if upd.Spec.AcceptanceReason != "" {
		spec["acceptanceReason"] = upd.Spec.AcceptanceReason
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": gn.Name, "resourceVersion": gn.ResourceVersion, "annotations": annotations},
		"spec":     spec,
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerRemediation), client.ForceOwnership); err != nil {
		return err
	}
	gn.Annotations, gn.Spec = upd.Annotations, upd.Spec
	gn.ResourceVersion, gn.Generation = u.GetResourceVersion(), u.GetGeneration()
	return nil
}

// applyStatus applies status.remediation when it differs from base's as the API keeps it
// (sameRemediationStatus: times to the second, so a pass whose clock reads a later
// nanosecond writes nothing). It needs no
// resourceVersion guard: no one else writes it, and it is the summary of the state this
// pass persisted under one. Forced, so that a field an earlier version wrote with merge
// patches moves to this manager.
func (r *Reconciler) applyStatus(ctx context.Context, base, gn *v1alpha1.GPUNode) error {
	if sameRemediationStatus(base.Status.Remediation, gn.Status.Remediation) {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": gn.Name},
	}}
	if gn.Status.Remediation != nil { // without it, the apply gives up status.remediation
		rem, err := applyfields.Of(gn.Status.Remediation)
		if err != nil {
			return fmt.Errorf("status.remediation of GPUNode %q: %w", gn.Name, err)
		}
		u.Object["status"] = map[string]any{"remediation": rem}
	}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerRemediation), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status of GPUNode %q: %w", gn.Name, err)
	}
	return nil
}

// sameRemediationStatus reports whether a and b are the same status.remediation once
// stored: their JSON renderings, in which times keep whole seconds only (a status read
// back from the API never equals one mirrored from a nanosecond clock otherwise).
func sameRemediationStatus(a, b *v1alpha1.RemediationStatus) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// applyBreaker applies upd's status.breaker and RemediationPaused condition, guarded by
// p's resourceVersion (the trip is decided from p's status).
func (r *Reconciler) applyBreaker(ctx context.Context, p, upd *v1alpha1.GPUNodePolicy) error {
	status := map[string]any{}
	if upd.Status.Breaker != nil {
		b, err := applyfields.Of(upd.Status.Breaker)
		if err != nil {
			return fmt.Errorf("status.breaker of GPUNodePolicy %q: %w", p.Name, err)
		}
		status["breaker"] = b
	}
	for _, c := range upd.Status.Conditions {
		if c.Type != v1alpha1.ConditionRemediationPaused {
			continue
		}
		cond, err := applyfields.Of(c)
		if err != nil {
			return fmt.Errorf("condition of GPUNodePolicy %q: %w", p.Name, err)
		}
		status["conditions"] = []any{cond}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNodePolicy",
		"metadata": map[string]any{"name": p.Name, "resourceVersion": p.ResourceVersion},
		"status":   status,
	}}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerRemediation), client.ForceOwnership); err != nil {
		return err
	}
	upd.ResourceVersion = u.GetResourceVersion()
	return nil
}
