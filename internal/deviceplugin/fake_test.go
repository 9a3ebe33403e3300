package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// waitBound is the generous bound on anything the tests wait for; the latencies are
// logged, never asserted tightly.
const waitBound = 5 * time.Second

// fakeKubelet is a real gRPC Registration server on kubelet.sock in a folder.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	regs chan *pluginapi.RegisterRequest
	srv  *grpc.Server
}

func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{dir: dir, regs: make(chan *pluginapi.RegisterRequest, 16), srv: grpc.NewServer()}
	lis, err := net.Listen("unix", filepath.Join(dir, KubeletSocket))
	if err != nil {
		t.Fatalf("fake kubelet: listen: %v", err)
	}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.regs <- r
	return &pluginapi.Empty{}, nil
}

// restart stops the kubelet and removes its socket and the plugins' sockets, as a
// restarting kubelet does, then starts a new one on a new socket.
func (k *fakeKubelet) restart(t *testing.T) *fakeKubelet {
	t.Helper()
	k.srv.Stop()
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		t.Fatalf("fake kubelet: read %s: %v", k.dir, err)
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(k.dir, e.Name())); err != nil {
			t.Fatalf("fake kubelet: remove %s: %v", e.Name(), err)
		}
	}
	return startKubelet(t, k.dir)
}

// registration waits for the next Register call.
func (k *fakeKubelet) registration(t *testing.T) (*pluginapi.RegisterRequest, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case r := <-k.regs:
		return r, time.Since(start)
	case <-time.After(waitBound):
		t.Fatalf("fake kubelet: no registration within %v", waitBound)
		return nil, 0
	}
}

// fakeHealth is a HealthSource the test sets.
type fakeHealth struct {
	mu      sync.Mutex
	healthy map[string]bool
	changed chan struct{}
}

func newFakeHealth() *fakeHealth {
	return &fakeHealth{healthy: map[string]bool{}, changed: make(chan struct{}, 1)}
}

func (h *fakeHealth) Health() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]bool, len(h.healthy))
	for k, v := range h.healthy {
		out[k] = v
	}
	return out
}

func (h *fakeHealth) Changed() <-chan struct{} { return h.changed }

func (h *fakeHealth) set(uuid string, healthy bool) {
	h.mu.Lock()
	h.healthy[uuid] = healthy
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// harness is a running plugin for the sim h100x8 behind a fake kubelet.
type harness struct {
	plugin  *Plugin
	kubelet *fakeKubelet
	health  *fakeHealth
	devices []gpu.Device
	client  pluginapi.DevicePluginClient
	reg     *pluginapi.RegisterRequest
}

func startPlugin(t *testing.T, strategy Strategy) *harness {
	t.Helper()
	backend, err := sim.Load("h100x8")
	if err != nil {
		t.Fatalf("sim h100x8: %v", err)
	}
	fh := newFakeHealth()
	h := startPluginWith(t, strategy, backend, fh)
	h.health = fh
	return h
}

// startPluginWith runs a plugin for backend with the given health source behind a fake kubelet.
func startPluginWith(t *testing.T, strategy Strategy, backend gpu.Backend, health HealthSource) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	snap, err := backend.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("sim snapshot: %v", err)
	}
	h := &harness{kubelet: startKubelet(t, dir), devices: snap.Devices}
	plugins, err := NewAll(t.Context(), Config{Backend: backend, Health: health, Strategy: strategy,
		Dir: dir, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewAll: %v", err)
	}
	if len(plugins) != 1 {
		t.Fatalf("NewAll: %d plugins, want the one resource of whole GPUs", len(plugins))
	}
	h.plugin = plugins[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.plugin.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	h.reg, _ = h.kubelet.registration(t)
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, h.reg.Endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial plugin: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h.client = pluginapi.NewDevicePluginClient(conn)
	return h
}

func (h *harness) uuids() []string {
	out := make([]string, 0, len(h.devices))
	for _, d := range h.devices {
		out = append(out, d.UUID)
	}
	return out
}
