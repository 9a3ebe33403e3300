package remediation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

func fleetOf(n int, mods map[int][]func(*Facts)) Fleet {
	f := Fleet{Policies: map[string]Policy{"h100": {Budget: Budget{MaxHeld: 2}}}}
	for i := range n {
		nd := node(mods[i]...)
		nd.Node, nd.Domain = fmt.Sprintf("gpu-%02d", i), fmt.Sprintf("r%d", i%3)
		f.Nodes = append(f.Nodes, nd)
	}
	return f
}

func TestDecideFleetStormTripsTheBreakerAndTheBudgetHolds(t *testing.T) {
	mods := map[int][]func(*Facts){}
	for i := range 4 { // 40% of 10 nodes fault at once; one of them lost a GPU
		mods[i] = []func(*Facts){unhealthy(1, fault.ActionResetGPU, "xid-95")}
	}
	mods[3] = []func(*Facts){unhealthy(1, fault.ActionRebootNode, "gpu-lost")}
	f := fleetOf(10, mods)
	plan, ds := DecideFleet(f, t0.Add(time.Minute))
	b := plan.Breakers["h100"]
	if !b.Tripped() || b.Faulting != 4 || !strings.Contains(b.Reason, "4 of 10") {
		t.Fatalf("breaker %+v, want tripped by 4 of 10", b)
	}
	for i, d := range ds {
		switch {
		case i == 3:
			if d.Hold != HoldPlace || plan.Admissions[i].Reason != AdmissionUnusable {
				t.Errorf("the node with a lost GPU: hold %q admission %+v, want held regardless", d.Hold, plan.Admissions[i])
			}
		case i < 3:
			if d.Hold != HoldKeep || d.Phase != PhaseSuspect || d.Wait != WaitPaused {
				t.Errorf("node %d: hold %q phase %q wait %q, want a recorded fault waiting for a resume", i, d.Hold, d.Phase, d.Wait)
			}
		default:
			if d.Phase != PhaseNone || len(d.Actions) > 0 || d.Hold != HoldKeep {
				t.Errorf("healthy node %d: %+v", i, d)
			}
		}
	}
	// A person resumes: the breaker closes, faults before the resume do not re-trip it,
	// and the budget (2, one used by the unusable node) admits the oldest fault by name.
	f.Breakers = map[string]Breaker{"h100": {TrippedAt: b.TrippedAt, Reason: b.Reason, ResumedAt: t0.Add(2 * time.Minute)}}
	f.Nodes[3].Holds = []Hold{{Owner: OwnerRemediation, Since: t0}}
	f.Nodes[3].State = ds[3].State
	plan, ds = DecideFleet(f, t0.Add(3*time.Minute))
	if plan.Breakers["h100"].Tripped() {
		t.Fatalf("breaker %+v tripped again on faults from before the resume", plan.Breakers["h100"])
	}
	var placed []string
	for i, d := range ds {
		if d.Hold == HoldPlace {
			placed = append(placed, f.Nodes[i].Node)
		}
	}
	if fmt.Sprint(placed) != "[gpu-00]" {
		t.Errorf("holds placed on %v, want [gpu-00] (budget 2, one held)", placed)
	}
	if a := plan.For("gpu-01"); a.Admitted || a.Position != 1 || a.PoolHeld != 2 {
		t.Errorf("gpu-01 admission %+v, want first in the queue with 2 held", a)
	}
	if a := plan.For("no-such-node"); a.Admitted || a.Reason != AdmissionNoRequest {
		t.Errorf("unknown node admission %+v", a)
	}
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name  string
		facts Facts
		adm   Admission
		lines []string
	}{
		{"a healthy node says nothing holds it", node(), admitted, []string{"holds: none", "fault: none", "next: nothing"}},
		{"a node waiting for budget says so with the numbers",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy("acceptance")), overBudget,
			[]string{"held by acceptance since 2026-11-29T12:00:00Z", "GPU 3: xid-95", "needs reset-gpu", "once the budget has room (pool \"h100\" holds 1 of 10 nodes (limit 1); position 2"}},
		{"a node in a reset says which request, since when and what a timeout does",
			node(unhealthy(3, fault.ActionResetGPU, "xid-95"), heldBy(OwnerRemediation), withState(resetStarted)), admitted,
			[]string{"held by remediation", "step: reset-gpu on GPU 3, started 2026-11-29T12:00:00Z (request 2)", "evidence: request 1 recorded", "attempt: reset-gpu on GPU 3", "never started again"}},
		{"a node in maintenance says how to release it",
			node(heldBy(OwnerRemediation), withState(maintenance)), admitted,
			[]string{"phase Maintenance", "why: row-remap-failure", "gpunode release gpu-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(tt.facts, DefaultPolicy(), tt.adm, t0.Add(time.Minute))
			text := e.String()
			for _, l := range tt.lines {
				if !strings.Contains(text, l) {
					t.Errorf("explanation lacks %q:\n%s", l, text)
				}
			}
			if d := Decide(tt.facts, DefaultPolicy(), tt.adm, t0.Add(time.Minute)); d.Reason != e.Decision.Reason || d.Phase != e.Phase {
				t.Errorf("explanation (%s, %s) disagrees with the decision (%s, %s)", e.Decision.Reason, e.Phase, d.Reason, d.Phase)
			}
		})
	}
}
