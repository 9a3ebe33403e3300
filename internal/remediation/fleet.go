package remediation

import "time"

// Fleet is every GPU node with the policies and breakers of their pools.
type Fleet struct {
	Nodes []Facts `json:"nodes"`
	// Policies by pool name; a pool without one takes DefaultPolicy.
	Policies map[string]Policy `json:"policies,omitempty"`
	// Breakers by pool name, as persisted.
	Breakers map[string]Breaker `json:"breakers,omitempty"`
}

// Plan is one evaluation of the fleet: the breakers (persist those that changed) and the
// admission of every node, aligned with Fleet.Nodes.
type Plan struct {
	Breakers   map[string]Breaker `json:"breakers"`
	Admissions []Admission        `json:"admissions"`
	needs      []Need
	policies   map[string]Policy
	index      map[string]int
}

// For is the admission of the named node (the zero Admission for a node not in the fleet).
func (pl Plan) For(node string) Admission {
	if i, ok := pl.index[node]; ok {
		return pl.Admissions[i]
	}
	return Admission{Reason: AdmissionNoRequest, DomainLimit: -1}
}

// PlanFleet evaluates every pool's breaker and the budget over the whole fleet.
func PlanFleet(f Fleet, now time.Time) Plan {
	pl := Plan{
		Breakers: make(map[string]Breaker, len(f.Breakers)),
		needs:    make([]Need, len(f.Nodes)),
		policies: map[string]Policy{},
		index:    make(map[string]int, len(f.Nodes)),
	}
	cands := make([]Candidate, len(f.Nodes))
	faults := map[string][]time.Time{}
	sizes := map[string]int{}
	for i, n := range f.Nodes {
		p := pl.policy(f, n.Pool)
		pl.needs[i] = Assess(n, p)
		cands[i] = CandidateOf(n, pl.needs[i])
		pl.index[n.Node] = i
		sizes[n.Pool]++
		if pl.needs[i].Remediate {
			faults[n.Pool] = append(faults[n.Pool], cands[i].FaultSince)
		}
	}
	for pool, b := range f.Breakers {
		if inFuture(b.ResumedAt, now) {
			b.ResumedAt = time.Time{} // refused (ParseStamp): it would close every later trip
		}
		pl.Breakers[pool] = b
	}
	for pool, size := range sizes {
		pl.Breakers[pool] = EvaluateBreaker(pl.Breakers[pool], pl.policy(f, pool).Breaker, size, faults[pool], now)
	}
	pl.Admissions = Admit(cands,
		func(pool string) Budget { return pl.policies[pool].Budget },
		func(pool string) (bool, string) {
			b := pl.Breakers[pool]
			return b.Tripped(), b.Reason
		})
	return pl
}

func (pl *Plan) policy(f Fleet, pool string) Policy {
	p, ok := pl.policies[pool]
	if !ok {
		p = f.Policies[pool].WithDefaults()
		pl.policies[pool] = p
	}
	return p
}

// DecideFleet plans the fleet and decides every node, aligned with f.Nodes.
func DecideFleet(f Fleet, now time.Time) (Plan, []Decision) {
	pl := PlanFleet(f, now)
	out := make([]Decision, len(f.Nodes))
	for i, n := range f.Nodes {
		out[i] = decide(n, pl.policies[n.Pool], pl.needs[i], pl.Admissions[i], now)
	}
	return pl, out
}
