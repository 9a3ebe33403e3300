package podresources

import (
	"log/slog"
	"slices"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// claim is a container's DRA claim as the kubelet lists it: the devices the claim was
// allocated, each by driver, pool and name.
func claim(ns, name, driver, pool string, devices ...string) *podresourcesv1.DynamicResource {
	r := &podresourcesv1.DynamicResource{ClaimNamespace: ns, ClaimName: name}
	for _, d := range devices {
		r.ClaimResources = append(r.ClaimResources, &podresourcesv1.ClaimResource{DriverName: driver, PoolName: pool, DeviceName: d,
			CdiDevices: []*podresourcesv1.CDIDevice{{Name: "gpu.gpunode.dev/claim=uid-" + d}}})
	}
	return r
}

// The devices of DRA claims are attributed like those of the device plugin, through the
// kubelet's real gRPC List over its unix socket: by the ID the driver's resolver gives
// (a MIG device's parent too), other drivers' devices not at all.
func TestDRAClaimsDevicesAreAttributedToTheirContainers(t *testing.T) {
	const (
		gpu0 = "GPU-00000000-0000-0000-0000-000000000000"
		gpu1 = "GPU-11111111-0000-0000-0000-000000000000"
		mig  = "MIG-22222222-0000-0000-0000-000000000000"
	)
	ids := map[string]string{"gpu-0": gpu0, "gpu-1-mig-1-0": mig}
	resolve := func(driver, pool, device string) (string, bool) {
		id, ok := ids[device]
		return id, ok && driver == "gpu.gpunode.dev" && pool == "node-1"
	}
	parent := func(id string) (string, bool) { return gpu1, id == mig }

	train := ctr("main")
	train.DynamicResources = []*podresourcesv1.DynamicResource{claim("ml", "train-gpu", "gpu.gpunode.dev", "node-1", "gpu-0")}
	infer := ctr("server")
	infer.DynamicResources = []*podresourcesv1.DynamicResource{claim("web", "infer-mig", "gpu.gpunode.dev", "node-1", "gpu-1-mig-1-0")}
	other := ctr("c")
	other.DynamicResources = []*podresourcesv1.DynamicResource{claim("x", "nic", "net.example.com", "node-1", "gpu-0")}
	f := &fakeKubelet{}
	f.set(pod("ml", "train-0", train), pod("web", "infer-0", infer), pod("x", "router", other))
	socket := socketPath(t)
	serve(t, socket, f)

	c := New(Options{Socket: socket, ParentGPU: parent, DRADevice: resolve, Log: slog.New(slog.DiscardHandler)})
	defer func() { _ = c.Close() }()
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]Pod{
		gpu0: {{"ml", "train-0", "main"}},
		mig:  {{"web", "infer-0", "server"}},
		gpu1: {{"web", "infer-0", "server"}},
	} {
		if got := c.PodsFor(id); !slices.Equal(got, want) {
			t.Errorf("PodsFor(%s) = %v, want %v", id, got, want)
		}
	}
	if s := c.Stats(); s.Pods != 2 {
		t.Errorf("%d pods attributed, want 2 (not the other driver's)", s.Pods)
	}

	without := New(Options{Socket: socket, Log: slog.New(slog.DiscardHandler)})
	defer func() { _ = without.Close() }()
	if err := without.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := without.PodsFor(gpu0); got != nil {
		t.Errorf("without a DRA resolver the claims are attributed: %v", got)
	}
}
