package deviceplugin

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/cdispec"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
)

// On a machine with an NVIDIA GPU: the plugin over the fake kubelet with the real NVML
// backend allocates each real GPU by its UUID with every strategy, and the CDI spec
// generated from the real host root (/) is valid for the CDI library, which resolves and
// injects every GPU into an OCI spec. Without a GPU it skips and says why.
func TestOnARealGPUThePluginAllocatesItByUUIDAndItsCDISpecIsValid(t *testing.T) {
	backend, err := nvml.New()
	if errors.Is(err, gpu.ErrDriverNotFound) {
		t.Skipf("no NVIDIA GPU on this machine: %v", err)
	}
	if err != nil {
		t.Fatalf("NVML: %v", err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	snap, err := backend.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Devices) == 0 {
		t.Skip("NVML answers but reports no GPU")
	}
	for _, d := range snap.Devices {
		t.Logf("GPU %d %s %s bus %s NUMA %d MIG %+v peers %d", d.Index, d.UUID, d.Name, d.PCI.BusID, d.NUMANode, d.MIG, len(d.Peers))
	}
	for _, s := range Strategies() {
		t.Run(string(s), func(t *testing.T) {
			n := startAll(t, backend, s, Sharing{})
			devs := n.list(t, ResourceName)
			healthy := ids(devs, pluginapi.Healthy)
			if len(healthy) == 0 {
				t.Fatalf("no healthy GPU listed: %v", devs)
			}
			start := time.Now()
			resp, err := n.clients[ResourceName].Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: healthy[:1]}}})
			if err != nil {
				t.Fatalf("Allocate %s: %v", healthy[0], err)
			}
			r := resp.ContainerResponses[0]
			t.Logf("Allocate(%s) by %s in %v: envs %v annotations %v CDI %v", healthy[0], s, time.Since(start), r.Envs, r.Annotations, r.CdiDevices)
			want := "nvidia.com/gpu=" + healthy[0]
			switch s {
			case StrategyEnvvar:
				if r.Envs[VisibleDevicesEnv] != healthy[0] {
					t.Errorf("envs %v, want %s=%s", r.Envs, VisibleDevicesEnv, healthy[0])
				}
			case StrategyCDIAnnotations:
				if _, got, err := cdiapi.ParseAnnotations(r.Annotations); err != nil || !slices.Equal(got, []string{want}) {
					t.Errorf("annotations %v name %v (%v), want %s", r.Annotations, got, err, want)
				}
			case StrategyCDICRI:
				if len(r.CdiDevices) != 1 || r.CdiDevices[0].Name != want {
					t.Errorf("CDI devices %v, want %s", r.CdiDevices, want)
				}
			}
		})
	}

	h, err := cdispec.Discover(os.DirFS("/"), snap.Driver.Version, snap.Devices)
	if err != nil {
		t.Fatalf("CDI discovery on the host root: %v", err)
	}
	spec, err := cdispec.Build(snap.Devices, h)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := cdispec.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CDI spec %s (cdiVersion %s): %d devices, control nodes %v, %d library and binary mounts, hook %q",
		path, spec.Version, len(spec.Devices), h.ControlNodes, len(spec.ContainerEdits.Mounts), h.Hook)
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatalf("CDI cache: %v", err)
	}
	var names []string
	for _, d := range snap.Devices {
		names = append(names, "nvidia.com/gpu="+d.UUID)
	}
	ociSpec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(ociSpec, names...); err != nil {
		t.Fatalf("the CDI library cannot inject %v (unresolved %v): %v", names, unresolved, err)
	}
	var nodes []string
	for _, dn := range ociSpec.Linux.Devices {
		nodes = append(nodes, dn.Path)
	}
	t.Logf("injected device nodes %v, %d mounts, env %v", nodes, len(ociSpec.Mounts), ociSpec.Process.Env)
	for _, n := range h.GPUNodes {
		if !slices.Contains(nodes, n) {
			t.Errorf("the injected OCI spec lacks the GPU node %s", n)
		}
	}
}
