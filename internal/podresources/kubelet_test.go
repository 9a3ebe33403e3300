package podresources

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// fakeKubelet serves scripted pod resources, as the kubelet would.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	delay time.Duration // each List waits this long (or until the caller gives up)
	calls int
}

func (f *fakeKubelet) set(pods ...*podresourcesv1.PodResources) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

func (f *fakeKubelet) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	f.mu.Lock()
	pods, delay := f.pods, f.delay
	f.calls++
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: pods}, nil
}

func (f *fakeKubelet) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.GetNamespace() == req.GetPodNamespace() && p.GetName() == req.GetPodName() {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.GetPodNamespace(), req.GetPodName())
}

// socketPath is a kubelet.sock path short enough for sun_path (108 bytes), which
// t.TempDir's long names can exceed.
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatalf("make socket dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

// serve starts a gRPC server for f on socket; stop ends it and removes the socket, as a
// kubelet that exits does.
func serve(t testing.TB, socket string, f *fakeKubelet) (stop func()) {
	t.Helper()
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("listen on %s: %v", socket, err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Stop()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// deadSocket leaves a socket file nobody listens on (a kubelet that died uncleanly).
func deadSocket(t *testing.T, socket string) {
	t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatalf("listen on %s: %v", socket, err)
	}
	lis.SetUnlinkOnClose(false)
	if err := lis.Close(); err != nil {
		t.Fatalf("close %s: %v", socket, err)
	}
}

func pod(ns, name string, containers ...*podresourcesv1.ContainerResources) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: name, Containers: containers}
}

func ctr(name string, devices ...*podresourcesv1.ContainerDevices) *podresourcesv1.ContainerResources {
	return &podresourcesv1.ContainerResources{Name: name, Devices: devices}
}

func dev(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

// logCount is a slog handler that records every line, at every level.
type logCount struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCount) WithGroup(string) slog.Handler            { return l }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}

func (l *logCount) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakeKubelet) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
