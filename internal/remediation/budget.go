package remediation

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Candidate is one node as the budget sees it.
type Candidate struct {
	Node   string `json:"node"`
	Pool   string `json:"pool,omitempty"`
	Domain string `json:"domain,omitempty"`
	// Held: the node carries a hold of any owner, or is in a remediation episode; it
	// counts against the budget.
	Held bool `json:"held,omitempty"`
	// Wants: a fault needs remediation's hold, which the node does not have yet.
	Wants bool `json:"wants,omitempty"`
	// Unusable: the node cannot run work; it is admitted whatever the budget says.
	Unusable   bool      `json:"unusable,omitempty"`
	FaultSince time.Time `json:"faultSince,omitzero"`
}

// CandidateOf is the candidate of a node with facts f and need n (Assess).
func CandidateOf(f Facts, n Need) Candidate {
	c := Candidate{Node: f.Node, Pool: f.Pool, Domain: f.Domain, Unusable: n.Unusable, FaultSince: n.Since}
	inEpisode := f.State.Phase != PhaseNone && f.State.Phase != PhaseSuspect
	c.Held = len(f.Holds) > 0 || inEpisode
	c.Wants = n.Remediate && !inEpisode && !f.held(OwnerRemediation)
	if !f.State.FaultSince.IsZero() && f.State.FaultSince.Before(c.FaultSince) {
		c.FaultSince = f.State.FaultSince
	}
	return c
}

// Admission reasons.
const (
	AdmissionNoRequest   = "NoRequest"
	AdmissionAlreadyHeld = "AlreadyHeld"
	AdmissionWithin      = "WithinBudget"
	AdmissionUnusable    = "Unusable"
	AdmissionOverBudget  = "OverBudget"
	AdmissionPaused      = "AutomationPaused"
)

// Admission is the fleet's answer to one node: may remediation place its hold now, and is
// automation paused in the node's pool. The numbers are those before the node's admission.
type Admission struct {
	Admitted    bool   `json:"admitted"`
	Reason      string `json:"reason"`
	Paused      bool   `json:"paused,omitempty"`
	PauseReason string `json:"pauseReason,omitempty"`
	Pool        string `json:"pool,omitempty"`
	PoolSize    int    `json:"poolSize"`
	PoolHeld    int    `json:"poolHeld"`
	PoolLimit   int    `json:"poolLimit"`
	// DomainLimit is -1 when the pool has no failure-domain budget.
	DomainKey   string `json:"domainKey,omitempty"`
	Domain      string `json:"domain,omitempty"`
	DomainSize  int    `json:"domainSize,omitempty"`
	DomainHeld  int    `json:"domainHeld,omitempty"`
	DomainLimit int    `json:"domainLimit"`
	// Position in the pool's queue of waiting nodes (1 = next), when not admitted.
	Position int `json:"position,omitempty"`
}

// Message says the admission to a person, with the numbers.
func (a Admission) Message() string {
	msg := fmt.Sprintf("pool %q holds %d of %d nodes (limit %d)", a.Pool, a.PoolHeld, a.PoolSize, a.PoolLimit)
	if a.DomainLimit >= 0 {
		msg += fmt.Sprintf(", %s=%q holds %d of %d (limit %d)", a.DomainKey, a.Domain, a.DomainHeld, a.DomainSize, a.DomainLimit)
	}
	if a.Position > 0 {
		msg += fmt.Sprintf("; position %d in the queue", a.Position)
	}
	if a.Paused {
		msg += "; paused: " + a.PauseReason
	}
	return msg
}

// Limit is how many of size nodes a number n and a percentage pct allow: the smaller of
// those set; a percentage rounds up. Neither set: -1 (no limit).
func Limit(n, pct, size int) int {
	l := -1
	if pct > 0 {
		l = (pct*size + 99) / 100
	}
	if n > 0 && (l < 0 || n < l) {
		l = n
	}
	return l
}

type group struct{ size, held, queued int }

type domainKey struct{ pool, domain string }

// Admit decides, for the whole fleet at once, which waiting nodes remediation may hold.
// Every node with any hold counts against its pool's and its domain's budget. Waiting
// nodes are admitted oldest fault first, then by name, while both budgets have room; an
// unusable node is admitted regardless (and counts). In a pool whose breaker is tripped
// (paused returns true) only unusable nodes are admitted. The result is aligned with cands.
func Admit(cands []Candidate, budget func(pool string) Budget, paused func(pool string) (bool, string)) []Admission {
	pools := map[string]*group{}
	domains := map[domainKey]*group{}
	for _, c := range cands {
		pg, dg := groupOf(pools, c.Pool), groupOf(domains, domainKey{c.Pool, c.Domain})
		pg.size++
		dg.size++
		if c.Held {
			pg.held++
			dg.held++
		}
	}
	out := make([]Admission, len(cands))
	var waiting []int
	for i, c := range cands {
		b := budget(c.Pool)
		pg, dg := pools[c.Pool], domains[domainKey{c.Pool, c.Domain}]
		a := Admission{Reason: AdmissionNoRequest, Pool: c.Pool, PoolSize: pg.size, PoolLimit: Limit(b.MaxHeld, b.MaxHeldPercent, pg.size), DomainLimit: -1}
		if b.DomainKey != "" {
			a.DomainKey, a.Domain, a.DomainSize = b.DomainKey, c.Domain, dg.size
			a.DomainLimit = Limit(b.MaxHeldPerDomain, b.MaxHeldPerDomainPercent, dg.size)
			if a.DomainLimit < 0 {
				a.DomainLimit = 1
			}
		}
		a.Paused, a.PauseReason = paused(c.Pool)
		out[i] = a
		switch {
		case c.Wants && c.Held:
			out[i].Admitted, out[i].Reason = true, AdmissionAlreadyHeld
		case c.Wants:
			waiting = append(waiting, i)
		}
	}
	slices.SortFunc(waiting, func(x, y int) int {
		return cmp.Or(cands[x].FaultSince.Compare(cands[y].FaultSince), cmp.Compare(cands[x].Node, cands[y].Node))
	})
	for _, i := range waiting {
		c, a := cands[i], &out[i]
		pg, dg := pools[c.Pool], domains[domainKey{c.Pool, c.Domain}]
		a.PoolHeld, a.DomainHeld = pg.held, dg.held
		room := (a.PoolLimit < 0 || pg.held < a.PoolLimit) && (a.DomainLimit < 0 || dg.held < a.DomainLimit)
		switch {
		case c.Unusable:
			a.Admitted, a.Reason = true, AdmissionUnusable
		case a.Paused:
			a.Reason = AdmissionPaused
		case room:
			a.Admitted, a.Reason = true, AdmissionWithin
		default:
			pg.queued++
			a.Reason, a.Position = AdmissionOverBudget, pg.queued
		}
		if a.Admitted {
			pg.held++
			dg.held++
		}
	}
	return out
}

func groupOf[K comparable](m map[K]*group, k K) *group {
	g, ok := m[k]
	if !ok {
		g = &group{}
		m[k] = g
	}
	return g
}
