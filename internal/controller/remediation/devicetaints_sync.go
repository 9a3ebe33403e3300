package remediation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/remediation"
)

// unpublishedRetry is when a pass runs again while a held GPU has no published device (the
// driver has not published its slice yet, or publishes it on no watched node).
const unpublishedRetry = 10 * time.Second

// servesDRA reports whether the API server serves DeviceTaintRules (resource.k8s.io/v1):
// without them the controller writes none and watches no ResourceSlice.
func servesDRA(mgr ctrl.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: resourcev1.GroupName, Kind: "DeviceTaintRule"}, resourcev1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("finding out whether the API server serves %s DeviceTaintRules: %w", resourcev1.SchemeGroupVersion, err)
}

// syncDeviceTaints makes the DeviceTaintRules of gn's node what scope sc calls for (nil:
// none), from the node's ResourceSlices: it applies a missing or changed rule (one deleted
// by hand comes back) and deletes one the hold no longer needs, with an Event naming each.
// retry reports a held GPU no published device matches yet.
func (r *Reconciler) syncDeviceTaints(ctx context.Context, gn *v1alpha1.GPUNode, f remediation.Facts, sc *HoldScope) (retry bool, err error) {
	if r.NoDRA {
		return false, nil
	}
	node := gn.Spec.NodeName
	var existing resourcev1.DeviceTaintRuleList
	if err := r.Client.List(ctx, &existing, client.MatchingLabels(RuleLabels(node, remediation.OwnerRemediation))); err != nil {
		return false, fmt.Errorf("list the DeviceTaintRules of node %s: %w", node, err)
	}
	if sc == nil && len(existing.Items) == 0 {
		return false, nil
	}
	var plan RulePlan
	if sc != nil {
		published, err := acceptance.ListNodeSlices(ctx, r.Client, node)
		if err != nil {
			return false, err
		}
		plan = PlanDeviceTaintRules(node, sc, nodeGPUs(gn, f), published)
	}
	for i := range plan.Rules {
		want := &plan.Rules[i]
		j := slices.IndexFunc(existing.Items, func(e resourcev1.DeviceTaintRule) bool { return e.Name == want.Name })
		if j >= 0 && sameRule(&existing.Items[j], want) {
			continue
		}
		if err := r.applyRule(ctx, gn, want); err != nil {
			return false, err
		}
		r.Recorder.Eventf(gn, nil, corev1.EventTypeWarning, "DeviceTainted", "ApplyDeviceTaintRule",
			"DeviceTaintRule %s taints %s %s=%s:%s for %s's hold", want.Name, RuleDevices(*want),
			want.Spec.Taint.Key, want.Spec.Taint.Value, want.Spec.Taint.Effect, sc.Hold)
	}
	for i := range existing.Items {
		old := &existing.Items[i]
		if slices.ContainsFunc(plan.Rules, func(w resourcev1.DeviceTaintRule) bool { return w.Name == old.Name }) {
			continue
		}
		if err := r.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("delete DeviceTaintRule %s of node %s: %w", old.Name, node, err)
		}
		r.Recorder.Eventf(gn, nil, corev1.EventTypeNormal, "DeviceTaintRemoved", "DeleteDeviceTaintRule",
			"DeviceTaintRule %s (%s) removed: remediation's hold no longer keeps those devices", old.Name, RuleDevices(*old))
	}
	if len(plan.Unmatched) > 0 {
		log.FromContext(ctx).Info("held GPUs have no published device yet", "node", node, "gpus", plan.Unmatched)
	}
	return len(plan.Unmatched) > 0, nil
}

// nodeGPUs are the UUIDs of gn's GPUs: its inventory's and its health's.
func nodeGPUs(gn *v1alpha1.GPUNode, f remediation.Facts) []string {
	var out []string
	for _, g := range gn.Status.Inventory.GPUs {
		out = append(out, g.UUID)
	}
	for _, g := range f.GPUs {
		if g.UUID != "" && !slices.Contains(out, g.UUID) {
			out = append(out, g.UUID)
		}
	}
	return out
}

// sameRule reports whether the existing rule already says what want says.
func sameRule(have, want *resourcev1.DeviceTaintRule) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	t, w := have.Spec.Taint, want.Spec.Taint
	return have.DeletionTimestamp == nil && equality.Semantic.DeepEqual(have.Spec.DeviceSelector, want.Spec.DeviceSelector) &&
		t.Key == w.Key && t.Value == w.Value && t.Effect == w.Effect
}

// applyRule applies rule as gpunode-remediation, owned by gn (it goes with the GPUNode).
func (r *Reconciler) applyRule(ctx context.Context, gn *v1alpha1.GPUNode, rule *resourcev1.DeviceTaintRule) error {
	spec, err := applyfields.Of(rule.Spec)
	if err != nil {
		return fmt.Errorf("DeviceTaintRule %s: %w", rule.Name, err)
	}
	labels, annotations := map[string]any{}, map[string]any{}
	for k, v := range rule.Labels {
		labels[k] = v
	}
	for k, v := range rule.Annotations {
		annotations[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rule.APIVersion, "kind": rule.Kind,
		"metadata": map[string]any{
			"name": rule.Name, "labels": labels, "annotations": annotations,
			"ownerReferences": []any{map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode", "name": gn.Name, "uid": string(gn.UID),
			}},
		},
		"spec": spec,
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerRemediation), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply DeviceTaintRule %s of node %s: %w", rule.Name, gn.Spec.NodeName, err)
	}
	return nil
}

// ruleEvents enqueues the GPUNode of a rule of remediation's whose spec or labels were
// changed, or that was deleted, by someone else: the pass puts it back while the hold
// stands. Creations are the controller's own.
func ruleEvents() handler.EventHandler {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o.GetLabels()[LabelRuleHold] != labelValue(remediation.OwnerRemediation) {
			return
		}
		node := o.GetAnnotations()[AnnotationRuleNode]
		if node == "" {
			node = o.GetLabels()[LabelRuleNode]
		}
		if node != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
		}
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Not the eviction controller's status updates: only a changed spec or labels, or
			// a deletion begun.
			o, n := e.ObjectOld, e.ObjectNew
			if o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetLabels(), n.GetLabels()) || n.GetDeletionTimestamp() != nil {
				enqueue(n, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// sliceNode maps a ResourceSlice (its metadata) to the GPUNode of the Node that owns it,
// as the DRA helper library records it: a held GPU whose device is published late gets
// its rule at once.
func sliceNode(_ context.Context, o client.Object) []reconcile.Request {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Node" && ref.APIVersion == corev1.SchemeGroupVersion.String() {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
	}
	return nil
}
