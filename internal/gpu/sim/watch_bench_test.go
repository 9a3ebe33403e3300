package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// BenchmarkInjectToEvent measures the time from Inject to the event's arrival on a
// watcher's channel, with the real clock, and reports its percentiles. The backend is
// renewed every 1000 injections: Inject copies the fault list, so a long run would
// measure that copy instead.
//
//	go test -run '^$' -bench InjectToEvent -benchtime 20000x ./internal/gpu/sim
func BenchmarkInjectToEvent(b *testing.B) {
	var (
		be     *Backend
		ch     <-chan gpu.Event
		cancel context.CancelFunc = func() {}
		lat    []time.Duration
	)
	renew := func() {
		cancel()
		var err error
		if be, err = Load("h100x8"); err != nil {
			b.Fatalf("Load: %v", err)
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		if ch, err = be.Watch(ctx); err != nil {
			b.Fatalf("Watch: %v", err)
		}
	}
	renew()
	defer func() { cancel() }()
	i := 0
	for b.Loop() {
		if i > 0 && i%1000 == 0 {
			b.StopTimer()
			renew()
			b.StartTimer()
		}
		start := time.Now()
		if err := be.Inject(Fault{GPU: i % 8, Type: FaultXID, XID: 31}); err != nil {
			b.Fatalf("Inject: %v", err)
		}
		if e := <-ch; e.XID != 31 {
			b.Fatalf("got %+v, want the Xid 31 event", e)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
}
