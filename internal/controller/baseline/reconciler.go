package baseline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	fleet "github.com/gpunode/gpunode/internal/baseline"
)

// Name is the controller's name (logs, metrics).
const Name = "baseline"

// fleetKey is the one key the controller works on: every change recomputes every baseline,
// and a burst of changes is one pass (the workqueue merges equal keys).
var fleetKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "fleet"}}

// listAbove: with more unread records than this, a pass lists them all (in pages) rather
// than reading each one.
const listAbove = 20

// Reconciler keeps the PerformanceBaselines. AcceptanceRecords are large and immutable: it
// watches their metadata, reads each record once (from the API server, not a cache) and
// keeps only what the baselines need.
type Reconciler struct {
	// Client writes the PerformanceBaselines.
	Client client.Client
	// Reader lists the records' metadata and the PerformanceBaselines: the manager's cache.
	Reader client.Reader
	// Records reads full AcceptanceRecords: the manager's API reader.
	Records client.Reader
	Clock   clock.PassiveClock
	// MinSamples is the fewest nodes a metric's baseline needs (fleet.DefaultMinSamples
	// when 0).
	MinSamples int

	mu   sync.Mutex
	seen map[string]v1alpha1.AcceptanceRecord // by name: what FleetBaselines reads of each record
}

// +kubebuilder:rbac:groups=gpunode.dev,resources=acceptancerecords,verbs=get;list;watch
// +kubebuilder:rbac:groups=gpunode.dev,resources=performancebaselines,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gpunode.dev,resources=performancebaselines/status,verbs=get;patch

// Reconcile recomputes the fleet baselines and writes the objects that changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	records, err := r.records(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var existing v1alpha1.PerformanceBaselineList
	if err := r.Reader.List(ctx, &existing); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing PerformanceBaselines: %w", err)
	}
	minSamples := r.MinSamples
	if minSamples <= 0 {
		minSamples = fleet.DefaultMinSamples
	}
	plan := Decide(fleet.FleetBaselines(records, minSamples), minSamples, existing.Items, r.Clock.Now())
	var errs []error
	for i := range plan.Apply {
		if err := r.apply(ctx, &plan.Apply[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range plan.Delete {
		obj := &v1alpha1.PerformanceBaseline{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting PerformanceBaseline %q: %w", name, err))
		}
	}
	if len(plan.Apply)+len(plan.Delete) > 0 {
		log.FromContext(ctx).Info("performance baselines written", "applied", len(plan.Apply), "deleted", len(plan.Delete), "records", len(records))
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// records brings the kept records up to date with the records that exist and returns them.
func (r *Reconciler) records(ctx context.Context) ([]v1alpha1.AcceptanceRecord, error) {
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AcceptanceRecordList"))
	if err := r.Reader.List(ctx, metas); err != nil {
		return nil, fmt.Errorf("listing AcceptanceRecords' metadata: %w", err)
	}
	if r.seen == nil {
		r.seen = map[string]v1alpha1.AcceptanceRecord{}
	}
	exists := make(map[string]bool, len(metas.Items))
	var unread []string
	for _, m := range metas.Items {
		exists[m.Name] = true
		if _, ok := r.seen[m.Name]; !ok {
			unread = append(unread, m.Name)
		}
	}
	for name := range r.seen {
		if !exists[name] {
			delete(r.seen, name)
		}
	}
	if len(unread) > listAbove {
		if err := r.listAll(ctx); err != nil {
			return nil, err
		}
	} else {
		for _, name := range unread {
			var rec v1alpha1.AcceptanceRecord
			if err := r.Records.Get(ctx, client.ObjectKey{Name: name}, &rec); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("reading AcceptanceRecord %q: %w", name, err)
			}
			r.seen[name] = keep(&rec)
		}
	}
	out := make([]v1alpha1.AcceptanceRecord, 0, len(r.seen))
	for _, rec := range r.seen {
		out = append(out, rec)
	}
	return out, nil
}

// listAll reads every record, 500 a page.
func (r *Reconciler) listAll(ctx context.Context) error {
	cont := ""
	for {
		var page v1alpha1.AcceptanceRecordList
		if err := r.Records.List(ctx, &page, client.Limit(500), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing AcceptanceRecords: %w", err)
		}
		for i := range page.Items {
			r.seen[page.Items[i].Name] = keep(&page.Items[i])
		}
		if cont = page.Continue; cont == "" {
			return nil
		}
	}
}

// keep is the part of a record the baselines read.
func keep(rec *v1alpha1.AcceptanceRecord) v1alpha1.AcceptanceRecord {
	return v1alpha1.AcceptanceRecord{ObjectMeta: metav1.ObjectMeta{Name: rec.Name},
		Spec: v1alpha1.AcceptanceRecordSpec{Node: rec.Spec.Node, Result: rec.Spec.Result, FinishedAt: rec.Spec.FinishedAt,
			Stack: rec.Spec.Stack, Performance: rec.Spec.Performance}}
}

// apply writes obj's metadata and spec, then its status, as gpunode-baseline.
func (r *Reconciler) apply(ctx context.Context, obj *v1alpha1.PerformanceBaseline) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("PerformanceBaseline %q: %w", obj.Name, err)
	}
	status := u["status"]
	delete(u, "status")
	meta := map[string]any{"name": obj.Name, "labels": u["metadata"].(map[string]any)["labels"]}
	u["metadata"] = meta
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner(v1alpha1.FieldManagerBaseline), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying PerformanceBaseline %q: %w", obj.Name, err)
	}
	st := map[string]any{"apiVersion": u["apiVersion"], "kind": u["kind"], "metadata": map[string]any{"name": obj.Name}, "status": status}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: st}),
		client.FieldOwner(v1alpha1.FieldManagerBaseline), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the status of PerformanceBaseline %q: %w", obj.Name, err)
	}
	return nil
}

// SetupWithManager recomputes on every AcceptanceRecord created or deleted (records do not
// change) and every change to a PerformanceBaseline (one changed or deleted by someone else
// is put back).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Reader == nil || r.Records == nil || r.Clock == nil {
		return errors.New("baseline: the Reconciler needs a Client, a Reader, a Records reader and a Clock")
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{fleetKey}
	})
	return ctrl.NewControllerManagedBy(mgr).Named(Name).
		WatchesMetadata(&v1alpha1.AcceptanceRecord{}, all).
		Watches(&v1alpha1.PerformanceBaseline{}, all).
		Complete(r)
}
