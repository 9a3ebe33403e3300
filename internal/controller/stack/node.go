package stack

import (
	"context"
	"fmt"
	"time"

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
	want := "" // the pool whose agent DaemonSet is to serve the node
	if name := m.Pool(); name != "" {
		pool := findPool(pools.Items, name)
		g, err := readGPUOperator(ctx, r.Client)
		if err != nil {
			return ctrl.Result{}, err
		}
		src := Effective(pool, g, node.Labels)
		facts, err := r.nodeFacts(ctx, node.Name, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		st := Readiness(pool, src, facts)
		ready = &st
		if !Ready(st) && src.Driver == v1alpha1.SourceGPUOperator {
			result.RequeueAfter = notReadyRecheck // the GPU Operator's pods are not watched
		}
		if AgentSource(pool) == v1alpha1.SourceContainer {
			want = name
		}
	}
	d := DecideNode(m, ready)
	agent, err := r.agentHandover(ctx, node, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if agent.Waiting != "" && (result.RequeueAfter == 0 || result.RequeueAfter > handoverRecheck) {
		result.RequeueAfter = handoverRecheck // the chart's agent pods are not watched
	}
	if err := r.applyLabels(ctx, node, d.Pool, agent); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.applyHold(ctx, node, d); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// handoverRecheck is when a Node whose agent hand-over waits for a pod to leave is looked
// at again: the chart's agent pods are not watched.
const handoverRecheck = 5 * time.Second

// agentHandover decides the Node's hand-over labels (DecideAgent) from the agent pods on
// it. A Node that no pool's agent concerns, and never did, costs no read.
func (r *Reconciler) agentHandover(ctx context.Context, node *metav1.PartialObjectMetadata, want string) (AgentDecision, error) {
	f := AgentFacts{Want: want, StackAgent: node.Labels[v1alpha1.LabelStackAgent], ChartOff: node.Labels[v1alpha1.LabelChartAgent] == v1alpha1.ChartAgentOff}
	if f.Want == "" && f.StackAgent == "" && !f.ChartOff {
		return AgentDecision{}, nil
	}
	var pods corev1.PodList
	if err := r.Cache.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingFields{podNodeIndex: node.Name},
		client.MatchingLabels{LabelComponent: ComponentAgent}); err != nil {
		return AgentDecision{}, fmt.Errorf("list the pools' agent pods on Node %q: %w", node.Name, err)
	}
	for _, p := range pods.Items {
		if pool := p.Labels[v1alpha1.LabelStackPool]; pool != "" {
			if f.PoolPods == nil {
				f.PoolPods = map[string]string{}
			}
			f.PoolPods[pool] = p.Name
		}
	}
	if f.Want != "" && f.StackAgent != f.Want {
		name, err := r.chartAgentPod(ctx, node.Name)
		if err != nil {
			return AgentDecision{}, err
		}
		f.ChartPod = name
	}
	return DecideAgent(f), nil
}

// chartAgentPod is the name of a pod of the chart's agent DaemonSet on the Node, read from
// the API server (they are not cached); "" when none is, or no chart agent is named.
func (r *Reconciler) chartAgentPod(ctx context.Context, nodeName string) (string, error) {
	tmpl, err := r.agentTemplate(ctx)
	if err != nil || tmpl == nil {
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(tmpl.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("the selector of DaemonSet %s/%s: %w", tmpl.Namespace, tmpl.Name, err)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.MatchingFields{podNodeIndex: nodeName}); err != nil {
		return "", fmt.Errorf("list the chart's agent pods on Node %q: %w", nodeName, err)
	}
	for _, p := range pods.Items {
		if p.Labels[v1alpha1.LabelStackPool] == "" { // a pool's agent pod carries the chart's labels too
			return p.Name, nil
		}
	}
	return "", nil
}

func findPool(pools []v1alpha1.StackPool, name string) *v1alpha1.StackPool {
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i]
		}
	}
	return nil
}

// nodeFacts reads what a member node's readiness is decided from: its GPUNode, the operand
// pods of every pool on it (cached: another pool's are those of the pool it left) and, when the driver is the GPU Operator's, the GPU
// Operator's driver pods on it (from the API server: they are not cached).
func (r *Reconciler) nodeFacts(ctx context.Context, nodeName string, src Sources) (NodeFacts, error) {
	f := NodeFacts{Name: nodeName}
	gn := &v1alpha1.GPUNode{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: nodeName}, gn); {
	case err == nil:
		f.GPUNode = gn
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("get GPUNode %q: %w", nodeName, err)
	}
	var pods corev1.PodList
	if err := r.Cache.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingFields{podNodeIndex: nodeName}); err != nil {
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

// applyLabels applies the Node's labels of gpunode-stack (server-side apply: a label left
// out is removed): gpunode.dev/stack-pool=<pool> (none when pool is ""), and the agent's
// hand-over labels gpunode.dev/chart-agent and gpunode.dev/stack-agent.
func (r *Reconciler) applyLabels(ctx context.Context, node *metav1.PartialObjectMetadata, pool string, agent AgentDecision) error {
	want := map[string]string{}
	if pool != "" {
		want[v1alpha1.LabelStackPool] = pool
	}
	if agent.ChartOff {
		want[v1alpha1.LabelChartAgent] = v1alpha1.ChartAgentOff
	}
	if agent.StackAgent != "" {
		want[v1alpha1.LabelStackAgent] = agent.StackAgent
	}
	same := true
	for _, k := range []string{v1alpha1.LabelStackPool, v1alpha1.LabelChartAgent, v1alpha1.LabelStackAgent} {
		v, has := node.Labels[k]
		if w, wanted := want[k]; has != wanted || v != w {
			same = false
		}
	}
	if same {
		return nil
	}
	md := map[string]any{"name": node.Name}
	if len(want) > 0 {
		lbls := map[string]any{}
		for k, v := range want {
			lbls[k] = v
		}
		md["labels"] = lbls
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": md}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerStack), client.ForceOwnership); err != nil {
		return fmt.Errorf("label Node %q %v: %w", node.Name, want, err)
	}
	r.labelEvents(node, pool, agent)
	return nil
}

// labelEvents says on the Node what applyLabels changed: the pool it joined or left, and
// whose agent serves it.
func (r *Reconciler) labelEvents(node *metav1.PartialObjectMetadata, pool string, agent AgentDecision) {
	current := node.Labels[v1alpha1.LabelStackPool]
	switch {
	case current == pool:
	case pool == "":
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "LeftStackPool", "Unlabel", "the Node left StackPool %q", current)
	default:
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "JoinedStackPool", "Label", "the Node joined StackPool %q", pool)
	}
	old := node.Labels[v1alpha1.LabelStackAgent]
	switch {
	case old == agent.StackAgent:
	case agent.StackAgent != "":
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "AgentHandedOver", "Label", "the Node's agent is now StackPool %q's (DaemonSet %s)",
			agent.StackAgent, DaemonSetName(agent.StackAgent, ComponentAgent))
	case !agent.ChartOff:
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "AgentHandedOver", "Unlabel", "the Node's agent is the chart's DaemonSet again")
	default:
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "AgentHandingOver", "Unlabel", "StackPool %q's agent leaves the Node; waiting for %s", old, agent.Waiting)
	}
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
	return fmt.Sprintf("the operands of StackPool %q are ready", d.Pool)
}
