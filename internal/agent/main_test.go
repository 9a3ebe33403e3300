package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/testenv"
	"github.com/gpunode/gpunode/internal/xid"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(agentChildEnv); spec != "" { // an agent process of killed_test.go
		if err := runAgentChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "agent process:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(testenv.Run(m))
}

// nodeSeq makes node names unique within the package's one API server.
var nodeSeq atomic.Int64

// newNode creates a Node with the given labels and returns its name.
func newNode(t *testing.T, c client.Client, lbls map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("gpu-node-%d", nodeSeq.Add(1))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	if err := c.Create(context.Background(), node); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	return name
}

// failingBackend is a sim backend that can be made to fail, as a driver that went away.
type failingBackend struct {
	*sim.Backend
	down atomic.Bool
}

func (b *failingBackend) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if b.down.Load() {
		return nil, errors.New("driver not loaded")
	}
	return b.Backend.Snapshot(ctx)
}

// simConfig is an agent on 8 simulated H100s with a simulated host, publishing quickly.
func simConfig(t *testing.T, c client.Client, node string) (agent.Config, *failingBackend) {
	t.Helper()
	sb, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	b := &failingBackend{Backend: sb}
	return agent.Config{
		NodeName: node, Client: c, Backend: b,
		Host: func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		XIDs: func(context.Context) ([]xid.Event, error) {
			var out []xid.Event
			var sc xid.Scanner
			for _, l := range sb.KernelLog() {
				if ev, ok := sc.Line(l.Text); ok {
					out = append(out, ev)
				}
			}
			return out, nil
		},
		Kernel:     monitor.SimKernel(sb, 20*time.Millisecond),
		Log:        slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Interval:   50 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
	}, b
}

// start runs an agent until the test ends (or stop is called) and returns stop.
func start(t *testing.T, cfg agent.Config) (stop func()) {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent.Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop within 10 s of its context ending")
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually retries check until it returns nil, failing the test with its last error
// after 20 s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not the case after 20 s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func getGPUNode(c client.Client, name string) (*v1alpha1.GPUNode, error) {
	gn := &v1alpha1.GPUNode{}
	return gn, c.Get(context.Background(), client.ObjectKey{Name: name}, gn)
}

func getNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// askForAcceptance raises spec.acceptanceGeneration as the controller does.
func askForAcceptance(t *testing.T, c client.Client, name string, gen int64) {
	t.Helper()
	gn, err := getGPUNode(c, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Spec.AcceptanceGeneration = gen
	if err := c.Patch(context.Background(), gn, patch, client.FieldOwner(v1alpha1.FieldManagerAcceptance)); err != nil {
		t.Fatal(err)
	}
}

// acceptedAt waits for status.lastAcceptance to answer gen and returns it.
func acceptedAt(t *testing.T, c client.Client, name string, gen int64) *v1alpha1.AcceptanceSummary {
	t.Helper()
	var last *v1alpha1.AcceptanceSummary
	eventually(t, fmt.Sprintf("status.lastAcceptance answers generation %d", gen), func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if last = gn.Status.LastAcceptance; last == nil || last.Generation < gen {
			return fmt.Errorf("lastAcceptance is %+v", last)
		}
		return nil
	})
	return last
}

// recordsOf lists the AcceptanceRecords of a node.
func recordsOf(t *testing.T, c client.Client, node string) []v1alpha1.AcceptanceRecord {
	t.Helper()
	list := &v1alpha1.AcceptanceRecordList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.AcceptanceRecord
	for _, r := range list.Items {
		if r.Spec.Node == node {
			out = append(out, r)
		}
	}
	return out
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, tt := range n.Spec.Taints {
		if tt.Key == key && tt.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func labelsWithPrefix(lbls map[string]string, prefix string) []string {
	var out []string
	for k := range lbls {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// testWriter sends the agent's log to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
