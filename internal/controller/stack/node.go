package stack

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// ReconcileNode is one Node's pass: its pool (Member), then its gpunode.dev/stack-pool
// label and stack hold (DecideNode). It writes only what differs from the Node's cached
// metadata, so a node no pool selects costs no write; every step is re-entrant.
func (r *Reconciler) ReconcileNode(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.Cache.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	var pools v1alpha1.StackPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return ctrl.Result{}, fmt.Errorf("list StackPools for Node %q: %w", node.Name, err)
	}
	m, err := Member(node.Labels, pools.Items)
	if err != nil {
		log.FromContext(ctx).Error(err, "some StackPools were not considered", "node", node.Name)
	}
	var ready *v1alpha1.StackNodeStatus
	var result ctrl.Result
	if name := m.Pool(); name != "" {
		pool := findPool(pools.Items, name)
		g, err := readGPUOperator(ctx, r.Client)
		if err != nil {
			return ctrl.Result{}, err
		}
		src := Effective(pool, g, node.Labels)
		facts, err := r.nodeFacts(ctx, node.Name, pool, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		st := Readiness(pool, src, facts)
		ready = &st
		if !Ready(st) && src.Driver == v1alpha1.SourceGPUOperator {
			result.RequeueAfter = notReadyRecheck // the GPU Operator's pods are not watched
		}
	}
	d := DecideNode(m, ready)
	if err := r.applyLabel(ctx, node, d.Pool); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.applyHold(ctx, node, d); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

func findPool(pools []v1alpha1.StackPool, name string) *v1alpha1.StackPool {
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i]
		}
	}
	return nil
}

// nodeFacts reads what a member node's readiness is decided from: its GPUNode, pool's
// operand pods on it (cached) and, when the driver is the GPU Operator's, the GPU
// Operator's driver pods on it (from the API server: they are not cached).
func (r *Reconciler) nodeFacts(ctx context.Context, nodeName string, pool *v1alpha1.StackPool, src Sources) (NodeFacts, error) {
	f := NodeFacts{Name: nodeName}
	gn := &v1alpha1.GPUNode{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: nodeName}, gn); {
	case err == nil:
		f.GPUNode = gn
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("get GPUNode %q: %w", nodeName, err)
	}
	var pods corev1.PodList
	if err := r.Cache.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingFields{podNodeIndex: nodeName},
		client.MatchingLabels{v1alpha1.LabelStackPool: pool.Name}); err != nil {
		return f, fmt.Errorf("list the operand pods on Node %q: %w", nodeName, err)
	}
	f.Pods = pods.Items
	if src.Driver == v1alpha1.SourceGPUOperator {
		var theirs corev1.PodList
		if err := r.Client.List(ctx, &theirs, client.MatchingLabels{LabelGPUOperatorApp: GPUOperatorDriverApp},
			client.MatchingFields{podNodeIndex: nodeName}); err != nil {
			return f, fmt.Errorf("list the GPU Operator's driver pods on Node %q: %w", nodeName, err)
		}
		f.Pods = append(f.Pods, theirs.Items...)
	}
	return f, nil
}

// applyLabel applies the Node's gpunode.dev/stack-pool label as gpunode-stack: pool, or no
// label when pool is "".
func (r *Reconciler) applyLabel(ctx context.Context, node *metav1.PartialObjectMetadata, pool string) error {
	current, has := node.Labels[v1alpha1.LabelStackPool]
	if (pool == "" && !has) || (pool != "" && current == pool) {
		return nil
	}
	md := map[string]any{"name": node.Name}
	if pool != "" {
		md["labels"] = map[string]any{v1alpha1.LabelStackPool: pool}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": md}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerStack), client.ForceOwnership); err != nil {
		return fmt.Errorf("label Node %q %s=%q: %w", node.Name, v1alpha1.LabelStackPool, pool, err)
	}
	if pool == "" {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "LeftStackPool", "Unlabel", "the Node left StackPool %q", current)
	} else {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "JoinedStackPool", "Label", "the Node joined StackPool %q", pool)
	}
	return nil
}

// applyHold takes, updates or releases the stack hold when the Node's holds differ from
// the decision.
func (r *Reconciler) applyHold(ctx context.Context, node *metav1.PartialObjectMetadata, d NodeDecision) error {
	holds, err := nodeops.ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return err
	}
	old, held := holds.Find(v1alpha1.HoldOwnerStack)
	ops := nodeops.Ops{Client: r.Client, Clock: r.Clock.Now}
	switch {
	case d.Hold == "" && !held:
		return nil
	case d.Hold == "":
		if err := ops.Release(ctx, node.Name, v1alpha1.HoldOwnerStack); err != nil {
			return err
		}
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "StackReady", "Release", "the stack hold is released: %s", releasedWhy(d))
		return nil
	case held && old.Reason == d.Hold:
		return nil
	}
	if err := ops.Hold(ctx, node.Name, v1alpha1.HoldOwnerStack, d.Hold); err != nil {
		return err
	}
	reason := "StackNotReady"
	if d.Pool == "" {
		reason = "StackPoolConflict"
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, "Hold", "%s", d.Hold)
	return nil
}

func releasedWhy(d NodeDecision) string {
	if d.Pool == "" {
		return "no StackPool selects the Node any more"
	}
	return fmt.Sprintf("the driver and toolkit of StackPool %q are ready", d.Pool)
}
