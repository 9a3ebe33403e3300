package remediation

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

// benchFleet is n 8-GPU nodes in 4 pools of 25 racks: most healthy, 2% with a new fault,
// 1% in a reset, 1% accepting, 0.5% in maintenance, 1% held by acceptance.
func benchFleet(n int) Fleet {
	f := Fleet{Policies: map[string]Policy{}, Breakers: map[string]Breaker{}}
	for p := range 4 {
		f.Policies[fmt.Sprintf("pool-%d", p)] = Policy{Budget: Budget{MaxHeldPercent: 5, DomainKey: "rack", MaxHeldPerDomain: 2}}
	}
	for i := range n {
		var mods []func(*Facts)
		switch i % 200 {
		case 0, 1, 2, 3:
			mods = append(mods, unhealthy(i%8, fault.ActionResetGPU, "xid-95"))
		case 4, 5:
			mods = append(mods, unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted))
		case 6, 7:
			mods = append(mods, heldBy(OwnerRemediation), withState(resetAccepting), accepted(5, i%2 == 0))
		case 8:
			mods = append(mods, heldBy(OwnerRemediation), withState(maintenance))
		case 9, 10:
			mods = append(mods, heldBy("acceptance"))
		}
		nd := node(mods...)
		nd.Node, nd.Pool, nd.Domain = fmt.Sprintf("gpu-%05d", i), fmt.Sprintf("pool-%d", i%4), fmt.Sprintf("rack-%02d", i%25)
		f.Nodes = append(f.Nodes, nd)
	}
	return f
}

// BenchmarkDecideFleet5000 is one decision pass over 5,000 nodes: the breakers, the budget
// over the fleet and every node's decision. It reports the p99 of the passes.
func BenchmarkDecideFleet5000(b *testing.B) {
	f := benchFleet(5000)
	now := t0.Add(time.Minute)
	var passes []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		_, ds := DecideFleet(f, now)
		passes = append(passes, time.Since(start))
		if len(ds) != len(f.Nodes) {
			b.Fatalf("%d decisions for %d nodes", len(ds), len(f.Nodes))
		}
	}
	slices.Sort(passes)
	b.ReportMetric(float64(passes[len(passes)*99/100].Microseconds())/1000, "p99-ms/pass")
}

// BenchmarkDecide is one node's decision (a node in a reset waiting for its outcome).
func BenchmarkDecide(b *testing.B) {
	f := node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted))
	now := t0.Add(time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		Decide(f, DefaultPolicy(), admitted, now)
	}
}

// The pass over 5,000 nodes decides what the fleet says: the numbers the benchmark
// measures are those of real decisions.
func TestBenchFleetDecidesSomethingOfEveryKind(t *testing.T) {
	f := benchFleet(5000)
	_, ds := DecideFleet(f, t0.Add(time.Minute))
	seen := map[Phase]int{}
	for _, d := range ds {
		seen[d.Phase]++
	}
	for _, p := range []Phase{PhaseNone, PhaseSuspect, PhaseQuarantined, PhaseRecovering, PhaseMaintenance} {
		if seen[p] == 0 {
			t.Errorf("no node decided %q: %v", p, seen)
		}
	}
}
