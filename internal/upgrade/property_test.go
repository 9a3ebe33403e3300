package upgrade

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomFleet is a fleet in any state: nodes held by others, in remediation, in progress,
// done or failed, over racks and zones.
func randomFleet(r *rand.Rand) ([]Node, Spec) {
	n := 1 + r.IntN(60)
	nodes := fleet(n, 1+r.IntN(6))
	// A third of the fleets are fresh, a third between waves, a third in any state.
	mode := r.IntN(3)
	failing := r.IntN(5) == 0
	for i := range nodes {
		nodes[i].HeldByOthers = r.IntN(25) == 0
		nodes[i].InRemediation = r.IntN(30) == 0
		switch {
		case mode == 0:
		case mode == 1 && r.IntN(3) == 0:
			done(nodes, i, r.IntN(2), t0.Add(-time.Duration(10+r.IntN(120))*time.Minute))
		case mode == 2:
			randomState(r, nodes, i, failing)
		}
	}
	s := spec()
	s.CanaryCount = 1 + r.IntN(3)
	s.MaxUnavailable = r.IntN(8)
	s.MaxUnavailablePercent = r.IntN(3) * 10
	s.MaxPerDomain = 1 + r.IntN(3)
	s.DomainKeys = [][]string{nil, {"rack"}, {"zone"}, {"zone", "rack"}}[r.IntN(4)]
	s.Paused = r.IntN(10) == 0
	return nodes, s
}

func randomState(r *rand.Rand, nodes []Node, i int, failing bool) {
	nodes[i].Canary = r.IntN(15) == 0
	switch r.IntN(10) {
	case 0, 1:
		nodes[i].State, nodes[i].Wave = InProgress, r.IntN(3)
	case 2, 3:
		done(nodes, i, r.IntN(3), t0.Add(-time.Duration(r.IntN(120))*time.Minute))
	case 4:
		if failing {
			nodes[i].State = Failed
		}
	}
}

func TestADecisionNeverExceedsItsLimits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	withStarts := 0
	for i := range 5000 {
		nodes, s := randomFleet(r)
		d := Decide(nodes, s, t0)
		if len(d.Start) > 0 {
			withStarts++
		}
		if err := withinLimits(nodes, s, d); err != nil {
			t.Fatalf("fleet %d (%d nodes, spec %+v): %v\ndecision %+v", i, len(nodes), s, err, d)
		}
	}
	// The fleets must exercise the limits: most of them start something.
	if withStarts < 1000 {
		t.Errorf("only %d of 5000 decisions started a node: the fleets do not test the limits", withStarts)
	}
}

func withinLimits(nodes []Node, s Spec, d Decision) error {
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	unavailable := 0
	used := map[string]int{}
	for _, n := range nodes {
		if n.HeldByOthers || n.InRemediation || n.State == InProgress {
			unavailable++
			for _, k := range s.DomainKeys {
				used[k+"="+n.Labels[k]]++
			}
		}
		if n.State == Failed && len(d.Start) > 0 {
			return fmt.Errorf("started %d nodes after %s failed its gate", len(d.Start), n.Name)
		}
	}
	if len(d.Start) > 0 && (s.Paused || s.Abort) {
		return fmt.Errorf("started nodes while paused or aborted")
	}
	for _, st := range d.Start {
		n := byName[st.Node]
		if n.State != Pending || n.HeldByOthers || n.InRemediation {
			return fmt.Errorf("started %s in state %s, held by others %v, in remediation %v", n.Name, n.State, n.HeldByOthers, n.InRemediation)
		}
		unavailable++
		for _, k := range s.DomainKeys {
			key := k + "=" + n.Labels[k]
			if used[key]++; used[key] > max(s.MaxPerDomain, 1) {
				return fmt.Errorf("%s makes %d nodes of %s unavailable, limit %d", n.Name, used[key], key, s.MaxPerDomain)
			}
		}
	}
	if len(d.Start) > 0 && unavailable > s.Limit(len(nodes)) {
		return fmt.Errorf("%d nodes unavailable after the starts, limit %d", unavailable, s.Limit(len(nodes)))
	}
	return nil
}
