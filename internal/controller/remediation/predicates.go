package remediation

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Queue priorities of GPUNode events (controller-runtime's priority queue).
const (
	// priorityNewFault: isolating a node that just turned faulty comes before following
	// the steps of nodes already held.
	priorityNewFault = 100
	// priorityNormal is every other change, and every requeue.
	priorityNormal = 0
)

// gpuNodeEvents enqueues a GPUNode when something a decision reads changed (sameFacts),
// at priorityNewFault when the change is a new fault (newFault). The controller's own
// writes (its state annotation, status.remediation, the phase) and the acceptance
// controller's conditions and holds are not enqueued: a pass that wrote them has already
// decided on what it wrote, and a pass that waits on time alone asks to be requeued.
func gpuNodeEvents() handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object, priority int) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, req)
			return
		}
		q.Add(req)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			p := priorityNormal
			if e.IsInInitialList {
				p = handler.LowPriority
			}
			add(q, e.Object, p)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*v1alpha1.GPUNode)
			n, ok2 := e.ObjectNew.(*v1alpha1.GPUNode)
			switch {
			case !ok1 || !ok2:
				add(q, e.ObjectNew, priorityNormal)
			case newFault(o, n):
				add(q, n, priorityNewFault)
			case !sameFacts(o, n):
				add(q, n, priorityNormal)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object, priorityNormal)
		},
	}
}

// newFault reports whether b shows a fault a did not: a GPU unhealthy that was not, or the
// GPUs unreadable.
func newFault(a, b *v1alpha1.GPUNode) bool {
	unhealthy := func(gn *v1alpha1.GPUNode, index int32) bool {
		return slices.ContainsFunc(gn.Status.GPUHealth, func(g v1alpha1.GPUHealth) bool {
			return g.Index == index && g.Health == v1alpha1.HealthUnhealthy
		})
	}
	for _, g := range b.Status.GPUHealth {
		if g.Health == v1alpha1.HealthUnhealthy && !unhealthy(a, g.Index) {
			return true
		}
	}
	return unreadable(b) && !unreadable(a)
}

func unreadable(gn *v1alpha1.GPUNode) bool {
	c := meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionGPUHealthy)
	return c != nil && c.Reason == ReasonGPUsUnreadable
}

// sameFacts reports whether a and b hold the same inputs to a decision: the node it names,
// the requests in its spec, the release annotation, the controller step's record, a
// repaired or deleted state annotation, the
// agent's status (each GPU's health, pods and processes, the inventory, the acceptance
// answer, the step answer, the GPUHealthy condition) and whether it is being deleted.
func sameFacts(a, b *v1alpha1.GPUNode) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) ||
		a.Annotations[v1alpha1.AnnotationRelease] != b.Annotations[v1alpha1.AnnotationRelease] ||
		a.Annotations[AnnotationControllerStep] != b.Annotations[AnnotationControllerStep] ||
		stateRepaired(a, b) {
		return false
	}
	if !equality.Semantic.DeepEqual(a.Spec, b.Spec) {
		return false
	}
	sa, sb := &a.Status, &b.Status
	return equality.Semantic.DeepEqual(sa.GPUHealth, sb.GPUHealth) &&
		equality.Semantic.DeepEqual(sa.Inventory, sb.Inventory) &&
		equality.Semantic.DeepEqual(sa.LastAcceptance, sb.LastAcceptance) &&
		equality.Semantic.DeepEqual(sa.RemediationAnswer, sb.RemediationAnswer) &&
		equality.Semantic.DeepEqual(meta.FindStatusCondition(sa.Conditions, v1alpha1.ConditionGPUHealthy),
			meta.FindStatusCondition(sb.Conditions, v1alpha1.ConditionGPUHealthy))
}

// stateRepaired reports whether a person repaired or deleted the state annotation: a node
// whose state could not be read is decided again (the controller's own writes of the
// annotation are not a change of the facts).
func stateRepaired(a, b *v1alpha1.GPUNode) bool {
	va, vb := a.Annotations[AnnotationState], b.Annotations[AnnotationState]
	if va == vb {
		return false
	}
	_, err := ReadState(a)
	return err != nil || vb == ""
}
