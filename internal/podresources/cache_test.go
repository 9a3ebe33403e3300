package podresources

import (
	"log/slog"
	"slices"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func TestCacheAttributesDevicesToPods(t *testing.T) {
	const (
		gpuA = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
		gpuB = "GPU-bbbbbbbb-0000-0000-0000-000000000000"
		migA = "MIG-11111111-0000-0000-0000-000000000000"
	)
	migParent := func(id string) (string, bool) {
		if id == migA {
			return gpuA, true
		}
		return "", false
	}
	tests := []struct {
		name      string
		pods      []*podresourcesv1.PodResources
		names     []string                    // Options.ResourceNames
		parent    func(string) (string, bool) // Options.ParentGPU
		want      map[string][]Pod            // device ID -> PodsFor
		wantStats struct{ pods, devices int } // Stats().Pods, .Devices
	}{
		{
			name: "each container is attributed the GPUs it holds",
			pods: []*podresourcesv1.PodResources{
				pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", gpuA)), ctr("sidecar")),
				pod("web", "infer-0", ctr("server", dev("nvidia.com/gpu", gpuB))),
			},
			want: map[string][]Pod{
				gpuA: {{"ml", "train-0", "main"}},
				gpuB: {{"web", "infer-0", "server"}},
			},
			wantStats: struct{ pods, devices int }{2, 2},
		},
		{
			name: "devices of a resource that is not a GPU are ignored",
			pods: []*podresourcesv1.PodResources{
				pod("net", "router", ctr("c", dev("rdma/hca", "mlx5_0"), dev("nvidia.com/gpu-like", gpuB))),
				pod("ml", "train-0", ctr("main", dev("nvidia.com/gpu", gpuA), dev("intel.com/sriov", "0000:3b:02.0"))),
			},
			want: map[string][]Pod{
				gpuA: {{"ml", "train-0", "main"}}, gpuB: nil, "mlx5_0": nil, "0000:3b:02.0": nil,
			},
			wantStats: struct{ pods, devices int }{1, 1},
		},
		{
			name: "time-slicing replicas collapse onto their GPU, each container listed once and sorted",
			pods: []*podresourcesv1.PodResources{
				pod("b", "p", ctr("c", dev("nvidia.com/gpu", gpuA+"::3", gpuA+"::7"))),
				pod("a", "p", ctr("c", dev("nvidia.com/gpu.shared", gpuA+"::0"))),
			},
			want: map[string][]Pod{
				gpuA: {{"a", "p", "c"}, {"b", "p", "c"}}, gpuA + "::3": nil,
			},
			wantStats: struct{ pods, devices int }{2, 1},
		},
		{
			name: "a MIG device is filed under its own UUID and under the parent GPU the caller names",
			pods: []*podresourcesv1.PodResources{
				pod("ml", "small", ctr("c", dev("nvidia.com/mig-1g.18gb", migA))),
				pod("ml", "whole", ctr("c", dev("nvidia.com/gpu", gpuB))),
			},
			parent: migParent,
			want: map[string][]Pod{
				migA: {{"ml", "small", "c"}}, gpuA: {{"ml", "small", "c"}}, gpuB: {{"ml", "whole", "c"}},
			},
			wantStats: struct{ pods, devices int }{2, 3},
		},
		{
			name:      "a MIG device without a parent mapping is filed under its own UUID only",
			pods:      []*podresourcesv1.PodResources{pod("ml", "small", ctr("c", dev("nvidia.com/mig-3g.71gb", migA)))},
			want:      map[string][]Pod{migA: {{"ml", "small", "c"}}, gpuA: nil},
			wantStats: struct{ pods, devices int }{1, 1},
		},
		{
			name:      "a pre-R470 MIG name gives its parent GPU without a mapping",
			pods:      []*podresourcesv1.PodResources{pod("ml", "old", ctr("c", dev("nvidia.com/mig-1g.5gb", "MIG-GPU-aaaaaaaa-0000-0000-0000-000000000000/1/0")))},
			want:      map[string][]Pod{gpuA: {{"ml", "old", "c"}}, "MIG-GPU-aaaaaaaa-0000-0000-0000-000000000000/1/0": {{"ml", "old", "c"}}},
			wantStats: struct{ pods, devices int }{1, 2},
		},
		{
			name:      "index IDs of the device plugin are mapped to UUIDs by the caller's function",
			pods:      []*podresourcesv1.PodResources{pod("ml", "p", ctr("c", dev("nvidia.com/gpu", "1::2")))},
			parent:    func(id string) (string, bool) { return map[string]string{"1": gpuB}[id], id == "1" },
			want:      map[string][]Pod{gpuB: {{"ml", "p", "c"}}, "1": {{"ml", "p", "c"}}},
			wantStats: struct{ pods, devices int }{1, 2},
		},
		{
			name:      "custom resource names replace the defaults",
			pods:      []*podresourcesv1.PodResources{pod("ml", "p", ctr("c", dev("nvidia.com/gpu", gpuA), dev("acme.io/gpu-x", gpuB)))},
			names:     []string{"acme.io/gpu-*"},
			want:      map[string][]Pod{gpuA: nil, gpuB: {{"ml", "p", "c"}}},
			wantStats: struct{ pods, devices int }{1, 1},
		},
		{
			name: "a node without GPU pods attributes nothing",
			pods: []*podresourcesv1.PodResources{pod("kube-system", "dns", ctr("c"))},
			want: map[string][]Pod{gpuA: nil},
		},
	}
	socket := socketPath(t)
	f := &fakeKubelet{}
	serve(t, socket, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.set(tt.pods...)
			c := New(Options{Socket: socket, ResourceNames: tt.names, ParentGPU: tt.parent, Log: slog.New(slog.DiscardHandler)})
			defer func() { _ = c.Close() }()
			if err := c.Refresh(t.Context()); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			for id, want := range tt.want {
				if got := c.PodsFor(id); !slices.Equal(got, want) {
					t.Errorf("PodsFor(%q) = %v, want %v", id, got, want)
				}
			}
			s := c.Stats()
			if s.Pods != tt.wantStats.pods || s.Devices != tt.wantStats.devices || s.Err != nil || s.Stale {
				t.Errorf("Stats = %+v, want %d pods, %d devices, no error, fresh", s, tt.wantStats.pods, tt.wantStats.devices)
			}
		})
	}
}

func TestPodsForSlicesHaveNoSpareCapacityToShare(t *testing.T) {
	// Two scrapes appending to the same shared slice must not write one backing array.
	socket := socketPath(t)
	f := &fakeKubelet{}
	f.set(
		pod("a", "p", ctr("c", dev("nvidia.com/gpu", "GPU-a::0"))),
		pod("b", "p", ctr("c", dev("nvidia.com/gpu", "GPU-a::1"))),
		pod("c", "p", ctr("c", dev("nvidia.com/gpu", "GPU-a::2"))),
	)
	serve(t, socket, f)
	c := New(Options{Socket: socket, Log: slog.New(slog.DiscardHandler)})
	defer func() { _ = c.Close() }()
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.PodsFor("GPU-a"); len(got) != 3 || cap(got) != len(got) {
		t.Errorf("PodsFor(GPU-a) has len %d cap %d, want 3 and 3", len(got), cap(got))
	}
}
