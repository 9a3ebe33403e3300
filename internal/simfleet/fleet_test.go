package simfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// startFleet starts a fleet of n h100x8 nodes for the test, or skips it (failing under
// CI=true) when the API server binaries are missing.
func startFleet(t *testing.T, n int) *Fleet {
	t.Helper()
	if _, err := FindAssets(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the API-server tests must run, not skip)", err)
		}
		t.Skipf("no API server binaries: %v", err)
	}
	sc, err := sim.PresetScenario("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(t.Context(), Config{Nodes: n, Scenario: sc, Interval: 500 * time.Millisecond, StateDir: shortDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	return f
}

// poll calls cond until it returns nil, failing the test with its last error after limit.
func poll(t *testing.T, what string, limit time.Duration, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, limit, last)
	}
}

// inService is nil when the node is InService with no holds.
func inService(ctx context.Context, c client.Client, name string) error {
	var gn v1alpha1.GPUNode
	var nd corev1.Node
	if err := errors.Join(c.Get(ctx, client.ObjectKey{Name: name}, &gn), c.Get(ctx, client.ObjectKey{Name: name}, &nd)); err != nil {
		return err
	}
	if gn.Status.Phase != v1alpha1.PhaseInService || nd.Annotations[v1alpha1.AnnotationHolds] != "" {
		return fmt.Errorf("node %s: phase %q, holds %q", name, gn.Status.Phase, nd.Annotations[v1alpha1.AnnotationHolds])
	}
	return nil
}

// A fleet of three comes up and is accepted; an Xid 95 on one GPU holds that node (and
// no other), an evidence bundle is written, the ladder resets the GPU, and the node
// returns to service.
func TestAFleetIsAcceptedAndAnXID95IsHeldCapturedAndRecovered(t *testing.T) {
	f := startFleet(t, 3)
	c := f.Client()
	for _, name := range f.Nodes() {
		poll(t, name+" accepted and in service", 45*time.Second, func(ctx context.Context) error { return inService(ctx, c, name) })
	}
	t.Logf("3 nodes in service %.1f s after the start", time.Since(f.Started()).Seconds())

	// The kubeconfig written for kubectl and gpunode explain reaches the API server.
	rc, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := acceptance.Scheme()
	kc, err := client.New(rc, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	var gns v1alpha1.GPUNodeList
	if err := kc.List(t.Context(), &gns); err != nil || len(gns.Items) != 3 {
		t.Fatalf("through %s: %d GPUNodes, %v; want 3", f.Kubeconfig(), len(gns.Items), err)
	}

	injected := time.Now()
	if _, err := Inject(t.Context(), f.cfg.StateDir, InjectRequest{Node: "sim-002", Fault: Fault{GPU: 3, Type: "xid", XID: 95}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "sim-002 held by remediation", 20*time.Second, func(ctx context.Context) error {
		holds, err := nodeops.Ops{Client: c}.Get(ctx, "sim-002")
		if err != nil {
			return err
		}
		if _, ok := holds.Find(v1alpha1.HoldOwnerRemediation); !ok {
			return fmt.Errorf("holds %+v", holds)
		}
		return nil
	})
	t.Logf("held %.1f s after the injection (agents publish every 500 ms)", time.Since(injected).Seconds())

	poll(t, "sim-002 back in service", 40*time.Second, func(ctx context.Context) error { return inService(ctx, c, "sim-002") })
	t.Logf("back in service %.1f s after the injection", time.Since(injected).Seconds())
	var gn v1alpha1.GPUNode
	if err := c.Get(t.Context(), client.ObjectKey{Name: "sim-002"}, &gn); err != nil {
		t.Fatal(err)
	}
	rem := gn.Status.Remediation
	if rem == nil || len(rem.History) == 0 {
		t.Fatalf("status.remediation %+v: want the steps taken", rem)
	}
	var steps []v1alpha1.RemediationStep
	for _, a := range rem.History {
		steps = append(steps, a.Step)
	}
	if steps[0] != v1alpha1.StepResetGPU {
		t.Errorf("steps %v: want reset-gpu first (xid 95 asks for a reset)", steps)
	}
	t.Logf("steps taken: %v", steps)
	// Evidence before any action: the bundle is on the node's disk (status.remediation
	// names it only while the episode lasts).
	bundles, err := filepath.Glob(filepath.Join(f.cfg.StateDir, nodesDir, "sim-002", "evidence", "*"))
	if err != nil || len(bundles) == 0 {
		t.Errorf("no evidence bundle under the node's folder (%v)", err)
	}
	for _, path := range bundles {
		checkBundleHealth(t, path)
	}
	for _, other := range []string{"sim-001", "sim-003"} {
		if err := inService(t.Context(), c, other); err != nil {
			t.Errorf("a node without a fault left service: %v", err)
		}
	}
	if slices.Contains(steps, "") {
		t.Errorf("a step without a name in %v", steps)
	}
}

// Stop removes the kubeconfig and the socket, and keeps the nodes' evidence.
func TestAStoppedFleetLeavesNoKubeconfigOrSocket(t *testing.T) {
	f := startFleet(t, 1)
	for _, p := range []string{f.Kubeconfig(), f.Socket()} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("while running: %v", err)
		}
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.Kubeconfig(), f.Socket()} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Stop: %v, want it removed", p, err)
		}
	}
	if _, err := Inject(context.Background(), f.cfg.StateDir, InjectRequest{Node: "sim-001", Fault: Fault{Type: "xid", XID: 79}}); !errors.Is(err, ErrNoFleet) {
		t.Errorf("inject after Stop: %v, want ErrNoFleet", err)
	}
}

// checkBundleHealth: the bundle's health.json is the monitor's per-GPU health (as
// docs/evidence.md promises), not null, and names the GPU the fault was on as unhealthy.
func checkBundleHealth(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b, err := evidence.ReadBundle(f, true)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, file := range b.Files {
		if file.Name != evidence.FileHealth {
			continue
		}
		var h evidence.HealthState
		if err := json.Unmarshal(file.Data, &h); err != nil || len(h.GPUs) == 0 {
			t.Fatalf("health.json %q: %v, want every GPU's health", file.Data, err)
		}
		unhealthy := 0
		for _, g := range h.GPUs {
			if g.Health == health.Unhealthy {
				unhealthy++
			}
		}
		if unhealthy == 0 {
			t.Errorf("health.json names no unhealthy GPU: %s", file.Data)
		}
		return
	}
	t.Errorf("%s has no %s", path, evidence.FileHealth)
}
