package health

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

func TestAggregatorMillionIdenticalLinesAreOneFinding(t *testing.T) {
	a := NewAggregator(0)
	f := xidLine("GPU-a", 95, t0, "Uncontained: FBHUB. RST: Yes, D-RST: No")
	for i := range 1_000_000 {
		f.LastSeen = t0.Add(time.Duration(i) * time.Millisecond)
		a.Add(f)
	}
	got := a.Findings()
	if len(got) != 1 || got[0].Count != 1_000_000 || len(got[0].Evidence) != MaxEvidence {
		t.Fatalf("got %d findings, first %+v; want one with count 1,000,000 and %d evidence lines", len(got), got[0], MaxEvidence)
	}
}

func TestAggregatorRepeatsDoNotAllocate(t *testing.T) {
	a := NewAggregator(0)
	f := xidLine("GPU-a", 95, t0, "Uncontained: FBHUB")
	a.Add(f)
	a.Add(f) // fills the latest-evidence slot
	if allocs := testing.AllocsPerRun(10_000, func() { a.Add(f) }); allocs != 0 {
		t.Errorf("a repeat allocates %.1f times, want 0", allocs)
	}
}

func TestAggregatorCapsDistinctCausesWithAnOverflowFinding(t *testing.T) {
	a := NewAggregator(16)
	for i := range 100 {
		a.Add(warning("GPU-a", fmt.Sprintf("cause-%d", i)))
	}
	if a.Len() != 16 {
		t.Errorf("kept %d, want the cap of 16", a.Len())
	}
	o, ok := a.Get("", CauseOverflow)
	if !ok || o.Count != 84 || o.Severity != fault.SeverityWarning || o.GPUIndex != -1 || len(o.Evidence) != MaxEvidence {
		t.Fatalf("overflow = %+v, %v; want a node-level warning counting 84 with %d evidence lines", o, ok, MaxEvidence)
	}
	if !strings.Contains(o.Summary, "more than 16") || !strings.Contains(o.Evidence[0], "GPU-a cause-16") {
		t.Errorf("overflow summary %q evidence %q, want the cap and the first dropped cause named", o.Summary, o.Evidence)
	}
	all := a.Findings()
	if last := all[len(all)-1]; last.Cause != CauseOverflow {
		t.Errorf("last finding %q, want the overflow", last.Cause)
	}
}

func TestAggregatorFloodNeverHidesASevereFinding(t *testing.T) {
	a := NewAggregator(8)
	for i := range 8 {
		a.Add(warning("GPU-a", fmt.Sprintf("noise-%d", i)))
	}
	lost := Finding{GPU: "GPU-b", GPUIndex: 1, Cause: CauseGPULost, Severity: fault.SeverityFatal, Action: fault.ActionRebootNode, LastSeen: t0}
	if !a.Add(lost) {
		t.Fatal("a fatal finding at the cap should be kept, evicting a warning")
	}
	if _, ok := a.Get("GPU-b", CauseGPULost); !ok || a.Len() != 8 {
		t.Errorf("fatal finding kept %v, len %d; want kept and len 8", ok, a.Len())
	}
	// Now fill every slot with findings as severe: one more cannot evict anything, so the
	// overflow carries its severity and action.
	for i := range 10 {
		a.Add(Finding{GPU: "GPU-c", Cause: fmt.Sprintf("fatal-%d", i), Severity: fault.SeverityFatal, Action: fault.ActionRebootNode, LastSeen: t0})
	}
	o, _ := a.Get("", CauseOverflow)
	if o.Severity != fault.SeverityFatal || o.Action != fault.ActionRebootNode {
		t.Errorf("overflow %s/%s, want fatal/reboot-node: what it absorbed", o.Severity, o.Action)
	}
	if _, ok := a.Get("GPU-b", CauseGPULost); !ok {
		t.Error("an equally severe finding must not evict a kept one")
	}
}

func TestAggregatorMemoryStaysBoundedUnderADistinctFlood(t *testing.T) {
	a := NewAggregator(64)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	flood := func(from, n int) {
		for i := from; i < from+n; i++ {
			a.Add(xidLine(fmt.Sprintf("GPU-%d", i%8), i, t0, "Xid line with a distinct code"))
		}
	}
	flood(0, 10_000)
	before := heap()
	flood(10_000, 200_000)
	after := heap()
	if after > before+256<<10 {
		t.Errorf("heap grew from %d to %d bytes over 200,000 distinct findings, want under 256 KiB growth", before, after)
	}
	if a.Len() != 64 {
		t.Errorf("kept %d, want 64", a.Len())
	}
	if o, _ := a.Get("", CauseOverflow); o.Count != 210_000-64 {
		t.Errorf("overflow count %d, want %d", o.Count, 210_000-64)
	}
}

func BenchmarkAggregatorFlood(b *testing.B) {
	b.Run("identical", func(b *testing.B) {
		a := NewAggregator(0)
		f := xidLine("GPU-a", 95, t0, "NVRM: Xid (PCI:0000:3b:00): 95, pid=1234, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No")
		b.ReportAllocs()
		for b.Loop() {
			a.Add(f)
		}
	})
	b.Run("distinct", func(b *testing.B) {
		a := NewAggregator(0)
		fs := make([]Finding, 4*DefaultMaxFindings)
		for i := range fs {
			fs[i] = xidLine(fmt.Sprintf("GPU-%d", i%8), i, t0, "distinct")
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			a.Add(fs[i%len(fs)])
			i++
		}
	})
}
