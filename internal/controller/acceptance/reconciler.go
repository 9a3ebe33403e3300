package acceptance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

//go:generate go tool controller-gen rbac:roleName=gpunode-controller paths=./... paths=../remediation/... paths=../policystatus/... paths=../stack/... paths=../baseline/... output:rbac:artifacts:config=../../../config/rbac/controller

// Name is the controller's name, its event reporter and its field manager's prefix.
const Name = "gpunode-acceptance"

// recordRetry is when a pass whose answered record is not yet readable runs again (the
// record's watch event normally comes first).
const recordRetry = 5 * time.Second

// conflictRetry is when a pass that lost an optimistic-concurrency race runs again.
const conflictRetry = 200 * time.Millisecond

// The RBAC the Reconciler uses, exactly (config/rbac/controller is generated from it):
// leader election takes a Lease (and records core Events on it).
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodes/status,verbs=get;patch
// +kubebuilder:rbac:groups=gpunode.dev,resources=gpunodepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=gpunode.dev,resources=acceptancerecords,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=gpunode-system

// Reconciler is the acceptance gate for GPUNodes.
//
// Client must read Nodes from the API server, not a cache (nodeops.Ops writes holds with
// optimistic concurrency): build the manager with ClientOptions.
type Reconciler struct {
	// Client reads and writes GPUNodes, policies and records (cached) and Nodes and Pods
	// (uncached).
	Client client.Client
	// Recorder emits Events on GPUNodes and Nodes.
	Recorder events.EventRecorder
	// Clock stamps conditions and new holds.
	Clock clock.PassiveClock
	// KubernetesRecheck is how soon a node held by a failed layer-kubernetes check is
	// judged again (0: DefaultKubernetesRecheck); the Node's status is not watched.
	KubernetesRecheck time.Duration
	// Workers is how many GPUNodes are judged at once (0: DefaultWorkers). A pass decides
	// one node from that node's objects alone, and a node is never in two passes at once,
	// so passes of different nodes may overlap: most of a pass is waiting on the API server.
	Workers int

	// DaemonSets reads every namespace's DaemonSets for the L2 check kubernetes.operands
	// (the manager's API reader: uncached); nil: the check skips.
	DaemonSets client.Reader

	apiReader client.Reader // GPUNodes uncached, to confirm a restore (restore.go)
	firstPass sync.Once
	started   time.Time // the first pass's time (watchingSince)
}

// DefaultWorkers is how many GPUNodes the Reconciler judges at once by default: with one,
// the acceptance of a fleet's new nodes queues behind every pass's round trips to the API
// server (100 nodes on a loaded API server took over 5 minutes).
const DefaultWorkers = 4

// Scheme is the scheme the controller's manager needs: the built-in kinds and gpunode's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("building the controller's scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("building the controller's scheme: %w", err)
	}
	return s, nil
}

// SetupWithManager registers the Reconciler with mgr: it watches GPUNodes (all but the
// updates that only carry a heartbeat: notHeartbeatOnly), every GPUNodePolicy (a change
// re-examines every GPUNode: a policy may take nodes on or give them up, and an update
// does not show the old selector), AcceptanceRecords (their node) and the Nodes' holds
// (NodeHoldsSource: a hold removed by someone else is put back).
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
	workers := r.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	r.apiReader = mgr.GetAPIReader()
	nodeHolds, err := NodeHoldsSource(mgr)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&v1alpha1.GPUNode{}, builder.WithPredicates(notHeartbeatOnly())).
		// A hold someone else removed from the Node comes back (restore.go).
		WatchesRawSource(nodeHolds).
		Watches(&v1alpha1.GPUNodePolicy{}, handler.EnqueueRequestsFromMapFunc(EveryGPUNode(r.Client))).
		// Records by their metadata only: the full records of a large fleet's history would
		// be most of the cache (test/scale); the one being judged is read from the server.
		WatchesMetadata(&v1alpha1.AcceptanceRecord{}, handler.EnqueueRequestsFromMapFunc(recordNode)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// EveryGPUNode is a map function that enqueues every GPUNode: a policy change may take
// nodes on or give them up, and an update does not show the old selector. The remediation
// reconciler uses it too.
func EveryGPUNode(c client.Client) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.GPUNodeList
		if err := c.List(ctx, &list); err != nil {
			log.FromContext(ctx).Error(err, "listing GPUNodes after a policy change")
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, gn := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gn.Name}})
		}
		return out
	}
}

func recordNode(_ context.Context, o client.Object) []reconcile.Request {
	node := o.GetLabels()[v1alpha1.LabelNode]
	if rec, full := o.(*v1alpha1.AcceptanceRecord); full && rec.Spec.Node != "" {
		node = rec.Spec.Node
	}
	if node == "" {
		node = nodeOfRecordName(o.GetName())
	}
	if node == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: node}}}
}

// nodeOfRecordName is the node of a record named as the agent names them,
// "<node>-<yyyymmddThhmmssZ>-<8 hex>" in lower case; "" for another name.
func nodeOfRecordName(name string) string {
	parts := strings.Split(name, "-")
	if len(parts) < 3 {
		return ""
	}
	stamp, sum := parts[len(parts)-2], parts[len(parts)-1]
	if len(stamp) != 16 || stamp[8] != 't' || stamp[15] != 'z' || len(sum) != 8 {
		return ""
	}
	return strings.Join(parts[:len(parts)-2], "-")
}

// scope is one pass's state, shared by the phases.
type scope struct {
	gn     *v1alpha1.GPUNode
	node   *corev1.Node // nil when the Node is gone
	policy *v1alpha1.GPUNodePolicy
	result ctrl.Result
	latest *v1alpha1.GPUNode // read from the API server to decide restores (restore.go)
	// due are the holds the GPUNode's status said were due when the pass began (DueHolds).
	due []DueHold
	// released are the owners whose hold this pass released: not restored in the same pass.
	released []string
}

// Reconcile runs the phases in order on one GPUNode and applies its status once at the
// end, whatever happened but a lost race. Every phase is re-entrant: a pass that stops half
// way is finished by the next.
//
// Losing an optimistic-concurrency race (an acceptance request decided on a GPUNode that
// changed meanwhile) is not an error: the pass is run again shortly, on the newer object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	gn := &v1alpha1.GPUNode{}
	if err := r.Client.Get(ctx, req.NamespacedName, gn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if gn.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	base := gn.DeepCopy()
	s := &scope{gn: gn}
	defer func() {
		// A pass whose request lost the race writes no status: the write would move the
		// resourceVersion on again, and a pass decided on a cache that lags behind it would
		// lose the next race too. The pass on the newer object writes it.
		if retErr == nil || !apierrors.IsConflict(retErr) {
			if err := r.applyStatus(ctx, base, gn); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}
		if retErr != nil && apierrors.IsConflict(retErr) {
			log.FromContext(ctx).V(1).Info("the GPUNode changed meanwhile; running the pass again", "error", retErr.Error())
			res, retErr = ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
	}()
	phases := []func(context.Context, *scope) error{
		r.loadNode, r.selectPolicy, r.restore, r.liveness, r.evaluate, r.gpuAPISwitch, r.request, r.reflect,
	}
	for _, phase := range phases {
		if err := phase(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return s.result, nil
}
