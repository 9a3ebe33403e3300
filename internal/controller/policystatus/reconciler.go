package policystatus

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Name is the controller's name (logs, metrics).
const Name = "policystatus"

// fleet is the one key the controller works on: every change counts every policy again,
// and a burst of changes is one count (the workqueue merges equal keys).
var fleet = reconcile.Request{NamespacedName: types.NamespacedName{Name: "fleet"}}

// Reconciler counts the GPU nodes each GPUNodePolicy governs and applies status.nodes,
// with the acceptance controller's field manager (acceptance owns the selection).
type Reconciler struct {
	// Client writes the policies' status.
	Client client.Client
	// Reader lists GPUNodes, policies and the Nodes' metadata: the manager's cache.
	Reader client.Reader
}

// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile counts and applies each policy's count that changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var policies v1alpha1.GPUNodePolicyList
	if err := r.Reader.List(ctx, &policies); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing GPUNodePolicies: %w", err)
	}
	if len(policies.Items) == 0 {
		return reconcile.Result{}, nil
	}
	var gpuNodes v1alpha1.GPUNodeList
	if err := r.Reader.List(ctx, &gpuNodes); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing GPUNodes: %w", err)
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Reader.List(ctx, nodes); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing Nodes: %w", err)
	}
	labels := make(map[string]map[string]string, len(nodes.Items))
	for _, n := range nodes.Items {
		labels[n.Name] = n.Labels
	}
	counts := Count(gpuNodes.Items, labels, policies.Items)
	var errs []error
	for i := range policies.Items {
		p := &policies.Items[i]
		if p.Status.Nodes == counts[p.Name] && p.Status.ObservedGeneration == p.Generation {
			continue
		}
		if err := r.apply(ctx, p, counts[p.Name]); err != nil {
			errs = append(errs, err)
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// apply writes status.nodes (0 included) of p.
func (r *Reconciler) apply(ctx context.Context, p *v1alpha1.GPUNodePolicy, nodes int32) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNodePolicy",
		"metadata": map[string]any{"name": p.Name},
		"status":   map[string]any{"nodes": int64(nodes), "observedGeneration": p.Generation},
	}}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerAcceptance), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status.nodes of GPUNodePolicy %q: %w", p.Name, err)
	}
	return nil
}

// SetupWithManager counts on every policy change, every GPUNode created or deleted and
// every change of a Node's labels.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Reader == nil {
		return errors.New("policystatus: the Reconciler needs a Client and a Reader")
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{fleet}
	})
	createDelete := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	return ctrl.NewControllerManagedBy(mgr).Named(Name).
		Watches(&v1alpha1.GPUNodePolicy{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, specOrCountChanged()))).
		Watches(&v1alpha1.GPUNode{}, all, builder.WithPredicates(createDelete)).
		WatchesMetadata(&corev1.Node{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// specOrCountChanged passes a policy update whose status.nodes was changed by someone else
// (or lost), so that the count is put back.
func specOrCountChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.GPUNodePolicy)
		n, ok2 := e.ObjectNew.(*v1alpha1.GPUNodePolicy)
		return ok1 && ok2 && o.Status.Nodes != n.Status.Nodes
	}}
}
