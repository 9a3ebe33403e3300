package acceptance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// NodeHoldsSource is a watch of the Nodes that enqueues a Node's GPUNode (the same name)
// when the Node's holds change as gpunode sees them (nodeops.HoldsChanged: the holds
// annotation or gpunode's taints), so that an owner whose hold someone removed puts it back
// within a pass. The remediation controller uses it too.
//
// Taints are in a Node's spec, which a metadata-only watch does not carry, so the source
// has a cache of its own, started by mgr, that keeps of each Node only its name, the holds
// annotation and gpunode's taints (holdsView): a cluster's full Nodes are the controller's
// largest memory cost, and nothing reads Nodes from this cache.
func NodeHoldsSource(mgr ctrl.Manager) (source.Source, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: holdsView}},
	})
	if err != nil {
		return nil, fmt.Errorf("the Node holds cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("the Node holds cache: %w", err)
	}
	return source.Kind(c, &corev1.Node{}, handler.TypedEnqueueRequestsFromMapFunc(nodeGPUNode), holdsChanged()), nil
}

// holdsChanged passes the updates that change a Node's holds (nodeops.HoldsChanged); the
// GPUNode watch covers creation and deletion.
func holdsChanged() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		CreateFunc:  func(event.TypedCreateEvent[*corev1.Node]) bool { return false },
		DeleteFunc:  func(event.TypedDeleteEvent[*corev1.Node]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*corev1.Node]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return nodeops.HoldsChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// nodeGPUNode is the GPUNode of a Node: it has the Node's name.
func nodeGPUNode(_ context.Context, n *corev1.Node) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n.Name}}}
}

// holdsView is what the Node holds cache keeps of a Node: its name and resourceVersion, the
// holds annotation and gpunode's taints.
func holdsView(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return o, nil
	}
	out := &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Spec:       corev1.NodeSpec{Taints: nodeops.OwnedTaints(n.Spec.Taints)},
	}
	if v, ok := n.Annotations[v1alpha1.AnnotationHolds]; ok {
		out.Annotations = map[string]string{v1alpha1.AnnotationHolds: v}
	}
	return out, nil
}
