package nodeops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpunode/gpunode/internal/testenv"
)

// envtest runs no kubelet: a pod bound to a node and evicted with a grace period stays
// terminating for ever. Tests that need a pod to go use a zero grace period, which the
// API server honours by deleting the pod at once.
var zeroGrace = int64(0)

// fast keeps the drains of these tests short.
func fast(filter PodFilter) DrainOptions {
	return DrainOptions{Pods: filter, Timeout: 10 * time.Second, PollInterval: 50 * time.Millisecond,
		RetryInterval: 50 * time.Millisecond, MaxRetryInterval: 200 * time.Millisecond, GracePeriodSeconds: &zeroGrace}
}

// createPod creates a ready, running pod bound to node.
func createPod(t *testing.T, c client.Client, node, ns, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("mark pod %s/%s running and ready: %v", ns, name, err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
	})
	return pod
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func podExists(t *testing.T, c client.Client, ns, name string) (*corev1.Pod, bool) {
	t.Helper()
	pod := &corev1.Pod{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod, true
}

func outcomeOf(t *testing.T, r DrainResult, ns, name string) PodOutcome {
	t.Helper()
	for _, p := range r.Pods {
		if p.Pod == (types.NamespacedName{Namespace: ns, Name: name}) {
			return p
		}
	}
	t.Fatalf("no outcome for %s/%s in %s", ns, name, r)
	return PodOutcome{}
}

func TestDrainEvictsAPlainPod(t *testing.T) {
	_, c := testenv.Start(t)
	createNamespace(t, c, "drain-plain")
	createPod(t, c, "node-plain", "drain-plain", "trainer", nil)
	res, err := Drainer{Client: c}.Drain(context.Background(), "node-plain", fast(AllPods()))
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, res, "drain-plain", "trainer"); o.Outcome != OutcomeEvicted || o.Attempts != 1 {
		t.Errorf("outcome %+v, want evicted after one request", o)
	}
	if !res.Done() || res.TimedOut {
		t.Errorf("result %s: want done, not timed out", res)
	}
	if _, ok := podExists(t, c, "drain-plain", "trainer"); ok {
		t.Error("the pod still exists after a zero-grace eviction")
	}
}

func TestDrainWithoutAKubeletReportsTheEvictedPodTerminatingAndContinuesOnTheNextCall(t *testing.T) {
	_, c := testenv.Start(t)
	createNamespace(t, c, "drain-grace")
	createPod(t, c, "node-grace", "drain-grace", "trainer", nil)
	opt := fast(AllPods())
	opt.GracePeriodSeconds = nil // the pod's own 30 s: only a kubelet would finish it
	opt.PodDeleteTimeout = 300 * time.Millisecond
	d := Drainer{Client: c}
	res, err := d.Drain(context.Background(), "node-grace", opt)
	if err != nil {
		t.Fatal(err)
	}
	o := outcomeOf(t, res, "drain-grace", "trainer")
	if o.Outcome != OutcomeTerminating || o.Attempts != 1 || !strings.Contains(o.Reason, "kubelet") || res.Done() {
		t.Fatalf("outcome %+v (done %v): want terminating after one accepted eviction", o, res.Done())
	}
	pod, ok := podExists(t, c, "drain-grace", "trainer")
	if !ok || pod.DeletionTimestamp == nil {
		t.Fatalf("pod after an accepted eviction: exists %v, deletion %v; want terminating", ok, pod)
	}
	again, err := d.Drain(context.Background(), "node-grace", opt)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, again, "drain-grace", "trainer"); o.Outcome != OutcomeTerminating || o.Attempts != 0 {
		t.Errorf("second drain: %+v, want terminating and not evicted again", o)
	}
	// What the kubelet would do at the end of the grace period.
	if err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	third, err := d.Drain(context.Background(), "node-grace", opt)
	if err != nil || !third.Done() || len(third.Pods) != 0 {
		t.Errorf("third drain after the pod went: %s, %v; want done with nothing left", third, err)
	}
}

func TestDrainHonoursAPodDisruptionBudgetUntilItsTimeout(t *testing.T) {
	_, c := testenv.Start(t)
	ctx := context.Background()
	createNamespace(t, c, "drain-pdb")
	createPod(t, c, "node-pdb", "drain-pdb", "db", nil)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "drain-pdb", Name: "db-quorum"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// What the disruption controller (not run by envtest) would write: 1 healthy, 1 needed.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0}
	if err := c.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	opt := fast(AllPods())
	opt.Timeout = 1500 * time.Millisecond
	d := Drainer{Client: c}
	t0 := time.Now()
	res, err := d.Drain(ctx, "node-pdb", opt)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	o := outcomeOf(t, res, "drain-pdb", "db")
	if o.Outcome != OutcomeBlocked || len(o.PDBs) != 1 || o.PDBs[0] != "drain-pdb/db-quorum" {
		t.Fatalf("outcome %+v: want blocked by drain-pdb/db-quorum", o)
	}
	t.Logf("%s; the API server said: %s", res, o.Reason)
	if !strings.Contains(o.Reason, "disruption budget") {
		t.Errorf("reason %q: want the API server's refusal", o.Reason)
	}
	if o.Attempts < 3 || !res.TimedOut || took < opt.Timeout || took > opt.Timeout+2*time.Second {
		t.Errorf("%d attempts, timed out %v after %s: want retries with backoff until the %s timeout", o.Attempts, res.TimedOut, took, opt.Timeout)
	}
	if !strings.Contains(res.String(), "drain-pdb/db blocked by drain-pdb/db-quorum") {
		t.Errorf("summary %q does not name the budget", res)
	}
	if _, ok := podExists(t, c, "drain-pdb", "db"); !ok {
		t.Fatal("a budget-protected pod was deleted")
	}
	// The budget allows a disruption now (a second replica became healthy): the next drain
	// continues and evicts.
	pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed = 2, 1
	if err := c.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	res, err = d.Drain(ctx, "node-pdb", fast(AllPods()))
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, res, "drain-pdb", "db"); o.Outcome != OutcomeEvicted {
		t.Errorf("after the budget allowed it: %+v, want evicted", o)
	}
}

func TestDrainSkipsDaemonSetMirrorAndAgentPodsAndOnlyTouchesItsNode(t *testing.T) {
	_, c := testenv.Start(t)
	createNamespace(t, c, "drain-skip")
	yes := true
	createPod(t, c, "node-skip", "drain-skip", "exporter", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "exporter", UID: "0b0e3c1e-0000-4000-8000-000000000001", Controller: &yes}}
	})
	createPod(t, c, "node-skip", "drain-skip", "static-etcd", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	})
	createPod(t, c, "node-skip", "drain-skip", "gpunode-agent", func(p *corev1.Pod) { p.Labels = AgentLabels() })
	createPod(t, c, "node-skip", "drain-skip", "trainer", nil)
	createPod(t, c, "node-other", "drain-skip", "elsewhere", nil)
	res, err := Drainer{Client: c}.Drain(context.Background(), "node-skip", fast(AllPods()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"exporter": SkipDaemonSet, "static-etcd": SkipMirror, "gpunode-agent": SkipAgent}
	for name, reason := range want {
		if o := outcomeOf(t, res, "drain-skip", name); o.Outcome != OutcomeSkipped || o.Reason != reason || o.Attempts != 0 {
			t.Errorf("%s: %+v, want skipped: %s", name, o, reason)
		}
		if _, ok := podExists(t, c, "drain-skip", name); !ok {
			t.Errorf("skipped pod %s was deleted", name)
		}
	}
	if o := outcomeOf(t, res, "drain-skip", "trainer"); o.Outcome != OutcomeEvicted {
		t.Errorf("trainer: %+v, want evicted", o)
	}
	if len(res.Pods) != 4 || !res.Done() {
		t.Errorf("result %s: want the node's 4 pods and done", res)
	}
	if _, ok := podExists(t, c, "drain-skip", "elsewhere"); !ok {
		t.Error("a pod on another node was evicted")
	}
}

func TestDrainEvictsOnlyTheChosenPods(t *testing.T) {
	_, c := testenv.Start(t)
	createNamespace(t, c, "drain-set")
	for _, n := range []string{"gpu3-a", "gpu3-b", "gpu5"} {
		createPod(t, c, "node-set", "drain-set", n, nil)
	}
	d := Drainer{Client: c}
	chosen := OnlyPods(types.NamespacedName{Namespace: "drain-set", Name: "gpu3-a"}, types.NamespacedName{Namespace: "drain-set", Name: "gpu3-b"},
		types.NamespacedName{Namespace: "drain-set", Name: "gone-already"})
	res, err := d.Drain(context.Background(), "node-set", fast(chosen))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.With(OutcomeEvicted)) != 2 || len(res.Pods) != 2 || !res.Done() {
		t.Errorf("result %s: want the 2 chosen pods evicted and nothing else reported", res)
	}
	if _, ok := podExists(t, c, "drain-set", "gpu5"); !ok {
		t.Error("the pod on another GPU was evicted")
	}
	none, err := d.Drain(context.Background(), "node-set", fast(OnlyPods()))
	if err != nil || len(none.Pods) != 0 || !none.Done() {
		t.Errorf("an empty pod set: %s, %v; want nothing done", none, err)
	}
	if _, ok := podExists(t, c, "drain-set", "gpu5"); !ok {
		t.Error("an empty pod set evicted a pod")
	}
}

func TestDrainRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		node string
		opt  DrainOptions
		want string
	}{
		{"a drain without a pod filter is refused, so a forgotten filter never drains a node", "n1", DrainOptions{}, "drain node n1: no pod filter"},
		{"a drain without a node is refused", "", DrainOptions{Pods: AllPods()}, "empty node name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Drainer{}.Drain(context.Background(), tc.node, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// errPassThrough tells the intercepting client to send the request to the API server.
var errPassThrough = errors.New("pass through")

func TestDrainReportsEvictionErrorsThatAreNotBudgets(t *testing.T) {
	cfg, c := testenv.Start(t)
	scheme, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, c, "drain-errors")
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name     string
		answer   func(ctx context.Context, calls int) error
		outcome  Outcome
		reason   string
		attempts func(n int) bool
	}{
		{"a forbidden eviction fails at once, without retries", func(context.Context, int) error {
			return apierrors.NewForbidden(gr, "trainer", errors.New("no RBAC for pods/eviction"))
		}, OutcomeFailed, "no RBAC for pods/eviction", func(n int) bool { return n == 1 }},
		{"a server error is retried until the eviction passes", func(_ context.Context, calls int) error {
			if calls < 3 {
				return apierrors.NewInternalError(errors.New("etcd leader changed"))
			}
			return errPassThrough
		}, OutcomeEvicted, "", func(n int) bool { return n == 3 }},
		{"an eviction unanswered when the drain times out is reported, not lost", func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		}, OutcomeFailed, "ended before its eviction was answered", func(n int) bool { return n == 0 }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := fmt.Sprintf("node-errors-%d", i)
			createPod(t, c, node, "drain-errors", node, nil)
			calls := 0
			ic := interceptor.NewClient(inner, interceptor.Funcs{
				SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj, subRes client.Object, opts ...client.SubResourceCreateOption) error {
					calls++
					if sub != "eviction" {
						t.Errorf("sub-resource %q, want eviction", sub)
					}
					if err := tc.answer(ctx, calls); !errors.Is(err, errPassThrough) {
						return err
					}
					return cl.SubResource(sub).Create(ctx, obj, subRes, opts...)
				},
			})
			opt := fast(AllPods())
			opt.Timeout = 700 * time.Millisecond
			res, err := Drainer{Client: ic}.Drain(context.Background(), node, opt)
			if err != nil {
				t.Fatal(err)
			}
			o := outcomeOf(t, res, "drain-errors", node)
			if o.Outcome != tc.outcome || !strings.Contains(o.Reason, tc.reason) || !tc.attempts(o.Attempts) {
				t.Errorf("outcome %+v after %d calls", o, calls)
			}
		})
	}
}
