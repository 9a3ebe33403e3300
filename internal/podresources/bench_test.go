package podresources

import (
	"fmt"
	"log/slog"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// BenchmarkPodsFor reads the attribution of one of 8 GPUs shared by 64 pods, as a scrape
// does per GPU.
func BenchmarkPodsFor(b *testing.B) {
	var pods []*podresourcesv1.PodResources
	for i := range 64 {
		id := fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000::%d", i%8, i)
		pods = append(pods, pod("ml", fmt.Sprintf("p%d", i), ctr("main", dev("nvidia.com/gpu", id))))
	}
	socket := socketPath(b)
	f := &fakeKubelet{}
	f.set(pods...)
	serve(b, socket, f)
	c := New(Options{Socket: socket, Log: slog.New(slog.DiscardHandler)})
	defer func() { _ = c.Close() }()
	if err := c.Refresh(b.Context()); err != nil {
		b.Fatal(err)
	}
	const uuid = "GPU-00000003-0000-0000-0000-000000000000"
	if n := len(c.PodsFor(uuid)); n != 8 {
		b.Fatalf("PodsFor(%s) has %d pods, want 8", uuid, n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c.PodsFor(uuid) == nil {
			b.Fatal("no pods")
		}
	}
}
