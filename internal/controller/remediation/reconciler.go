package remediation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/remediation"
)

// Name is the controller's name and its event reporter.
const Name = "gpunode-remediation"

// conflictRetry is when a pass that lost an optimistic-concurrency race runs again.
const conflictRetry = 200 * time.Millisecond

// The RBAC the Reconciler uses.
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=devicetaintrules,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=get;list;watch

// Reconciler isolates and recovers faulty GPU nodes: it maps each GPUNode into
// remediation.Facts, decides over the whole fleet (budget, breakers), persists the
// decision's State, applies its hold and carries out its actions, in that order.
//
// It runs one worker: every pass sees the holds the previous passes placed (a pass that
// changes remediation's hold waits for the Node cache to show it), so the budget is never
// exceeded by two passes deciding at once. Client must read Nodes and Pods from the API
// server (ClientOptions); the Nodes' metadata for the budget comes from the cache.
type Reconciler struct {
	// Client reads and writes GPUNodes and policies (cached), Nodes and Pods (uncached).
	Client client.Client
	// Recorder emits Events on GPUNodes.
	Recorder events.EventRecorder
	// Clock is the decisions' time.
	Clock clock.PassiveClock
	// NodeMetadata reads the Nodes' metadata (holds, labels) for the budget: the manager's
	// cache (SetupWithManager sets it), which each pass that changes remediation's hold
	// waits to show the change. Nil: Client.
	NodeMetadata client.Reader
	// DrainTimeout bounds the eviction one pass carries out for an evict-pods action (the
	// decision asks again while pods remain); zero means 2 seconds.
	DrainTimeout time.Duration
	// NoDRA: write no DeviceTaintRule (SetupWithManager sets it when the API server does
	// not serve them).
	NoDRA bool
}

// ClientOptions are the manager's client options the Reconciler needs (a superset of the
// acceptance reconciler's, whose AcceptanceRecords are read uncached too): Nodes and Pods
// are read from the API server, not cached (a cluster's full Node and Pod objects are the
// controller's largest memory cost). The budget reads the Nodes' metadata from the
// metadata-only cache of the Node watch instead. ResourceSlices are read from the API
// server too, only for the nodes remediation holds (the watch is metadata only).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{
		&corev1.Node{}, &corev1.Pod{}, &v1alpha1.AcceptanceRecord{}, &resourcev1.ResourceSlice{},
	}}}
}

// SetupWithManager registers the Reconciler with mgr, with one worker: it watches GPUNodes,
// GPUNodePolicies (a change re-examines every GPUNode), the Nodes' metadata (a hold
// released re-examines the nodes of its pool that wait for budget) and the Nodes' holds
// with gpunode's taints (acceptance.NodeHoldsSource: a hold whose taints someone removed
// comes back).
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
	if r.NodeMetadata == nil {
		r.NodeMetadata = mgr.GetCache() // fed by the Node metadata watch below
	}
	if !r.NoDRA {
		serves, err := servesDRA(mgr)
		if err != nil {
			return fmt.Errorf("setting up the %s controller: %w", Name, err)
		}
		r.NoDRA = !serves
	}
	nodeHolds, err := acceptance.NodeHoldsSource(mgr)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		// gpunode's taints removed while the annotation stays: the hold's taints come back.
		WatchesRawSource(nodeHolds).
		Watches(&v1alpha1.GPUNode{}, gpuNodeEvents()).
		Watches(&v1alpha1.GPUNodePolicy{}, handler.EnqueueRequestsFromMapFunc(acceptance.EveryGPUNode(r.Client))).
		WatchesMetadata(&corev1.Node{}, holdReleased(r.waitingInPool))
	if !r.NoDRA { // a rule changed by hand is put back; a slice published late gets its rule
		b = b.Watches(&resourcev1.DeviceTaintRule{}, ruleEvents()).
			WatchesMetadata(&resourcev1.ResourceSlice{}, handler.EnqueueRequestsFromMapFunc(sliceNode))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// Reconcile decides one GPUNode and carries the decision out: persist the State (with the
// agent request or the acceptance request in the same update), apply the hold, carry out
// the controller's actions, then mirror a summary into status.remediation. When the pass
// placed remediation's hold it returns at once, asking to run again (AfterHoldPlaced):
// isolating the next faulty node (a new fault is queued first) comes before this node's
// first action, which the next pass decides on the new facts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	defer func() {
		if retErr != nil && apierrors.IsConflict(retErr) {
			log.FromContext(ctx).V(1).Info("the GPUNode changed meanwhile; running the pass again", "error", retErr.Error())
			res, retErr = ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
	}()
	again, res, err := r.pass(ctx, req.Name)
	if again {
		res = ctrl.Result{RequeueAfter: AfterHoldPlaced}
	}
	res.Priority = ptr.To(priorityNormal) // a requeue is not a new fault
	return res, err
}

// AfterHoldPlaced is the requeue a pass that placed remediation's hold asks for.
const AfterHoldPlaced = time.Millisecond

// pass is one decision on GPUNode name, carried out; again reports that it placed the hold.
func (r *Reconciler) pass(ctx context.Context, name string) (again bool, res ctrl.Result, err error) {
	gn := &v1alpha1.GPUNode{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, gn); err != nil {
		return false, ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if gn.DeletionTimestamp != nil {
		return false, ctrl.Result{}, nil
	}
	if quiet(gn) { // no hold of remediation's: no DeviceTaintRule either
		_, err := r.syncDeviceTaints(ctx, gn, remediation.Facts{}, nil)
		return false, ctrl.Result{}, err
	}
	now := r.Clock.Now()
	fl, err := r.loadFleet(ctx, gn)
	if err != nil || fl == nil {
		return false, ctrl.Result{}, err
	}
	inFlight, err := r.followControllerStep(ctx, gn, fl)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	r.refuseStamps(gn, fl.policies[fl.fleet.Nodes[fl.self].Pool], now)
	plan, decisions := remediation.DecideFleet(fl.fleet, now)
	if err := r.persistBreakers(ctx, fl, plan); err != nil {
		return false, ctrl.Result{}, err
	}
	d := decisions[fl.self]
	facts := fl.fleet.Nodes[fl.self]
	base := gn.DeepCopy()
	if err := r.persist(ctx, gn, facts, d); err != nil {
		return false, ctrl.Result{}, err
	}
	placed, err := r.applyHold(ctx, gn, facts.State.Phase, d)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	unpublished, err := r.syncDeviceTaints(ctx, gn, facts, ScopeOf(facts, d))
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if err := r.act(ctx, gn, d, fl.driverSelector()); err != nil {
		return false, ctrl.Result{}, err
	}
	mirror(gn, facts, d)
	if err := r.applyStatus(ctx, base, gn); err != nil {
		return false, ctrl.Result{}, err
	}
	if placed && len(d.Actions) == 0 {
		return true, ctrl.Result{}, nil
	}
	after := d.RequeueAfter(now)
	if unpublished && (after == 0 || after > unpublishedRetry) {
		after = unpublishedRetry
	}
	if inFlight || startedControllerStep(d) {
		after = min(after, controllerStepPoll) // a reload-driver in progress is polled
		if after == 0 {
			after = controllerStepPoll
		}
	}
	return false, ctrl.Result{RequeueAfter: after}, nil
}

// startedControllerStep reports whether the decision started a step the controller
// carries out itself and follows by polling.
func startedControllerStep(d remediation.Decision) bool {
	return slices.ContainsFunc(d.Actions, func(a remediation.Action) bool { return a.Kind == remediation.ActionReloadDriver })
}
