package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Name is the controller's name prefix and its event reporter.
const Name = "gpunode-stack"

// notReadyRecheck is when a pass whose readiness rests on facts that are not watched (the
// GPU Operator's driver pods) runs again.
const notReadyRecheck = 30 * time.Second

// podNodeIndex indexes the cached operand pods by spec.nodeName.
const podNodeIndex = "spec.nodeName"

// The RBAC the reconcilers use (config/rbac/controller is generated from it). DaemonSets
// are the operands', in the controller's namespace; pods are read (operand pods, and the
// GPU Operator's driver pods in any namespace).
// +kubebuilder:rbac:groups=gpunode.dev,resources=stackpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=gpunode.dev,resources=stackpools/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=stackpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;patch;delete,namespace=gpunode-system
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=nvidia.com,resources=clusterpolicies;nvidiadrivers,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler is the stack controller: Setup registers its two passes, per Node
// (membership, label, hold) and per StackPool (DaemonSets, status).
type Reconciler struct {
	// Client reads StackPools, GPUNodes and DaemonSets (cached) and Nodes (uncached: holds
	// are written with optimistic concurrency), and writes them.
	Client client.Client
	// Cache reads the Nodes' metadata and the operand pods from the manager's cache.
	Cache client.Reader
	// Recorder emits Events on Nodes and StackPools.
	Recorder events.EventRecorder
	// Clock stamps conditions and holds.
	Clock clock.PassiveClock
	// Namespace is where the operand DaemonSets live: the controller's own.
	Namespace string
	// AgentTemplate names the chart's agent DaemonSet in Namespace: a pool whose agent is a
	// Container gets a DaemonSet of its pod template, and the Nodes handed over to a
	// pool's agent wait for its pods to leave. "" when the chart deploys no agent.
	AgentTemplate string
}

// OperandPods selects the pods the stack controller caches: gpunode's operand pods.
func OperandPods() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.LabelStackPool, selection.Exists, nil)
	if err != nil { // a constant, valid key
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// CacheOptions restricts the manager's cache of Pods to the operand pods (OperandPods) and
// of DaemonSets to namespace: merge it into the manager's cache.Options.
func CacheOptions(namespace string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:       {Label: OperandPods()},
		&appsv1.DaemonSet{}: {Namespaces: map[string]cache.Config{namespace: {}}},
	}
}

// SetupWithManager registers both passes with mgr. The GPU Operator's ClusterPolicy and
// NVIDIADriver are watched when their CRDs are installed at start.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	var missing []error
	if r.Client == nil {
		missing = append(missing, errors.New("no Client"))
	}
	if r.Cache == nil {
		missing = append(missing, errors.New("no Cache"))
	}
	if r.Recorder == nil {
		missing = append(missing, errors.New("no Recorder"))
	}
	if r.Clock == nil {
		missing = append(missing, errors.New("no Clock"))
	}
	if r.Namespace == "" {
		missing = append(missing, errors.New("no Namespace"))
	}
	if mgr == nil {
		missing = append(missing, errors.New("no manager"))
	}
	if err := errors.Join(missing...); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podNodeIndex, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("setting up the %s controller: indexing pods by node: %w", Name, err)
	}
	operatorKinds := r.installedKinds(mgr)

	nodes := ctrl.NewControllerManagedBy(mgr).Named(Name+"-node").
		For(&corev1.Node{}, builder.OnlyMetadata, builder.WithPredicates(labelsChanged())).
		Watches(&v1alpha1.StackPool{}, handler.EnqueueRequestsFromMapFunc(r.everyNode)).
		Watches(&v1alpha1.GPUNode{}, handler.EnqueueRequestsFromMapFunc(sameName), builder.WithPredicates(stackFactsChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podNode))
	pools := ctrl.NewControllerManagedBy(mgr).Named(Name+"-pool").
		For(&v1alpha1.StackPool{}).
		Owns(&appsv1.DaemonSet{}).
		Watches(&appsv1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(r.everyPool), builder.WithPredicates(r.isAgentTemplate())).
		WatchesMetadata(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.everyPool), builder.WithPredicates(labelsChanged())).
		Watches(&v1alpha1.GPUNode{}, handler.EnqueueRequestsFromMapFunc(r.nodePool), builder.WithPredicates(stackFactsChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podPool))
	for _, gvk := range operatorKinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		nodes = nodes.Watches(u, handler.EnqueueRequestsFromMapFunc(r.everyNode))
		u = u.DeepCopy()
		pools = pools.Watches(u, handler.EnqueueRequestsFromMapFunc(r.everyPool))
	}
	if err := nodes.Complete(reconcile.Func(r.ReconcileNode)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	if err := pools.Complete(reconcile.Func(r.ReconcilePool)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// installedKinds are the GPU Operator's kinds whose CRDs the API server has.
func (r *Reconciler) installedKinds(mgr ctrl.Manager) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, gvk := range []schema.GroupVersionKind{ClusterPolicyKind, NVIDIADriverKind} {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			out = append(out, gvk)
		}
	}
	return out
}

// isAgentTemplate passes the events of the chart's agent DaemonSet (the agent's template).
func (r *Reconciler) isAgentTemplate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.AgentTemplate != "" && o.GetName() == r.AgentTemplate && o.GetNamespace() == r.Namespace
	})
}

// labelsChanged passes creations, deletions and the updates that change labels.
func labelsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
}

// stackFactsChanged passes the GPUNode updates that change what readiness reads: the
// driver version NVML reports, the agent's own version and its stack status.
func stackFactsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(*v1alpha1.GPUNode)
		b, ok2 := e.ObjectNew.(*v1alpha1.GPUNode)
		if !ok1 || !ok2 {
			return true
		}
		return a.Status.Versions.Driver != b.Status.Versions.Driver || a.Status.Versions.Agent != b.Status.Versions.Agent ||
			!equality.Semantic.DeepEqual(a.Status.Stack, b.Status.Stack)
	}}
}

func sameName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

func podNode(_ context.Context, o client.Object) []reconcile.Request {
	pod, ok := o.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pod.Spec.NodeName}}}
}

func podPool(_ context.Context, o client.Object) []reconcile.Request {
	pool := o.GetLabels()[v1alpha1.LabelStackPool]
	if pool == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
}

// everyNode enqueues every Node: a pool's change may take nodes on or give them up, and an
// update's map call does not show which.
func (r *Reconciler) everyNode(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Cache.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing Nodes after a StackPool change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
	}
	return out
}

// everyPool enqueues every StackPool: a Node's labels may move it between pools.
func (r *Reconciler) everyPool(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.StackPoolList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing StackPools after a Node change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

// nodePool enqueues the pool of the GPUNode's Node (its gpunode.dev/stack-pool label).
func (r *Reconciler) nodePool(ctx context.Context, o client.Object) []reconcile.Request {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.Cache.Get(ctx, client.ObjectKey{Name: o.GetName()}, node); err != nil {
		return nil
	}
	if pool := node.Labels[v1alpha1.LabelStackPool]; pool != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
	}
	return nil
}

// setCondition sets c on conds, stamped now and with generation; it reports whether the
// status, reason or message changed.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, generation int64, now time.Time) bool {
	old := meta.FindStatusCondition(*conds, c.Type)
	changed := old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
	c.ObservedGeneration, c.LastTransitionTime = generation, metav1.NewTime(now)
	c.Message = truncate(c.Message, 32768)
	meta.SetStatusCondition(conds, c)
	return changed
}
