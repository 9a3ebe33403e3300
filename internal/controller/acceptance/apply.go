package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
)

// OwnedConditions are the GPUNode condition types this controller writes (field manager
// gpunode-acceptance); the agent writes GPUHealthy.
var OwnedConditions = []string{
	v1alpha1.ConditionPolicySelected, v1alpha1.ConditionAcceptanceRequested, v1alpha1.ConditionAccepted,
	v1alpha1.ConditionKubernetesInventory, v1alpha1.ConditionAgentHeartbeat, v1alpha1.ConditionInService,
	ConditionGPUAPI,
}

// ownedStatus is exactly the part of GPUNode status this controller owns: the lifecycle
// (phase, holds, the InService condition), its verdicts' conditions and observedGeneration.
type ownedStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              v1alpha1.Phase     `json:"phase,omitempty"`
	Holds              []v1alpha1.Hold    `json:"holds,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// owned is the part of st this controller owns.
func owned(st *v1alpha1.GPUNodeStatus) ownedStatus {
	out := ownedStatus{ObservedGeneration: st.ObservedGeneration, Phase: st.Phase, Holds: st.Holds}
	for _, c := range st.Conditions {
		if slices.Contains(OwnedConditions, c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// stamped is o as of generation: a request in this pass raised the generation.
func stamped(o ownedStatus, generation int64) ownedStatus {
	o.ObservedGeneration = generation
	o.Conditions = slices.Clone(o.Conditions)
	for i := range o.Conditions {
		o.Conditions[i].ObservedGeneration = generation
	}
	return o
}

// applyStatus applies the status fields this controller owns, when they differ from
// base's, with server-side apply as gpunode-acceptance. The apply carries those fields
// alone, built afresh, so a concurrent write of the agent's fields is never undone and
// needs no resourceVersion guard: every field applied here is decided from facts this
// pass read, and a later change of a fact starts another pass (docs/decisions.md). It
// forces ownership so that fields an earlier controller version wrote with merge patches
// move to this field manager.
func (r *Reconciler) applyStatus(ctx context.Context, base, gn *v1alpha1.GPUNode) error {
	want := stamped(owned(&gn.Status), gn.Generation)
	if equality.Semantic.DeepEqual(owned(&base.Status), want) {
		return nil
	}
	status, err := applyfields.Of(want)
	if err != nil {
		return fmt.Errorf("status of GPUNode %q: %w", gn.Name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": gn.Name},
		"status":   status,
	}}
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerAcceptance), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("apply status of GPUNode %q: %w", gn.Name, err)
	}
	return r.dropStatusUpdates(ctx, gn.Name, u.GetResourceVersion(), u.GetManagedFields())
}

// legacyManager is the field manager the controllers' merge patches of earlier versions
// recorded: the binary's name, which the API server takes from the client's user agent.
const legacyManager = "gpunode"

// dropStatusUpdates removes the managedFields entries that the earlier versions' status
// merge patches left (manager legacyManager, operation Update): GPUNode status is written
// by applies alone, and such an entry keeps co-owning every field it wrote until that
// field's value changes. Another writer's updates are left, for the ownership test to see. It
// runs after this controller's apply, so the fields the entry held that this controller
// owns are its own already; the agent's and remediation's applies own theirs. Guarded by
// the resourceVersion of that apply: a lost race drops them at a later pass.
func (r *Reconciler) dropStatusUpdates(ctx context.Context, name, resourceVersion string, mf []metav1.ManagedFieldsEntry) error {
	keep := statusApplies(mf)
	if len(keep) == len(mf) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, "managedFields": keep}})
	if err != nil {
		return fmt.Errorf("managedFields of GPUNode %q: %w", name, err)
	}
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.Client.Patch(ctx, gn, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("drop the status updates of GPUNode %q from its managedFields: %w", name, err)
	}
	return nil
}

// statusApplies is mf without the earlier versions' status updates.
func statusApplies(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return slices.DeleteFunc(slices.Clone(mf), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == legacyManager && e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationUpdate
	})
}

// applyRequest applies an acceptance request: spec.acceptanceGeneration and
// spec.acceptanceReason with the basis annotation, as gpunode-acceptance, guarded by
// gn's resourceVersion (the request is decided from gn: a GPUNode changed meanwhile is
// decided again). It forces ownership: the remediation controller raises the same
// generation after a recovery step, and whoever raised it last owns it.
func (r *Reconciler) applyRequest(ctx context.Context, gn *v1alpha1.GPUNode, generation int64, reason, basis string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{
			"name": gn.Name, "resourceVersion": gn.ResourceVersion,
			"annotations": map[string]any{AnnotationBasis: basis},
		},
		"spec": map[string]any{"acceptanceGeneration": generation, "acceptanceReason": reason},
	}}
	err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerAcceptance), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("request acceptance of GPUNode %q: %w", gn.Name, err)
	}
	if gn.Annotations == nil {
		gn.Annotations = map[string]string{}
	}
	gn.Annotations[AnnotationBasis] = basis
	gn.Spec.AcceptanceGeneration, gn.Spec.AcceptanceReason = generation, reason
	gn.ResourceVersion, gn.Generation = u.GetResourceVersion(), u.GetGeneration()
	return nil
}
