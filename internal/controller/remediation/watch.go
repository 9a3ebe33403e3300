package remediation

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// holdReleased is the Node (metadata) event handler that frees budget: when a Node loses a
// hold, any owner's, or goes away, waiting(node) names the GPUNodes to re-examine.
func holdReleased(waiting func(context.Context, client.Object) []reconcile.Request) handler.EventHandler {
	enqueue := func(ctx context.Context, node client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range waiting(ctx, node) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if holdCount(e.ObjectNew) < holdCount(e.ObjectOld) {
				enqueue(ctx, e.ObjectNew, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// holdCount is how many holds a Node's annotation lists (a malformed one counts none).
func holdCount(o client.Object) int {
	hs, err := nodeops.ParseHolds(o.GetName(), o.GetAnnotations()[v1alpha1.AnnotationHolds])
	if err != nil {
		return 0
	}
	return len(hs)
}

// waitingInPool names the GPUNodes in node's pool that wait for budget (phase Suspect): a
// hold released in the pool may admit them, and nothing else about them changes. It names
// the node's own GPUNode too: remediation's hold may be the one that went.
func (r *Reconciler) waitingInPool(ctx context.Context, node client.Object) []reconcile.Request {
	logger := log.FromContext(ctx).WithValues("node", node.GetName())
	var gns v1alpha1.GPUNodeList
	if err := r.Client.List(ctx, &gns); err != nil {
		logger.Error(err, "listing GPUNodes after a hold was released")
		return nil
	}
	var waiting []*v1alpha1.GPUNode
	var out []reconcile.Request
	for i := range gns.Items {
		gn := &gns.Items[i]
		switch {
		case gn.Spec.NodeName == node.GetName():
			// The node itself: a hold of remediation's removed by someone else comes back.
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gn.Name}})
		case gn.Status.Remediation != nil && gn.Status.Remediation.Phase == v1alpha1.PhaseSuspect:
			waiting = append(waiting, gn)
		}
	}
	if len(waiting) == 0 {
		return out
	}
	var policies v1alpha1.GPUNodePolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		logger.Error(err, "listing GPUNodePolicies after a hold was released")
		return out
	}
	nodes, err := r.listNodeMeta(ctx)
	if err != nil {
		logger.Error(err, "listing Nodes after a hold was released")
		return out
	}
	labels := make(map[string]map[string]string, len(nodes.Items))
	for _, n := range nodes.Items {
		labels[n.Name] = n.Labels
	}
	pool := poolOf(node.GetLabels(), policies.Items)
	for _, gn := range waiting {
		if l, ok := labels[gn.Spec.NodeName]; ok && poolOf(l, policies.Items) == pool {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gn.Name}})
		}
	}
	logger.V(1).Info("a hold was released; re-examining the pool's waiting nodes", "pool", pool, "nodes", len(out))
	return out
}

// poolOf is the name of the policy that governs a node with these labels ("" for none).
func poolOf(labels map[string]string, policies []v1alpha1.GPUNodePolicy) string {
	if p, _ := acceptance.SelectPolicy(labels, policies); p != nil {
		return p.Name
	}
	return ""
}
