package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// node is every plugin of a configuration running behind one fake kubelet.
type nodePlugins struct {
	health  *fakeHealth
	clients map[string]pluginapi.DevicePluginClient // by resource name
	regs    map[string]*pluginapi.RegisterRequest
}

func startAll(t *testing.T, backend gpu.Backend, strategy Strategy, s Sharing) *nodePlugins {
	t.Helper()
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k := startKubelet(t, dir)
	n := &nodePlugins{health: newFakeHealth(), clients: map[string]pluginapi.DevicePluginClient{}, regs: map[string]*pluginapi.RegisterRequest{}}
	plugins, err := NewAll(t.Context(), Config{Backend: backend, Health: n.health, Strategy: strategy, Sharing: s, Dir: dir, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewAll: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunAll(ctx, plugins) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunAll: %v", err)
		}
	})
	for range plugins {
		r, _ := k.registration(t)
		if _, dup := n.regs[r.ResourceName]; dup {
			t.Fatalf("resource %s registered twice", r.ResourceName)
		}
		n.regs[r.ResourceName] = r
		conn, err := grpc.NewClient("unix://"+filepath.Join(dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		n.clients[r.ResourceName] = pluginapi.NewDevicePluginClient(conn)
	}
	return n
}

// list reads one device list of a resource.
func (n *nodePlugins) list(t *testing.T, resource string) []*pluginapi.Device {
	t.Helper()
	c, ok := n.clients[resource]
	if !ok {
		t.Fatalf("no plugin registered %s (have %v)", resource, n.regs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := recv(t, s)
	return devs
}

func ids(devs []*pluginapi.Device, health string) []string {
	var out []string
	for _, d := range devs {
		if health == "" || d.Health == health {
			out = append(out, d.ID)
		}
	}
	return out
}

// migMock is the NVML backend over go-nvml's DGX A100 mock with GPUs partitioned.
func migMock(t *testing.T, layouts map[int][]nvmltest.Instance) gpu.Backend {
	t.Helper()
	lib, err := nvmltest.DGXA100(layouts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nvml.New(nvml.WithLibrary(lib))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

var (
	gi3 = nvmltest.MIG3g
	gi1 = nvmltest.MIG1g
)

func TestMIGMixedServesOneSocketPerProfileAndAMIGDeviceFollowsItsGPU(t *testing.T) {
	backend := migMock(t, map[int][]nvmltest.Instance{1: {gi3, gi1}, 2: {gi1, gi1}})
	snap, err := backend.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := startAll(t, backend, StrategyEnvvar, Sharing{MIGStrategy: MIGMixed})
	var names, sockets []string
	for name, r := range n.regs {
		names, sockets = append(names, name), append(sockets, r.Endpoint)
	}
	slices.Sort(names)
	slices.Sort(sockets)
	if want := []string{"nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"}; !slices.Equal(names, want) {
		t.Fatalf("registered %v, want %v", names, want)
	}
	if want := []string{"gpunode-gpu.sock", "gpunode-mig-1g.5gb.sock", "gpunode-mig-3g.20gb.sock"}; !slices.Equal(sockets, want) {
		t.Errorf("sockets %v, want %v", sockets, want)
	}
	if got := len(n.list(t, ResourceName)); got != 6 {
		t.Errorf("nvidia.com/gpu lists %d GPUs, want the 6 not in MIG mode", got)
	}
	small := ids(n.list(t, "nvidia.com/mig-1g.5gb"), pluginapi.Healthy)
	want := []string{snap.Devices[1].MIGDevices[1].UUID, snap.Devices[2].MIGDevices[0].UUID, snap.Devices[2].MIGDevices[1].UUID}
	if !slices.Equal(small, want) {
		t.Fatalf("mig-1g.5gb lists %v, want %v", small, want)
	}

	n.health.set(snap.Devices[2].UUID, false)
	got := n.list(t, "nvidia.com/mig-1g.5gb")
	if bad := ids(got, pluginapi.Unhealthy); !slices.Equal(bad, want[1:]) {
		t.Errorf("with GPU 2 unhealthy the unhealthy MIG devices are %v, want its two %v", bad, want[1:])
	}
	resp, err := n.clients["nvidia.com/mig-1g.5gb"].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: want[:1]}}})
	if err != nil {
		t.Fatalf("Allocate MIG device: %v", err)
	}
	if env := resp.ContainerResponses[0].Envs[VisibleDevicesEnv]; env != want[0] {
		t.Errorf("%s=%q, want the MIG device's UUID %s", VisibleDevicesEnv, env, want[0])
	}
	_, err = n.clients["nvidia.com/mig-1g.5gb"].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: want[1:2]}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Allocate of a MIG device on the unhealthy GPU: %v, want FailedPrecondition", err)
	}
}

func TestMIGSingleAdvertisesMIGDevicesAsGPUs(t *testing.T) {
	layouts := map[int][]nvmltest.Instance{}
	for i := range 8 {
		layouts[i] = []nvmltest.Instance{gi1, gi1}
	}
	n := startAll(t, migMock(t, layouts), StrategyCDICRI, Sharing{MIGStrategy: MIGSingle})
	if len(n.regs) != 1 || n.regs[ResourceName] == nil {
		t.Fatalf("registered %v, want nvidia.com/gpu only", n.regs)
	}
	devs := ids(n.list(t, ResourceName), pluginapi.Healthy)
	if len(devs) != 16 || !strings.HasPrefix(devs[0], "MIG-") {
		t.Fatalf("nvidia.com/gpu lists %v, want 16 MIG devices", devs)
	}
	resp, err := n.clients[ResourceName].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: devs[3:4]}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].CdiDevices; len(got) != 1 || got[0].Name != "nvidia.com/gpu="+devs[3] {
		t.Errorf("CDI devices %v, want nvidia.com/gpu=%s", got, devs[3])
	}
	// A node the single strategy cannot describe is refused at start.
	_, err = NewAll(t.Context(), Config{Backend: migMock(t, map[int][]nvmltest.Instance{0: {gi1}}), Health: newFakeHealth(), Sharing: Sharing{MIGStrategy: MIGSingle}})
	if err == nil || !strings.Contains(err.Error(), "not in MIG mode") {
		t.Errorf("NewAll with single on a half-MIG node: %v, want a refusal", err)
	}
}

func TestTimeSlicedReplicasShareTheirGPUAndItsHealth(t *testing.T) {
	backend, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	share := func(fail bool) Sharing {
		return Sharing{TimeSlicing: TimeSlicing{FailRequestsGreaterThanOne: fail, Resources: []Replicated{{Name: ResourceName, Replicas: 3}}}}
	}
	n := startAll(t, backend, StrategyEnvvar, share(false))
	devs := n.list(t, ResourceName)
	if len(devs) != 24 || devs[4].ID != devs[3].ID[:len(devs[3].ID)-3]+"::1" {
		t.Fatalf("lists %d devices (%v...), want 24 as <uuid>::<n>", len(devs), ids(devs[:4], ""))
	}
	gpu1 := strings.TrimSuffix(devs[3].ID, "::0")
	resp, err := n.clients[ResourceName].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{gpu1 + "::2", gpu1 + "::0"}}}})
	if err != nil {
		t.Fatalf("Allocate two replicas of one GPU: %v", err)
	}
	if env := resp.ContainerResponses[0].Envs[VisibleDevicesEnv]; env != gpu1 {
		t.Errorf("%s=%q, want the GPU once: %s", VisibleDevicesEnv, env, gpu1)
	}
	n.health.set(gpu1, false)
	if bad := ids(n.list(t, ResourceName), pluginapi.Unhealthy); !slices.Equal(bad, []string{gpu1 + "::0", gpu1 + "::1", gpu1 + "::2"}) {
		t.Errorf("unhealthy %v, want the three replicas of %s", bad, gpu1)
	}

	strict := startAll(t, backend, StrategyEnvvar, share(true))
	_, err = strict.clients[ResourceName].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{gpu1 + "::0", gpu1 + "::1"}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "failRequestsGreaterThanOne") {
		t.Errorf("Allocate of two replicas with failRequestsGreaterThanOne: %v, want InvalidArgument", err)
	}
}
