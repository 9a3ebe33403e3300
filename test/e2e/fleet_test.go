// Package e2e runs a simulated fleet: many agents on simulated GPUs and hosts, the real
// acceptance controller, and a real kube-apiserver and etcd (envtest).
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// fleetSize is how many agents join (FLEET_SIZE overrides, for larger local runs).
func fleetSize() int {
	n := 50
	if s := os.Getenv("FLEET_SIZE"); s != "" {
		_, _ = fmt.Sscan(s, &n)
	}
	return n
}

func startController(t *testing.T) {
	t.Helper()
	cfg, _ := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Client: remediation.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &acceptance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(acceptance.Name), Clock: clock.RealClock{}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
}

// startAgent runs one simulated node's agent until the test ends.
func startAgent(t *testing.T, c client.Client, node string, scenario *sim.Scenario) {
	t.Helper()
	scenario.Reseed(node) // every node has its own GPU UUIDs and serials
	b, err := sim.New(scenario)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{NodeName: node, Client: c, Backend: b,
		Host:       func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		Interval:   500 * time.Millisecond,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("agent %s: %v", node, err)
		}
	})
}

func scenario(t *testing.T, gpus int) *sim.Scenario {
	t.Helper()
	s, err := sim.Parse(fmt.Sprintf("h100x%d", gpus), fmt.Appendf(nil, "apiVersion: gpunode.dev/sim/v1\npreset: h100x8\ncount: %d\n", gpus))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func held(n *corev1.Node) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == v1alpha1.TaintUnschedulable || tn.Key == v1alpha1.TaintNotAccepted {
			return true
		}
	}
	return false
}

// A fleet joins: every node starts held, every healthy node is accepted and released, and
// the one with a GPU missing stays held with the reason; one agent starts while the API
// server refuses it and catches up.
func TestAFleetOfSimulatedNodesJoinsIsAcceptedAndReleased(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := t.Context()
	scheme, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	policy := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.GPUNodePolicySpec{Classes: []v1alpha1.ClassExpectation{{Class: "h100-80g", GPUs: 8, Model: "NVIDIA H100 80GB HBM3"}}}}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	var memory func() (int, int)
	if controllerBinary() != "" {
		memory = startControllerProcess(t, cfg)
	} else {
		startController(t)
	}

	n := fleetSize()
	short := "node-short"
	names := []string{short}
	for i := 0; i < n-1; i++ {
		names = append(names, fmt.Sprintf("node-%03d", i))
	}
	start := time.Now()
	var outage atomic.Bool
	outage.Store(true)
	for i, name := range names {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		gpus := 8
		if name == short {
			gpus = 7
		}
		ac := c
		if i == 1 { // this agent's API server is unreachable for its first two seconds
			ac = interceptor.NewClient(wc, interceptor.Funcs{
				Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if outage.Load() {
						return errors.New("connection refused (simulated API server outage)")
					}
					return cl.Get(ctx, key, obj, opts...)
				},
			})
		}
		startAgent(t, ac, name, scenario(t, gpus))
	}
	time.AfterFunc(2*time.Second, func() { outage.Store(false) })

	// Every node starts held.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var gns v1alpha1.GPUNodeList
		if err := c.List(ctx, &gns); err != nil {
			return false, nil
		}
		return len(gns.Items) == n, nil
	}); err != nil {
		t.Fatalf("not every agent created its GPUNode: %v", err)
	}

	released := map[string]time.Duration{}
	var mu sync.Mutex
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			return false, nil
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range nodes.Items {
			nd := &nodes.Items[i]
			if _, ok := released[nd.Name]; !ok && !held(nd) && nd.Name != short {
				var gn v1alpha1.GPUNode
				if c.Get(ctx, client.ObjectKey{Name: nd.Name}, &gn) == nil && gn.Status.Phase == v1alpha1.PhaseInService {
					released[nd.Name] = time.Since(start)
				}
			}
		}
		return len(released) == n-1, nil
	})
	if err != nil {
		t.Fatalf("%d of %d healthy nodes released: %v", len(released), n-1, err)
	}
	var last time.Duration
	for _, d := range released {
		last = max(last, d)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("fleet of %d: every healthy node released %.1f s after the first joined; test process (API client side: %d agents + controller) heap in use %d MiB",
		n, last.Seconds(), n, ms.HeapInuse>>20)
	if memory != nil {
		rss, hwm := memory()
		t.Logf("controller process (%s): VmRSS %d KiB, VmHWM %d KiB", controllerBinary(), rss, hwm)
	}

	// The short node stays held, saying why.
	var nd corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: short}, &nd); err != nil {
		t.Fatal(err)
	}
	if !held(&nd) {
		t.Fatal("the node with 7 GPUs was released")
	}
	// Its verdict may come after the last healthy node's release: wait for it.
	var gn v1alpha1.GPUNode
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: short}, &gn); err != nil {
			return false, nil
		}
		for _, cd := range gn.Status.Conditions {
			if cd.Type == v1alpha1.ConditionAccepted && cd.Status == metav1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("the short node was not judged: %v", err)
	}
	var why []string
	for _, cd := range gn.Status.Conditions {
		why = append(why, cd.Type+"="+string(cd.Status)+": "+cd.Message)
	}
	if !strings.Contains(strings.Join(why, "; "), "hardware.gpu-count") {
		t.Errorf("the short node's conditions do not say why: %v", why)
	}
	t.Logf("short node held: %s", strings.Join(why, "; "))
}
