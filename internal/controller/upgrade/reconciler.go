package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
	"github.com/gpunode/gpunode/internal/upgrade"
)

// Name is the controller's name and its event reporter.
const Name = "gpunode-upgrade"

// Reconciler is the upgrade controller (see the package comment).
type Reconciler struct {
	// Client reads StackUpgrades, StackPools, GPUNodes and Nodes' metadata and applies
	// StackUpgrade status.
	Client client.Client
	// Recorder emits Events on StackUpgrades.
	Recorder events.EventRecorder
	// Clock stamps conditions and is the planner's clock.
	Clock clock.PassiveClock
}

// SetupWithManager registers the controller with mgr: a pass per StackUpgrade, again when
// its pool, a Node or a GPUNode changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	var missing []error
	if r.Client == nil {
		missing = append(missing, errors.New("no Client"))
	}
	if r.Recorder == nil {
		missing = append(missing, errors.New("no Recorder"))
	}
	if r.Clock == nil {
		missing = append(missing, errors.New("no Clock"))
	}
	if mgr == nil {
		missing = append(missing, errors.New("no manager"))
	}
	if err := errors.Join(missing...); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	every := handler.EnqueueRequestsFromMapFunc(r.everyUpgrade)
	err := ctrl.NewControllerManagedBy(mgr).Named(Name).
		For(&v1alpha1.StackUpgrade{}).
		Watches(&v1alpha1.StackPool{}, every).
		WatchesMetadata(&corev1.Node{}, every, builder.WithPredicates(metadataChanged())).
		Watches(&v1alpha1.GPUNode{}, every, builder.WithPredicates(planFactsChanged())).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

func (r *Reconciler) everyUpgrade(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.StackUpgradeList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i, su := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: su.Name}}
	}
	return out
}

// scope is one pass's state, shared by its phases.
type scope struct {
	su     *v1alpha1.StackUpgrade
	pool   *v1alpha1.StackPool
	v      view
	result ctrl.Result
}

// Reconcile is one StackUpgrade's pass: read the pool and its members, check the upgrade,
// plan it, and apply the status once at the end, whatever happened.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	su := &v1alpha1.StackUpgrade{}
	if err := r.Client.Get(ctx, req.NamespacedName, su); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if su.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	s := &scope{su: su}
	defer func() {
		if err := r.applyStatus(ctx, s); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	for _, phase := range []func(context.Context, *scope) error{r.readPool, r.readMembers, r.check, r.plan} {
		if err := phase(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if len(s.v.refused) > 0 {
			return ctrl.Result{}, nil
		}
	}
	return s.result, nil
}

func (r *Reconciler) readPool(ctx context.Context, s *scope) error {
	pool := &v1alpha1.StackPool{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.su.Spec.Pool}, pool)
	if apierrors.IsNotFound(err) {
		s.v.refused = []upgrade.Refusal{{Reason: v1alpha1.ReasonUpgradePoolNotFound, Message: fmt.Sprintf("StackPool %q does not exist", s.su.Spec.Pool)}}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get StackPool %q: %w", s.su.Spec.Pool, err)
	}
	s.pool, s.v.from = pool, poolVersions(pool)
	return nil
}

// readMembers reads the pool's member Nodes (label gpunode.dev/stack-pool) and their
// GPUNodes.
func (r *Reconciler) readMembers(ctx context.Context, s *scope) error {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Client.List(ctx, nodes, client.MatchingLabels{v1alpha1.LabelStackPool: s.pool.Name}); err != nil {
		return fmt.Errorf("list the Nodes of StackPool %q: %w", s.pool.Name, err)
	}
	s.v.entries = map[string]v1alpha1.UpgradeNodeStatus{}
	for _, e := range s.su.Status.NodeStatus {
		s.v.entries[e.Name] = e
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		gn := &v1alpha1.GPUNode{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: n.Name}, gn); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("get GPUNode %q: %w", n.Name, err)
			}
			gn = nil
		}
		var entry *v1alpha1.UpgradeNodeStatus
		if e, ok := s.v.entries[n.Name]; ok {
			entry = &e
		}
		s.v.nodes = append(s.v.nodes, nodeOf(n, gn, entry))
	}
	return nil
}

// check refuses the upgrade as CheckMatrix does. Other upgrades count while they are not
// finished.
func (r *Reconciler) check(ctx context.Context, s *scope) error {
	var list v1alpha1.StackUpgradeList
	if err := r.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("list StackUpgrades: %w", err)
	}
	c := upgrade.Check{
		Self:   upgrade.Ref{Name: s.su.Name, Created: s.su.CreationTimestamp.Time},
		Target: upgrade.Versions(targetVersions(s.su.Spec.Target)), Pool: s.v.from,
		Matrix: matrixOf(s.su.Spec.VersionMatrix),
	}
	for _, n := range s.v.nodes {
		c.Nodes = append(c.Nodes, n.Name)
	}
	for _, o := range list.Items {
		if o.Name == s.su.Name || finished(o.Status.Phase) || o.Spec.Pool != s.su.Spec.Pool {
			continue
		}
		c.Others = append(c.Others, upgrade.Other{Ref: upgrade.Ref{Name: o.Name, Created: o.CreationTimestamp.Time}, Nodes: c.Nodes})
	}
	s.v.refused = upgrade.CheckMatrix(c)
	return nil
}

func finished(p v1alpha1.UpgradePhase) bool {
	return p == v1alpha1.UpgradeComplete || p == v1alpha1.UpgradeAborted || p == v1alpha1.UpgradeRefused
}

func (r *Reconciler) plan(_ context.Context, s *scope) error {
	spec, err := SpecOf(s.su)
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	s.v.decision = upgrade.Decide(s.v.nodes, spec, now)
	if at := s.v.decision.RequeueAt; !at.IsZero() {
		s.result.RequeueAfter = max(at.Sub(now), time.Second)
	}
	return nil
}

// applyStatus applies the pass's status as gpunode-upgrade when it differs from the one
// read, and emits an Event for each condition that changed.
func (r *Reconciler) applyStatus(ctx context.Context, s *scope) error {
	st, conds := statusOf(s.su, s.v)
	st.Conditions = slices.Clone(s.su.Status.Conditions)
	now := r.Clock.Now()
	var changed []metav1.Condition
	for _, c := range conds {
		if setCondition(&st.Conditions, c, s.su.Generation, now) {
			changed = append(changed, c)
		}
	}
	if equality.Semantic.DeepEqual(st, s.su.Status) {
		return nil
	}
	if err := applyfields.ApplyStatus(ctx, r.Client, "StackUpgrade", s.su.Name, st, v1alpha1.FieldManagerUpgrade); err != nil {
		return err
	}
	for _, c := range changed {
		typ := corev1.EventTypeNormal
		if (c.Type == v1alpha1.ConditionUpgradeAccepted && c.Status == metav1.ConditionFalse) ||
			(c.Type == v1alpha1.ConditionUpgradeHalted && c.Status == metav1.ConditionTrue) {
			typ = corev1.EventTypeWarning
		}
		if meta.FindStatusCondition(s.su.Status.Conditions, c.Type) == nil && c.Status == metav1.ConditionFalse && c.Type != v1alpha1.ConditionUpgradeAccepted {
			continue // a first "nothing to say" is no event
		}
		r.Recorder.Eventf(s.su, nil, typ, c.Reason, "Reconcile", "%s", c.Message)
	}
	return nil
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition, generation int64, now time.Time) bool {
	old := meta.FindStatusCondition(*conds, c.Type)
	changed := old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
	c.ObservedGeneration, c.LastTransitionTime = generation, metav1.NewTime(now)
	if len(c.Message) > 32768 {
		c.Message = c.Message[:32768]
	}
	meta.SetStatusCondition(conds, c)
	return changed
}
