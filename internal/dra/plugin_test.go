package dra_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/dra"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

const node = "gpu-1"

// states is a settable health source.
type states struct {
	mu sync.Mutex
	m  map[string]health.State
}

func (s *states) set(uuid string, st health.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[uuid] = st
}

func (s *states) read() []monitor.GPUHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []monitor.GPUHealth
	for uuid, st := range s.m {
		out = append(out, monitor.GPUHealth{UUID: uuid, State: st})
	}
	return out
}

// env is one node: its dirs (short: unix socket paths are limited), a fake API server
// with the node, and simulated GPUs.
type env struct {
	dir, cdiDir string
	client      *fake.Clientset
	backend     gpu.Backend
	health      *states
}

func newEnv(t testing.TB, preset string) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := sim.Load(preset)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	c := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}})
	return &env{dir: dir, cdiDir: filepath.Join(dir, "cdi"), client: c, backend: b, health: &states{m: map[string]health.State{}}}
}

// start runs a plugin over the env's dirs until the test ends or stop is called.
func (e *env) start(t testing.TB, client kubernetes.Interface) (p *dra.Plugin, stop func()) {
	t.Helper()
	p, err := dra.New(dra.Config{NodeName: node, Client: client, Backend: e.backend, Health: e.health.read,
		Simulated: true, PluginDir: filepath.Join(e.dir, "plugin"), RegistryDir: filepath.Join(e.dir, "reg"), CDIDir: e.cdiDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "reg"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	waitFor(t, "the DRA socket", func() bool {
		_, err := os.Stat(filepath.Join(e.dir, "plugin", "dra.sock"))
		return err == nil
	})
	return p, stop
}

// conn dials the plugin's DRA socket as the kubelet does.
func (e *env) conn(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(e.dir, "plugin", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitFor polls cond until it holds; the test's deadline bounds it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok && deadlineNear(dl.Deadline()) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deadlineNear: less than a second left before the test's deadline.
func deadlineNear(dl time.Time, ok bool) bool { return ok && time.Until(dl) < time.Second }

// claim is an allocated claim of devices of this node's pool, stored in the fake API.
func (e *env) claim(t testing.TB, name string, admin bool, devices ...string) *drapbv1.Claim {
	t.Helper()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name)}}
	alloc := &resourceapi.AllocationResult{}
	for i, d := range devices {
		r := resourceapi.DeviceRequestAllocationResult{Request: "gpu" + string(rune('0'+i)), Driver: dra.DriverName, Pool: node, Device: d}
		if admin {
			r.AdminAccess = ptr.To(true)
		}
		alloc.Devices.Results = append(alloc.Devices.Results, r)
	}
	c.Status.Allocation = alloc
	if _, err := e.client.ResourceV1().ResourceClaims("team").Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &drapbv1.Claim{Namespace: "team", Name: name, Uid: string(c.UID)}
}

func prepare(t testing.TB, conn *grpc.ClientConn, claims ...*drapbv1.Claim) map[string]*drapbv1.NodePrepareResourceResponse {
	t.Helper()
	resp, err := drapbv1.NewDRAPluginClient(conn).NodePrepareResources(context.Background(), &drapbv1.NodePrepareResourcesRequest{Claims: claims})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	return resp.GetClaims()
}

func unprepare(t *testing.T, conn *grpc.ClientConn, claims ...*drapbv1.Claim) map[string]*drapbv1.NodeUnprepareResourceResponse {
	t.Helper()
	resp, err := drapbv1.NewDRAPluginClient(conn).NodeUnprepareResources(context.Background(), &drapbv1.NodeUnprepareResourcesRequest{Claims: claims})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	return resp.GetClaims()
}

// cdiDevice checks that the claim's CDI device resolves through the CDI library.
func (e *env) cdiDevice(t *testing.T, id string) {
	t.Helper()
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(e.cdiDir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if cache.GetDevice(id) == nil {
		t.Fatalf("CDI device %s is not in the specs of %s (errors %v)", id, e.cdiDir, cache.GetErrors())
	}
}

func TestPrepareOverTheKubeletSocket(t *testing.T) {
	e := newEnv(t, "h100x8")
	e.start(t, e.client)
	conn := e.conn(t)
	a := e.claim(t, "a", false, "gpu-0")

	got := prepare(t, conn, a)[a.Uid]
	if got.GetError() != "" || len(got.GetDevices()) != 1 {
		t.Fatalf("claim a: error %q, devices %v", got.GetError(), got.GetDevices())
	}
	d := got.GetDevices()[0]
	want := cdispec.ClaimDeviceID(a.Uid, "gpu-0")
	if d.GetDeviceName() != "gpu-0" || d.GetPoolName() != node || len(d.GetCdiDeviceIds()) != 1 || d.GetCdiDeviceIds()[0] != want {
		t.Fatalf("claim a's device: %v, want gpu-0 in pool %s with CDI device %s", d, node, want)
	}
	e.cdiDevice(t, want)

	t.Run("preparing the same claim again gives the same devices", func(t *testing.T) {
		again := prepare(t, conn, a)[a.Uid]
		if again.GetError() != "" || len(again.GetDevices()) != 1 || again.GetDevices()[0].GetCdiDeviceIds()[0] != want {
			t.Fatalf("again: %v", again)
		}
	})
	t.Run("a second claim for a prepared device is refused on its result", func(t *testing.T) {
		b := e.claim(t, "b", false, "gpu-0")
		res := prepare(t, conn, b)[b.Uid]
		if !strings.Contains(res.GetError(), "already prepared for claim team/a") {
			t.Fatalf("claim b: error %q, want it to name claim team/a", res.GetError())
		}
		if _, err := os.Stat(filepath.Join(e.cdiDir, cdispec.ClaimFileName(b.Uid))); err == nil {
			t.Error("the refused claim has a CDI spec")
		}
	})
	t.Run("an admin-access claim may see a device in use", func(t *testing.T) {
		adm := e.claim(t, "diag", true, "gpu-0")
		res := prepare(t, conn, adm)[adm.Uid]
		if res.GetError() != "" || len(res.GetDevices()) != 1 {
			t.Fatalf("admin claim: %v", res)
		}
	})
	t.Run("a claim naming a device the node does not have gets a clear error", func(t *testing.T) {
		u := e.claim(t, "unknown", false, "gpu-42")
		res := prepare(t, conn, u)[u.Uid]
		if !strings.Contains(res.GetError(), `device "gpu-42" is not one of this node's devices`) {
			t.Fatalf("error %q", res.GetError())
		}
	})
	t.Run("a claim with an opaque configuration for the driver gets a clear error", func(t *testing.T) {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "opaque", UID: "uid-opaque"}}
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: dra.DriverName, Pool: node, Device: "gpu-3"}},
			Config: []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: dra.DriverName}}}}}}
		if _, err := e.client.ResourceV1().ResourceClaims("team").Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		res := prepare(t, conn, &drapbv1.Claim{Namespace: "team", Name: "opaque", Uid: "uid-opaque"})["uid-opaque"]
		if !strings.Contains(res.GetError(), "opaque configuration") {
			t.Fatalf("error %q", res.GetError())
		}
	})
	t.Run("a claim with no device of this driver is prepared with none and no spec", func(t *testing.T) {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nic", UID: "uid-nic"}}
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "nic", Driver: "net.example.com", Pool: node, Device: "eth0"}}}}
		if _, err := e.client.ResourceV1().ResourceClaims("team").Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		res := prepare(t, conn, &drapbv1.Claim{Namespace: "team", Name: "nic", Uid: "uid-nic"})["uid-nic"]
		if res.GetError() != "" || len(res.GetDevices()) != 0 {
			t.Fatalf("claim nic: %v", res)
		}
		if _, err := os.Stat(filepath.Join(e.cdiDir, cdispec.ClaimFileName("uid-nic"))); err == nil {
			t.Error("a claim without devices of this driver got a CDI spec")
		}
	})
	t.Run("unprepare removes the spec and frees the device; a second unprepare is no error", func(t *testing.T) {
		for range 2 {
			if res := unprepare(t, conn, a)[a.Uid]; res.GetError() != "" {
				t.Fatalf("unprepare: %q", res.GetError())
			}
		}
		if _, err := os.Stat(filepath.Join(e.cdiDir, cdispec.ClaimFileName(a.Uid))); err == nil {
			t.Error("the unprepared claim's spec is still there")
		}
		c := e.claim(t, "c", false, "gpu-0")
		if res := prepare(t, conn, c)[c.Uid]; res.GetError() != "" {
			t.Fatalf("claim c after a was unprepared: %q", res.GetError())
		}
	})
}

func TestARestartedPluginKeepsThePreparedClaims(t *testing.T) {
	e := newEnv(t, "h100x8")
	_, stop := e.start(t, e.client)
	conn := e.conn(t)
	a := e.claim(t, "a", false, "gpu-1")
	if res := prepare(t, conn, a)[a.Uid]; res.GetError() != "" {
		t.Fatal(res.GetError())
	}
	stop()
	// A Prepare cut short by the restart: the spec of claim "cut" (for gpu-2) was written,
	// the checkpoint was not.
	spec := filepath.Join(e.cdiDir, cdispec.ClaimFileName("uid-cut"))
	if err := os.WriteFile(spec, []byte(`{"cdiVersion":"0.5.0","kind":"gpu.gpunode.dev/claim","devices":[{"name":"uid-cut-gpu-2","containerEdits":{"env":["A=1"]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	e.start(t, e.client)
	conn = e.conn(t)
	if _, err := os.Stat(spec); err == nil {
		t.Error("the spec of a claim not in the checkpoint survived the restart: it leaks")
	}
	b := e.claim(t, "b", false, "gpu-1")
	if res := prepare(t, conn, b)[b.Uid]; !strings.Contains(res.GetError(), "already prepared for claim team/a") {
		t.Fatalf("after the restart a second claim for gpu-1: error %q, want a refusal", res.GetError())
	}
	if res := prepare(t, conn, a)[a.Uid]; res.GetError() != "" || len(res.GetDevices()) != 1 {
		t.Fatalf("after the restart claim a again: %v", res)
	}
	again := e.claim(t, "cut2", false, "gpu-2")
	if res := prepare(t, conn, again)[again.Uid]; res.GetError() != "" {
		t.Fatalf("the device of the cut-short claim is not free: %q", res.GetError())
	}
}

func TestTheSliceAndTheHealthStreamFollowTheEngine(t *testing.T) {
	e := newEnv(t, "h100x8")
	p, _ := e.start(t, e.client)
	slice := func() *resourceapi.ResourceSlice {
		l, err := e.client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) != 1 {
			return nil
		}
		return &l.Items[0]
	}
	waitFor(t, "the node's slice with 8 GPUs", func() bool { s := slice(); return s != nil && len(s.Spec.Devices) == 8 })
	s := slice()
	if s.Spec.Driver != dra.DriverName || s.Spec.Pool.Name != node || s.Spec.NodeName == nil || *s.Spec.NodeName != node {
		t.Fatalf("slice %s: driver %s pool %s node %v", s.Name, s.Spec.Driver, s.Spec.Pool.Name, s.Spec.NodeName)
	}

	stream, err := drahealthv1.NewDRAResourceHealthClient(e.conn(t)).NodeWatchResources(context.Background(), &drahealthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.GetDevices()) != 8 || first.GetDevices()[0].GetHealth() != drahealthv1.HealthStatus_HEALTHY {
		t.Fatalf("first health report: %v", first)
	}

	snap, err := e.backend.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	uuid := snap.Devices[0].UUID
	e.health.set(uuid, health.State{Health: health.Unhealthy, Action: fault.ActionResetGPU, Causes: []string{"xid-79"}})
	p.Notify()
	waitFor(t, "gpu-0 tainted", func() bool {
		s := slice()
		return s != nil && len(s.Spec.Devices[0].Taints) == 1
	})
	taint := slice().Spec.Devices[0].Taints[0]
	if taint.Key != dra.TaintKey || taint.Value != dra.ValueNeedsReset || taint.Effect != resourceapi.DeviceTaintEffectNoSchedule {
		t.Fatalf("gpu-0's taint %+v", taint)
	}
	for {
		rep, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h := rep.GetDevices()[0]; h.GetHealth() == drahealthv1.HealthStatus_UNHEALTHY {
			if !strings.Contains(h.GetMessage(), "NeedsReset") || !strings.Contains(h.GetMessage(), "xid-79") {
				t.Fatalf("the unhealthy report's message %q names neither the taint nor the cause", h.GetMessage())
			}
			break
		}
	}
	e.health.set(uuid, health.State{Health: health.Healthy, Action: fault.ActionNone})
	p.Notify()
	waitFor(t, "gpu-0's taint lifted", func() bool {
		s := slice()
		return s != nil && len(s.Spec.Devices[0].Taints) == 0
	})
}
