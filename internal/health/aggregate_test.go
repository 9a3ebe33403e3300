package health

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

var t0 = time.Date(2025, 5, 18, 19, 2, 39, 0, time.UTC)

func xidLine(gpuUUID string, code int, at time.Time, msg string) Finding {
	return Finding{GPU: gpuUUID, GPUIndex: 0, Component: fault.ComponentGPU, Severity: fault.SeverityCritical,
		Action: fault.ActionResetGPU, Source: SourceKmsg, Cause: XIDCause(code), Summary: msg,
		FirstSeen: at, LastSeen: at, Count: 1, Evidence: []string{msg}}
}

func warning(gpuUUID, cause string) Finding {
	return Finding{GPU: gpuUUID, Component: fault.ComponentGPU, Severity: fault.SeverityWarning, Action: fault.ActionNone,
		Source: SourceCounter, Cause: cause, Summary: cause, FirstSeen: t0, LastSeen: t0, Count: 1}
}

func TestAggregatorMerges(t *testing.T) {
	tests := []struct {
		name  string
		adds  []Finding
		check func(t *testing.T, f Finding)
	}{
		{"a repeat bumps the count and the last-seen time", []Finding{
			xidLine("GPU-a", 79, t0, "first"), xidLine("GPU-a", 79, t0.Add(time.Minute), "second"),
		}, func(t *testing.T, f Finding) {
			if f.Count != 2 || !f.FirstSeen.Equal(t0) || !f.LastSeen.Equal(t0.Add(time.Minute)) {
				t.Errorf("count %d first %v last %v, want 2, t0, t0+1m", f.Count, f.FirstSeen, f.LastSeen)
			}
		}},
		{"a repeat that arrives late keeps the earliest first-seen and the latest last-seen", []Finding{
			xidLine("GPU-a", 79, t0.Add(time.Minute), "later"), xidLine("GPU-a", 79, t0, "earlier"),
		}, func(t *testing.T, f Finding) {
			if !f.FirstSeen.Equal(t0) || !f.LastSeen.Equal(t0.Add(time.Minute)) || f.Summary != "later" {
				t.Errorf("first %v last %v summary %q, want t0, t0+1m, the later summary", f.FirstSeen, f.LastSeen, f.Summary)
			}
		}},
		{"a repeat keeps the worst severity and action", []Finding{
			warning("GPU-a", "x"), {GPU: "GPU-a", Cause: "x", Severity: fault.SeverityFatal, Action: fault.ActionService, LastSeen: t0},
			warning("GPU-a", "x"),
		}, func(t *testing.T, f Finding) {
			if f.Severity != fault.SeverityFatal || f.Action != fault.ActionService || f.Count != 3 {
				t.Errorf("severity %s action %s count %d, want fatal, service, 3", f.Severity, f.Action, f.Count)
			}
		}},
		{"an input count adds that many observations", []Finding{
			{GPU: "GPU-a", Cause: "x", Count: 41, LastSeen: t0}, {GPU: "GPU-a", Cause: "x", LastSeen: t0},
		}, func(t *testing.T, f Finding) {
			if f.Count != 42 {
				t.Errorf("count %d, want 42 (41, then 0 read as 1)", f.Count)
			}
		}},
		{"evidence keeps the first three lines and the latest", []Finding{
			xidLine("GPU-a", 79, t0, "1"), xidLine("GPU-a", 79, t0, "2"), xidLine("GPU-a", 79, t0, "3"),
			xidLine("GPU-a", 79, t0, "4"), xidLine("GPU-a", 79, t0, "5"), xidLine("GPU-a", 79, t0, "6"),
		}, func(t *testing.T, f Finding) {
			if got := strings.Join(f.Evidence, ","); got != "1,2,3,6" {
				t.Errorf("evidence %q, want 1,2,3,6", got)
			}
		}},
		{"a long evidence line is cut to the limit on a rune boundary", []Finding{
			xidLine("GPU-a", 79, t0, strings.Repeat("é", MaxTextBytes)),
		}, func(t *testing.T, f Finding) {
			e := f.Evidence[0]
			if len(e) > MaxTextBytes+len("…") || !strings.HasSuffix(e, "…") || !strings.HasPrefix(e, "éé") {
				t.Errorf("evidence of %d bytes %q, want at most %d bytes ending in an ellipsis", len(e), e[:10], MaxTextBytes)
			}
			if len(f.Summary) > MaxTextBytes+len("…") {
				t.Errorf("summary of %d bytes, want it cut", len(f.Summary))
			}
		}},
		{"a finding without a last-seen time takes its first-seen time", []Finding{
			{GPU: "GPU-a", Cause: "x", FirstSeen: t0},
		}, func(t *testing.T, f Finding) {
			if !f.LastSeen.Equal(t0) || f.Count != 1 {
				t.Errorf("last %v count %d, want t0 and 1", f.LastSeen, f.Count)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator(0)
			for _, f := range tt.adds {
				a.Add(f)
			}
			if a.Len() != 1 {
				t.Fatalf("kept %d findings, want 1: %v", a.Len(), a.Findings())
			}
			tt.check(t, a.Findings()[0])
		})
	}
}

func TestAggregatorKeysOnGPUAndCause(t *testing.T) {
	a := NewAggregator(0)
	for _, f := range []Finding{xidLine("GPU-a", 79, t0, ""), xidLine("GPU-b", 79, t0, ""), xidLine("GPU-a", 48, t0, ""), xidLine("GPU-a", 79, t0, "")} {
		a.Add(f)
	}
	if a.Len() != 3 {
		t.Errorf("kept %d, want 3 (two GPUs with xid-79, one with xid-48)", a.Len())
	}
	if f, ok := a.Get("GPU-a", "xid-79"); !ok || f.Count != 2 {
		t.Errorf("GPU-a xid-79 = %v %v, want count 2", f, ok)
	}
}

func TestAggregatorAddReportsNewFindings(t *testing.T) {
	a := NewAggregator(0)
	if !a.Add(warning("GPU-a", "x")) {
		t.Error("the first finding of a cause should be new")
	}
	if a.Add(warning("GPU-a", "x")) {
		t.Error("a repeat should not be new")
	}
}

func TestAggregatorDoesNotAliasTheCallersEvidence(t *testing.T) {
	a := NewAggregator(0)
	ev := []string{"mine"}
	a.Add(Finding{GPU: "GPU-a", Cause: "x", Evidence: ev, LastSeen: t0})
	ev[0] = "changed"
	got := a.Findings()
	got[0].Evidence[0] = "changed too"
	if f, _ := a.Get("GPU-a", "x"); f.Evidence[0] != "mine" {
		t.Errorf("kept evidence %q, want it untouched by the caller", f.Evidence[0])
	}
}

func TestAggregatorClearForgetsOneGPU(t *testing.T) {
	a := NewAggregator(2)
	a.Add(warning("GPU-a", "x"))
	a.Add(warning("GPU-a", "y"))
	a.Add(warning("GPU-b", "x")) // overflows
	if n := a.Clear("GPU-a"); n != 2 || a.Len() != 0 {
		t.Errorf("Clear(GPU-a) = %d, len %d; want 2 and 0", n, a.Len())
	}
	if _, ok := a.Get("", CauseOverflow); !ok {
		t.Error("clearing a GPU should keep the node-level overflow")
	}
	if n := a.Clear(""); n != 1 {
		t.Errorf(`Clear("") = %d, want 1 (the overflow)`, n)
	}
	if !a.Add(warning("GPU-a", "x")) {
		t.Error("a cleared cause should be new again")
	}
}

func TestAggregatorOrdersByGPUThenSeverity(t *testing.T) {
	a := NewAggregator(0)
	a.Add(Finding{GPU: "GPU-b", GPUIndex: 1, Cause: "w", Severity: fault.SeverityWarning})
	a.Add(Finding{GPU: "GPU-a", GPUIndex: 0, Cause: "w", Severity: fault.SeverityWarning})
	a.Add(Finding{GPU: "GPU-a", GPUIndex: 0, Cause: "c", Severity: fault.SeverityCritical})
	a.Add(Finding{GPU: "", GPUIndex: -1, Cause: "n", Severity: fault.SeverityInfo})
	var got []string
	for _, f := range a.Findings() {
		got = append(got, fmt.Sprintf("%d:%s", f.GPUIndex, f.Cause))
	}
	if s := strings.Join(got, " "); s != "-1:n 0:c 0:w 1:w" {
		t.Errorf("order %q, want node first, then GPU 0 critical before warning, then GPU 1", s)
	}
}

func TestAggregatorIsSafeForConcurrentUse(t *testing.T) {
	a := NewAggregator(32)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				a.Add(xidLine(fmt.Sprintf("GPU-%d", g), i%50, t0, "x"))
				if i%100 == 0 {
					_ = a.Findings()
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, f := range a.Findings() {
		total += f.Count
	}
	if total != 8000 {
		t.Errorf("counted %d observations, want 8000: none may be lost", total)
	}
}
