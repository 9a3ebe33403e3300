package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// pool is the label value (pool=scale) the benchmark's GPUNodePolicy selects.
const pool = "scale"

// nodeName is the i-th simulated node's name; node 0 is the template.
func nodeName(i int) string { return fmt.Sprintf("scale-%05d", i) }

// template is one node as a real agent and the real acceptance controller left it: in
// service, its acceptance passed and its hold released. The fleet is cloned from it.
type template struct {
	node   *corev1.Node
	gn     *v1alpha1.GPUNode
	record *v1alpha1.AcceptanceRecord
}

// createPolicy creates the pool's GPUNodePolicy: 8 H100s per node, remediation's defaults.
func createPolicy(ctx context.Context, c client.Client) error {
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: v1alpha1.GPUNodePolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			Priority:     100,
			Classes:      []v1alpha1.ClassExpectation{{Class: "h100-80g", GPUs: 8, Model: "NVIDIA H100 80GB HBM3"}}}}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating GPUNodePolicy %s: %w", pool, err)
	}
	return nil
}

// makeTemplate takes node 0 through acceptance with a simulated agent (8 simulated H100s)
// and in-process controllers, stops them, and returns what they left.
func makeTemplate(t *testing.T, cfg *rest.Config, c client.Client) *template {
	t.Helper()
	ctx := t.Context()
	name := nodeName(0)
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	stopController := runControllers(t, cfg)
	stopAgent := runAgent(t, c, name)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var gn v1alpha1.GPUNode
		var n corev1.Node
		if c.Get(ctx, client.ObjectKey{Name: name}, &gn) != nil || c.Get(ctx, client.ObjectKey{Name: name}, &n) != nil {
			return false, nil
		}
		hs, err := nodeops.ParseHolds(name, n.Annotations[v1alpha1.AnnotationHolds])
		// Remediation writes no state on a healthy node it never had to touch (a quiet node):
		// accepted, released and in service is the settled node.
		return err == nil && len(hs) == 0 && gn.Status.Phase == v1alpha1.PhaseInService && gn.Status.LastAcceptance != nil, nil
	})
	stopAgent()
	stopController()
	if err != nil {
		t.Fatalf("the template node %s was not accepted and released within 2 minutes: %v", name, err)
	}
	tp := &template{node: &corev1.Node{}, gn: &v1alpha1.GPUNode{}, record: &v1alpha1.AcceptanceRecord{}}
	for _, o := range []client.Object{tp.node, tp.gn} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, o); err != nil {
			t.Fatalf("reading the template %s: %v", name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: tp.gn.Status.LastAcceptance.RecordName}, tp.record); err != nil {
		t.Fatalf("reading the template's AcceptanceRecord %s: %v", tp.gn.Status.LastAcceptance.RecordName, err)
	}
	if tp.gn.Status.LastAcceptance.Result != v1alpha1.AcceptancePassed || len(tp.gn.Status.GPUHealth) != 8 {
		t.Fatalf("the template %s: acceptance %s with %d GPUs' health, want passed with 8", name, tp.gn.Status.LastAcceptance.Result, len(tp.gn.Status.GPUHealth))
	}
	t.Logf("template objects as stored, JSON bytes (of which managedFields): GPUNode %s, AcceptanceRecord %s, Node %s",
		jsonSize(tp.gn), jsonSize(tp.record), jsonSize(tp.node))
	return tp
}

// jsonSize is the size of o's JSON and of its managedFields' JSON.
func jsonSize(o client.Object) string {
	all, err := json.Marshal(o)
	if err != nil {
		return err.Error()
	}
	mf, err := json.Marshal(o.GetManagedFields())
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d (%d)", len(all), len(mf))
}

// runControllers runs the acceptance and remediation controllers in this process, as
// `gpunode controller` does, so that the template carries what both write (remediation's
// state annotation too); the returned function stops them.
func runControllers(t *testing.T, cfg *rest.Config) (stop func()) {
	t.Helper()
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Client: remediation.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatalf("creating the template's controllers: %v", err)
	}
	r := &acceptance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(acceptance.Name), Clock: clock.RealClock{}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	rr := &remediation.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(remediation.Name), Clock: clock.RealClock{}}
	if err := rr.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the template's controllers: %v", err)
		}
	}
}

// runAgent runs a simulated agent (8 simulated H100s) for node; the returned function
// stops it.
func runAgent(t *testing.T, c client.Client, node string) (stop func()) {
	t.Helper()
	sc, err := sim.Parse("h100x8", []byte("apiVersion: gpunode.dev/sim/v1\npreset: h100x8\ncount: 8\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Reseed(node)
	b, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{NodeName: node, Client: c, Backend: b,
		Host:     func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		Interval: 200 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatalf("creating the template's agent: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the template's agent: %v", err)
		}
	}
}
