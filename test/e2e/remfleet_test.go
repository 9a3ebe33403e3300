package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/testenv"
)

// remFleet is a simulated fleet for remediation: the real API server, the acceptance and
// remediation controllers in one manager (in this process), and nodes whose agents carry
// out the steps on simulated GPUs (recovery.Sim), keep a journal and write evidence bundles.
type remFleet struct {
	t     *testing.T
	cfg   *rest.Config
	c     client.Client
	pool  string
	nodes []*remNode
	// every is the agents' interval (a new finding wakes an agent at once).
	every time.Duration
	// via is how the agents and the controllers reach the API server (cfg when nil).
	via *rest.Config
}

// remNode is one simulated node: its GPUs, its counted steps and its evidence folder.
type remNode struct {
	name     string
	backend  *sim.Backend
	steps    *countingSteps
	evidence string
	agent    *agent.Agent
}

// newRemFleet creates the pool's policy (priority 100, nodes labelled pool=name) with the
// remediation settings rp, and n nodes with their agents. The controllers are not started.
func newRemFleet(t *testing.T, pool string, n int, rp v1alpha1.RemediationPolicy) *remFleet {
	t.Helper()
	return newRemFleetEvery(t, pool, n, 100*time.Millisecond, rp)
}

// newRemFleetEvery is newRemFleet with agents that publish every interval.
func newRemFleetEvery(t *testing.T, pool string, n int, every time.Duration, rp v1alpha1.RemediationPolicy) *remFleet {
	t.Helper()
	return newRemFleetVia(t, pool, n, every, nil, rp)
}

// newRemFleetVia is newRemFleetEvery with agents and controllers that reach the API server
// through via (a proxy); the test's own client goes straight to it.
func newRemFleetVia(t *testing.T, pool string, n int, every time.Duration, via *rest.Config, rp v1alpha1.RemediationPolicy) *remFleet {
	t.Helper()
	quietLog.Do(func() { ctrl.SetLogger(logr.Discard()) }) // before the first client is made
	cfg, c := testenv.Start(t)
	f := &remFleet{t: t, cfg: cfg, c: c, pool: pool, every: every, via: via}
	// The agents' client can watch, as `gpunode agent`'s does: they follow their GPUNode
	// and the policies through watches.
	agentCfg := cfg
	if via != nil {
		agentCfg = via
	}
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := client.NewWithWatch(agentCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	pol := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: v1alpha1.GPUNodePolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			Priority: 100, Remediation: rp}}
	if err := c.Create(t.Context(), pol); err != nil {
		t.Fatalf("creating GPUNodePolicy %s: %v", pool, err)
	}
	for i := range n {
		f.addNode(fmt.Sprintf("%s-%02d", pool, i), ac)
	}
	return f
}

// addNode creates Node name in the pool and runs its agent (talking through c) until the
// test ends.
func (f *remFleet) addNode(name string, c client.Client) *remNode {
	t := f.t
	t.Helper()
	if err := f.c.Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": f.pool}}}); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	sc := scenario(t, 8)
	sc.Reseed(name)
	b, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := &remNode{name: name, backend: b, steps: &countingSteps{Sim: recovery.Sim{Backend: b}}, evidence: filepath.Join(dir, "evidence")}
	col := evidence.Collector{Node: evidence.NodeFacts{Node: name, Agent: "e2e"}, Backend: b, Kernel: simKernel{b},
		Findings: func() []health.Finding { return n.agent.Findings() }}
	a, err := agent.New(agent.Config{NodeName: name, Client: c, Backend: b,
		Host:     func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		Interval: f.every, Resync: time.Minute,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second,
		Steps:    n.steps,
		Journal:  agent.FileJournal{Path: filepath.Join(dir, "step.json")},
		Evidence: agent.EvidenceTo(col, &evidence.Store{Dir: n.evidence})})
	if err != nil {
		t.Fatal(err)
	}
	n.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		n.steps.open() // an agent blocked in a gated step must see its context end
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("agent %s: %v", name, err)
		}
	})
	f.nodes = append(f.nodes, n)
	return n
}

// quietLog silences controller-runtime's global logger once: the tests assert behaviour.
var quietLog sync.Once

// startControllers runs the acceptance and remediation controllers in one manager, as
// `gpunode controller` does, and returns a function that stops them (also called when the
// test ends). ClientOptions reads Nodes and Pods from the API server.
func (f *remFleet) startControllers() (stop func()) {
	t := f.t
	t.Helper()
	quietLog.Do(func() { ctrl.SetLogger(logr.Discard()) })
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	if f.via != nil {
		cfg = f.via
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Client: remediation.ClientOptions(), Logger: controllerLogger(t),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ar := &acceptance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(acceptance.Name), Clock: clock.RealClock{}}
	if err := ar.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	rr := &remediation.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(remediation.Name), Clock: clock.RealClock{}}
	if err := rr.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("controller manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// inService waits until every node of the fleet is InService with no hold.
func (f *remFleet) inService(within time.Duration) {
	f.t.Helper()
	f.eventually(within, "every node in service with no hold", func() error {
		for _, n := range f.nodes {
			if err := f.nodeInService(n.name); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f *remFleet) nodeInService(name string) error {
	gn := f.gpuNode(name)
	if gn == nil || gn.Status.Phase != v1alpha1.PhaseInService {
		return fmt.Errorf("node %s is not InService yet: %s", name, f.describe(name))
	}
	if hs := f.holds(name); len(hs) > 0 {
		return fmt.Errorf("node %s still held: %v", name, hs)
	}
	return nil
}

// gpuNode reads a GPUNode (nil when it cannot).
func (f *remFleet) gpuNode(name string) *v1alpha1.GPUNode {
	gn := &v1alpha1.GPUNode{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, gn); err != nil {
		return nil
	}
	return gn
}

// holds reads a Node's holds (none when it cannot).
func (f *remFleet) holds(name string) nodeops.Holds {
	hs, err := nodeops.Ops{Client: f.c}.Get(context.Background(), name)
	if err != nil {
		return nil
	}
	return hs
}

// heldByRemediation reports whether remediation holds the node.
func (f *remFleet) heldByRemediation(name string) bool {
	_, ok := f.holds(name).Find(v1alpha1.HoldOwnerRemediation)
	return ok
}

// eventually retries check every 50 ms until it returns nil, failing the test with its last
// error after within.
func (f *remFleet) eventually(within time.Duration, what string, check func() error) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: still not the case after %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inject injects an XID on one GPU of a node.
func (n *remNode) inject(t *testing.T, gpuIndex, code int) {
	t.Helper()
	if err := n.backend.Inject(sim.Fault{Type: sim.FaultXID, GPU: gpuIndex, XID: code}); err != nil {
		t.Fatalf("injecting XID %d on GPU %d of %s: %v", code, gpuIndex, n.name, err)
	}
}

// uuid is the UUID of GPU index of the node.
func (n *remNode) uuid(t *testing.T, index int) string {
	t.Helper()
	snap, err := n.backend.Snapshot(context.Background())
	if err != nil || index >= len(snap.Devices) {
		t.Fatalf("snapshot of %s: %v", n.name, err)
	}
	return snap.Devices[index].UUID
}

// simKernel is a simulated node's kernel log as an evidence source.
type simKernel struct{ b *sim.Backend }

func (s simKernel) Records(_ context.Context, w evidence.Window) ([]evidence.KernelRecord, error) {
	var out []evidence.KernelRecord
	for _, l := range s.b.KernelLog() {
		if !l.Time.Before(w.From()) {
			out = append(out, evidence.KernelRecord{Time: l.Time, Level: -1, Text: l.Text})
		}
	}
	return out, nil
}
