package dra_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// BenchmarkPrepare is one claim of one GPU prepared through the kubelet's gRPC call on the
// plugin's socket (the claim read from the API, checked against the checkpoint, its CDI spec
// written and read back, the checkpoint written), on 8 simulated H100s with 7 other claims
// prepared; the unprepare after each is not timed. It reports the p99.
func BenchmarkPrepare(b *testing.B) {
	e := newEnv(b, "h100x8")
	e.start(b, e.client)
	conn := e.conn(b)
	client := drapbv1.NewDRAPluginClient(conn)
	for i := 1; i < 8; i++ {
		c := e.claim(b, fmt.Sprintf("held-%d", i), false, fmt.Sprintf("gpu-%d", i))
		if res := prepare(b, conn, c)[c.Uid]; res.GetError() != "" {
			b.Fatal(res.GetError())
		}
	}
	claims := make([]*drapbv1.Claim, b.N)
	for i := range claims {
		claims[i] = e.claim(b, fmt.Sprintf("bench-%d", i), false, "gpu-0")
	}
	took := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		resp, err := client.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claims[i : i+1]})
		took = append(took, time.Since(start))
		if err != nil || resp.GetClaims()[claims[i].Uid].GetError() != "" {
			b.Fatalf("prepare %d: %v %v", i, err, resp)
		}
		b.StopTimer()
		if _, err := client.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claims[i : i+1]}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkHealthToSlice is one health change of GPU 0 (out of service, then back) from the
// engine's notification to the node's slice in the API (a fake clientset, watched) showing
// the taint added or lifted. It reports the p99 of the two together.
func BenchmarkHealthToSlice(b *testing.B) {
	e := newEnv(b, "h100x8")
	p, _ := e.start(b, e.client)
	ctx := context.Background()
	waitFor(b, "the node's slice", func() bool {
		l, err := e.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 1
	})
	w, err := e.client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	snap, err := e.backend.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	uuid := snap.Devices[0].UUID
	took := make([]time.Duration, 0, 2*b.N)
	step := func(st health.State, taints int) {
		start := time.Now()
		e.health.set(uuid, st)
		p.Notify()
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*resourceapi.ResourceSlice); ok && len(s.Spec.Devices) > 0 && len(s.Spec.Devices[0].Taints) == taints {
				break
			}
		}
		took = append(took, time.Since(start))
	}
	b.ResetTimer()
	for range b.N {
		step(health.State{Health: health.Unhealthy, Action: fault.ActionResetGPU, Causes: []string{"xid-79"}}, 1)
		step(health.State{Health: health.Healthy, Action: fault.ActionNone}, 0)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}
