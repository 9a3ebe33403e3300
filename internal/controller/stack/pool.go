package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
)

// poolScope is one pool pass's state, shared by its phases.
type poolScope struct {
	pool     *v1alpha1.StackPool
	pools    []v1alpha1.StackPool
	operator GPUOperator
	facts    PoolFacts
	excluded []string          // members whose driver an NVIDIADriver deploys
	agent    *appsv1.DaemonSet // the chart's agent DaemonSet, the agent's template; nil when none
	result   ctrl.Result
}

// ReconcilePool is one StackPool's pass: read the GPU Operator's objects, judge the
// members, apply the DaemonSets (and delete the ones no longer wanted), and apply the
// status once at the end, whatever happened. Every phase is re-entrant.
func (r *Reconciler) ReconcilePool(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	pool := &v1alpha1.StackPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // its DaemonSets go with it (owner references)
	}
	if pool.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	s := &poolScope{pool: pool}
	defer func() {
		if err := r.applyPoolStatus(ctx, s); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	for _, phase := range []func(context.Context, *poolScope) error{r.readPools, r.judgeMembers, r.applyDaemonSets} {
		if err := phase(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return s.result, nil
}

func (r *Reconciler) readPools(ctx context.Context, s *poolScope) error {
	var pools v1alpha1.StackPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return fmt.Errorf("list StackPools: %w", err)
	}
	s.pools = pools.Items
	g, err := readGPUOperator(ctx, r.Client)
	if err != nil {
		return err
	}
	s.operator, s.facts.GPUOperator = g, g
	s.agent, err = r.agentTemplate(ctx)
	return err
}

// agentTemplate is the chart's agent DaemonSet (AgentTemplate, in Namespace); nil when
// none is named or it does not exist.
func (r *Reconciler) agentTemplate(ctx context.Context) (*appsv1.DaemonSet, error) {
	if r.AgentTemplate == "" {
		return nil, nil
	}
	ds := &appsv1.DaemonSet{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.AgentTemplate}, ds); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get the agent's template DaemonSet %s/%s: %w", r.Namespace, r.AgentTemplate, err)
	}
	return ds, nil
}

// judgeMembers finds the Nodes the pool selects, tells members from conflicts, and decides
// each member's readiness.
func (r *Reconciler) judgeMembers(ctx context.Context, s *poolScope) error {
	sel, err := Selector(s.pool)
	if err != nil {
		return err
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Cache.List(ctx, nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("list the Nodes of StackPool %q: %w", s.pool.Name, err)
	}
	var pods corev1.PodList // every pool's: a member may still have pods of the pool it left
	if err := r.Cache.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
		return fmt.Errorf("list the operand pods for StackPool %q: %w", s.pool.Name, err)
	}
	podsOn := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
	}
	selectors, _ := Selectors(s.pools) // a bad selector of another pool is the node pass's to log
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil {
			continue
		}
		m := selectors.Member(n.Labels)
		if m.Conflict() {
			s.facts.Conflicting = append(s.facts.Conflicting, n.Name)
			continue
		}
		src := Effective(s.pool, s.operator, n.Labels)
		if src.DriverOwner != "" {
			s.excluded = append(s.excluded, n.Name)
		}
		f := NodeFacts{Name: n.Name, Pods: podsOn[n.Name]}
		if src.Driver == v1alpha1.SourceGPUOperator {
			var theirs corev1.PodList
			if err := r.Client.List(ctx, &theirs, client.MatchingLabels{LabelGPUOperatorApp: GPUOperatorDriverApp},
				client.MatchingFields{podNodeIndex: n.Name}); err != nil {
				return fmt.Errorf("list the GPU Operator's driver pods on Node %q: %w", n.Name, err)
			}
			f.Pods = append(f.Pods, theirs.Items...)
		}
		gn := &v1alpha1.GPUNode{}
		switch err := r.Client.Get(ctx, client.ObjectKey{Name: n.Name}, gn); {
		case err == nil:
			f.GPUNode = gn
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get GPUNode %q: %w", n.Name, err)
		}
		st := Readiness(s.pool, src, f)
		if !Ready(st) && src.Driver == v1alpha1.SourceGPUOperator {
			s.result.RequeueAfter = notReadyRecheck
		}
		s.facts.Members = append(s.facts.Members, st)
		s.facts.Sources = append(s.facts.Sources, src)
	}
	slices.Sort(s.facts.Conflicting)
	slices.Sort(s.excluded)
	return nil
}

// applyDaemonSets applies the DaemonSets Render wants, as gpunode-stack, and deletes the
// pool's DaemonSets it no longer wants (an operand moved to Preinstalled or to the GPU
// Operator). An applied template change does not restart a pod: updateStrategy OnDelete.
func (r *Reconciler) applyDaemonSets(ctx context.Context, s *poolScope) error {
	want := Render(s.pool, r.Namespace, s.operator, s.excluded, s.agent)
	if AgentSource(s.pool) == v1alpha1.SourceContainer && s.agent == nil {
		log.FromContext(ctx).Error(nil, "no agent DaemonSet for the pool: the agent's template DaemonSet is missing",
			"stackPool", s.pool.Name, "template", r.AgentTemplate, "namespace", r.Namespace)
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeWarning, "AgentTemplateMissing", "Render",
			"spec.agent.source is Container but the chart's agent DaemonSet %q is not in namespace %s (controller flag --stack-agent-template): no agent DaemonSet is rendered", r.AgentTemplate, r.Namespace)
	}
	for _, ds := range want {
		content, err := applyfields.Of(ds)
		if err != nil {
			return err
		}
		delete(content, "status")
		if md, ok := content["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		if tmpl, ok := content["spec"].(map[string]any)["template"].(map[string]any); ok {
			if md, ok := tmpl["metadata"].(map[string]any); ok {
				delete(md, "creationTimestamp")
			}
		}
		u := &unstructured.Unstructured{Object: content}
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(v1alpha1.FieldManagerStack), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply DaemonSet %s/%s of StackPool %q: %w", ds.Namespace, ds.Name, s.pool.Name, err)
		}
	}
	var have appsv1.DaemonSetList
	if err := r.Client.List(ctx, &have, client.InNamespace(r.Namespace), client.MatchingLabels{v1alpha1.LabelStackPool: s.pool.Name}); err != nil {
		return fmt.Errorf("list the DaemonSets of StackPool %q: %w", s.pool.Name, err)
	}
	for i := range have.Items {
		ds := &have.Items[i]
		if !metav1.IsControlledBy(ds, s.pool) || slices.ContainsFunc(want, func(w *appsv1.DaemonSet) bool { return w.Name == ds.Name }) {
			continue
		}
		if err := r.Client.Delete(ctx, ds); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete DaemonSet %s/%s of StackPool %q: %w", ds.Namespace, ds.Name, s.pool.Name, err)
		}
		r.Recorder.Eventf(s.pool, ds, corev1.EventTypeNormal, "OperandRemoved", "Delete",
			"DaemonSet %s deleted: the pool no longer asks gpunode to deploy its %s", ds.Name, ds.Labels[LabelComponent])
	}
	return nil
}

// applyPoolStatus applies the pool's status (Aggregate) as gpunode-stack when it differs
// from the one read, and emits an Event for each condition that changed.
func (r *Reconciler) applyPoolStatus(ctx context.Context, s *poolScope) error {
	st, conds := Aggregate(s.pool, s.facts)
	st.Conditions = slices.Clone(s.pool.Status.Conditions)
	now := r.Clock.Now()
	var changed []metav1.Condition
	for _, c := range conds {
		if setCondition(&st.Conditions, c, s.pool.Generation, now) {
			changed = append(changed, c)
		}
	}
	if equality.Semantic.DeepEqual(st, s.pool.Status) {
		return nil
	}
	if err := applyfields.ApplyStatus(ctx, r.Client, "StackPool", s.pool.Name, st, v1alpha1.FieldManagerStack); err != nil {
		return err
	}
	for _, c := range changed {
		typ := corev1.EventTypeNormal
		if (c.Type == v1alpha1.ConditionStackReady && c.Status != metav1.ConditionTrue) ||
			(c.Type == v1alpha1.ConditionNodesConflicting && c.Status == metav1.ConditionTrue) {
			typ = corev1.EventTypeWarning
		}
		if old := meta.FindStatusCondition(s.pool.Status.Conditions, c.Type); old == nil && c.Status == metav1.ConditionFalse && c.Type != v1alpha1.ConditionStackReady {
			continue // a first "nothing to say" is no event
		}
		r.Recorder.Eventf(s.pool, nil, typ, c.Reason, "Reconcile", "%s", c.Message)
	}
	return nil
}
