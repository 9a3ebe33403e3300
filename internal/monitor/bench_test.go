package monitor

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
)

// BenchmarkEventToFinding measures a device event (an injected simulated XID) to the
// monitor's finding callback, end to end, and reports p50/p99/max. The target is p99
// <= 50 ms (docs/benchmarks.md). A fresh backend is used every 500 injections, because the
// simulated backend keeps every fault it was given.
func BenchmarkEventToFinding(b *testing.B) {
	var lat []time.Duration
	var mu sync.Mutex
	got := make(chan struct{}, 1)
	var start time.Time
	for done := 0; done < b.N; {
		be, err := sim.Load("h100x8")
		if err != nil {
			b.Fatal(err)
		}
		m, err := New(Config{Backend: be, Interval: time.Hour, OnFinding: func(f health.Finding, _ bool) {
			if f.Source == health.SourceNVMLEvent {
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
				select {
				case got <- struct{}{}:
				default:
				}
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Run(ctx) }()
		for !m.Stats().EventsWatched {
			time.Sleep(time.Millisecond)
		}
		for i := 0; i < 500 && done < b.N; i, done = i+1, done+1 {
			start = time.Now()
			if err := be.Inject(sim.Fault{GPU: i % 8, Type: sim.FaultXID, XID: 13}); err != nil {
				b.Fatal(err)
			}
			<-got
		}
		cancel()
		wg.Wait()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	}
}
