package health

import (
	"context"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/rules"
)

// BenchmarkFromSnapshot is one poll of the monitor on eight healthy GPUs: every rule of the
// rule set judged against the previous reading.
func BenchmarkFromSnapshot(b *testing.B) {
	sb, err := sim.Load("h100x8")
	if err != nil {
		b.Fatal(err)
	}
	prev, err := sb.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	cur, err := sb.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	prev.Time, cur.Time = t0, t0.Add(10*time.Second)
	th := rules.DefaultThresholds()
	b.ReportAllocs()
	for b.Loop() {
		if fs := FromSnapshot(prev, cur, th); len(fs) != 0 {
			b.Fatalf("findings on healthy GPUs: %v", fs)
		}
	}
}
