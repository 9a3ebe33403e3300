package nodeops

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// writes counts the patches an Ops sends and the conflicts it gets back.
type writes struct{ patches, conflicts atomic.Int64 }

// counted returns a client of the test API server whose every Patch is counted; before runs
// just before the first one.
func counted(t *testing.T, cfg *rest.Config, w *writes, before func(ctx context.Context, obj client.Object)) client.Client {
	t.Helper()
	scheme, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	var once sync.Once
	return interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if before != nil {
				once.Do(func() { before(ctx, obj) })
			}
			w.patches.Add(1)
			err := c.Patch(ctx, obj, p, opts...)
			if apierrors.IsConflict(err) {
				w.conflicts.Add(1)
			}
			return err
		},
	})
}

func createNode(t *testing.T, c client.Client, name string, mutate func(*corev1.Node)) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(node)
	}
	if err := c.Create(context.Background(), node); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
}

func getNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return node
}

func ownedTaints(node *corev1.Node) map[string]string {
	out := map[string]string{}
	for _, t := range node.Spec.Taints {
		if Owns(t) {
			out[t.Key] = t.Value
		}
	}
	return out
}

func TestOpsTwoOwnersHoldAndReleaseConcurrently(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := context.Background()
	createNode(t, c, "concurrent", nil)
	var w writes
	ops := Ops{Client: counted(t, cfg, &w, nil)}
	owners := []string{v1alpha1.HoldOwnerRemediation, v1alpha1.HoldOwnerUpgrade}
	run := func(each func(owner string) error) {
		var wg sync.WaitGroup
		errs := make(chan error, len(owners))
		for _, owner := range owners {
			wg.Go(func() {
				if err := each(owner); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	run(func(owner string) error {
		for range 15 {
			if err := ops.Hold(ctx, "concurrent", owner, owner+" work"); err != nil {
				return err
			}
			if err := ops.Release(ctx, "concurrent", owner); err != nil {
				return err
			}
		}
		return ops.Hold(ctx, "concurrent", owner, owner+" work")
	})
	holds, err := ops.Get(ctx, "concurrent")
	if err != nil || len(holds) != 2 {
		t.Fatalf("holds after both held = %v, %v; want both owners", holds, err)
	}
	node := getNode(t, c, "concurrent")
	if got := ownedTaints(node); len(got) != 1 || got[v1alpha1.TaintUnschedulable] == "" {
		t.Errorf("taints after both held = %v, want only the unschedulable taint", node.Spec.Taints)
	}
	run(func(owner string) error { return ops.Release(ctx, "concurrent", owner) })
	node = getNode(t, c, "concurrent")
	if _, ok := node.Annotations[v1alpha1.AnnotationHolds]; ok || len(ownedTaints(node)) != 0 {
		t.Errorf("after both released: annotations %v, taints %v; want no holds and no gpunode taint", node.Annotations, node.Spec.Taints)
	}
	t.Logf("%d patches, %d conflicts retried", w.patches.Load(), w.conflicts.Load())
}

func TestOpsRetriesAConflictAndKeepsTheOtherWritersChange(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := context.Background()
	createNode(t, c, "conflict", nil)
	var w writes
	sneak := func(ctx context.Context, _ client.Object) { // another writer gets in first
		node := getNode(t, c, "conflict")
		node.Labels = map[string]string{"team": "infra"}
		if err := c.Update(ctx, node); err != nil {
			t.Errorf("the other writer's update: %v", err)
		}
	}
	ops := Ops{Client: counted(t, cfg, &w, sneak)}
	if err := ops.Hold(ctx, "conflict", v1alpha1.HoldOwnerOperator, "rack move"); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, c, "conflict")
	if w.conflicts.Load() != 1 || w.patches.Load() != 2 {
		t.Errorf("patches %d, conflicts %d; want one conflict and one retry", w.patches.Load(), w.conflicts.Load())
	}
	if node.Labels["team"] != "infra" || ownedTaints(node)[v1alpha1.TaintUnschedulable] != "rack-move" {
		t.Errorf("node = labels %v, taints %v; want the label kept and the taint added", node.Labels, node.Spec.Taints)
	}
}

func TestOpsKeepsForeignTaintsAnnotationsAndCordon(t *testing.T) {
	_, c := testenv.Start(t)
	ctx := context.Background()
	foreignTaint := corev1.Taint{Key: "example.com/dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule}
	createNode(t, c, "foreign", func(n *corev1.Node) {
		n.Annotations = map[string]string{"example.com/owner": "team-a"}
		n.Spec.Taints = []corev1.Taint{foreignTaint}
		n.Spec.Unschedulable = true // cordoned by a person: not ours to change
	})
	// The API server adds its own taints at creation (node.kubernetes.io/not-ready):
	// those are foreign too.
	created := getNode(t, c, "foreign").Spec.Taints
	if len(created) < 1 || !TaintsEqual(created[:1], []corev1.Taint{foreignTaint}) {
		t.Fatalf("created taints = %v, want ours first", created)
	}
	now := time.Date(2026, 11, 29, 17, 30, 0, 0, time.UTC)
	ops := Ops{Client: c, Clock: func() time.Time { return now }}
	if err := ops.Hold(ctx, "foreign", v1alpha1.HoldOwnerAcceptance, "new node"); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, c, "foreign")
	want := `[{"owner":"acceptance","reason":"new node","since":"2026-11-29T17:30:00Z"}]`
	if got := node.Annotations[v1alpha1.AnnotationHolds]; got != want {
		t.Errorf("holds annotation = %s, want %s", got, want)
	}
	if got := ownedTaints(node); len(got) != 2 || got[v1alpha1.TaintUnschedulable] != "new-node" {
		t.Errorf("owned taints = %v, want not-accepted and unschedulable=new-node", got)
	}
	if err := ops.Release(ctx, "foreign", v1alpha1.HoldOwnerAcceptance); err != nil {
		t.Fatal(err)
	}
	node = getNode(t, c, "foreign")
	if !TaintsEqual(node.Spec.Taints, created) {
		t.Errorf("taints = %v, want the foreign taints as created: %v", node.Spec.Taints, created)
	}
	if node.Annotations["example.com/owner"] != "team-a" || node.Annotations[v1alpha1.AnnotationHolds] != "" {
		t.Errorf("annotations = %v, want the foreign one kept and holds removed", node.Annotations)
	}
	if !node.Spec.Unschedulable {
		t.Error("spec.unschedulable was changed; cordon belongs to people and other tools")
	}
}

func TestOpsWritesNothingWhenNothingChanges(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := context.Background()
	createNode(t, c, "noop", nil)
	if err := (Ops{Client: c}).Hold(ctx, "noop", v1alpha1.HoldOwnerUpgrade, "driver 580"); err != nil {
		t.Fatal(err)
	}
	rv := getNode(t, c, "noop").ResourceVersion
	var w writes
	ops := Ops{Client: counted(t, cfg, &w, nil)}
	if err := ops.Release(ctx, "noop", v1alpha1.HoldOwnerOperator); err != nil {
		t.Fatalf("releasing an absent hold: %v", err)
	}
	if err := ops.Hold(ctx, "noop", v1alpha1.HoldOwnerUpgrade, "driver 580"); err != nil {
		t.Fatalf("re-taking the same hold: %v", err)
	}
	if got := getNode(t, c, "noop").ResourceVersion; got != rv || w.patches.Load() != 0 {
		t.Errorf("resourceVersion %s -> %s, %d patches; want no write", rv, got, w.patches.Load())
	}
}

func TestOpsRefusesAMalformedAnnotation(t *testing.T) {
	_, c := testenv.Start(t)
	ctx := context.Background()
	createNode(t, c, "malformed", func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationHolds: `[{"owner":`}
	})
	rv := getNode(t, c, "malformed").ResourceVersion
	err := (Ops{Client: c}).Hold(ctx, "malformed", v1alpha1.HoldOwnerRemediation, "xid 79")
	if !errors.Is(err, ErrMalformedHolds) || !strings.Contains(err.Error(), `"malformed"`) || !strings.Contains(err.Error(), v1alpha1.AnnotationHolds) {
		t.Errorf("Hold error = %v, want a malformed error naming the node and the annotation", err)
	}
	if got := getNode(t, c, "malformed"); got.ResourceVersion != rv {
		t.Errorf("the node was written (annotation now %q)", got.Annotations[v1alpha1.AnnotationHolds])
	}
}

func TestOpsAdoptsTheRegistrationTaint(t *testing.T) {
	_, c := testenv.Start(t)
	ctx := context.Background()
	createNode(t, c, "registered", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintNotAccepted, Effect: corev1.TaintEffectNoSchedule}}
	})
	ops := Ops{Client: c}
	if err := ops.Hold(ctx, "registered", v1alpha1.HoldOwnerRemediation, "xid 79"); err != nil {
		t.Fatal(err)
	}
	if got := ownedTaints(getNode(t, c, "registered")); len(got) != 2 {
		t.Fatalf("owned taints = %v; an unrelated hold must not drop the registration taint", got)
	}
	if err := ops.Release(ctx, "registered", v1alpha1.HoldOwnerAcceptance); err != nil {
		t.Fatal(err)
	}
	holds, err := ops.Get(ctx, "registered")
	if got := ownedTaints(getNode(t, c, "registered")); err != nil || len(holds) != 1 || len(got) != 1 || got[v1alpha1.TaintUnschedulable] != "xid-79" {
		t.Errorf("after acceptance released: holds %v (%v), taints %v; want only remediation", holds, err, got)
	}
}

func TestOpsNamesAMissingNode(t *testing.T) {
	_, c := testenv.Start(t)
	_, err := (Ops{Client: c}).Get(context.Background(), "absent")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `"absent"`) {
		t.Errorf("Get error = %v, want a wrapped NotFound naming the node", err)
	}
	err = (Ops{Client: c}).Hold(context.Background(), "absent", "operator", "x")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `"absent"`) {
		t.Errorf("Hold error = %v, want a wrapped NotFound naming the node", err)
	}
}
