package remediation

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	tests := []struct {
		name       string
		n, pct, sz int
		want       int
	}{
		{"nothing set means no limit", 0, 0, 10, -1},
		{"a number alone is the limit", 3, 0, 10, 3},
		{"a percentage rounds up", 0, 10, 15, 2},
		{"a non-zero percentage of a small group still allows one node", 0, 10, 3, 1},
		{"a percentage of an empty group allows none", 0, 10, 0, 0},
		{"the smaller of a number and a percentage wins", 2, 50, 10, 2},
		{"the percentage wins when it is smaller", 9, 20, 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Limit(tt.n, tt.pct, tt.sz); got != tt.want {
				t.Errorf("Limit(%d, %d%%, %d) = %d, want %d", tt.n, tt.pct, tt.sz, got, tt.want)
			}
		})
	}
}

func cand(name, pool, domain string, held, wants, unusable bool, since time.Duration) Candidate {
	return Candidate{Node: name, Pool: pool, Domain: domain, Held: held, Wants: wants, Unusable: unusable, FaultSince: t0.Add(since)}
}

func TestAdmit(t *testing.T) {
	tenPercent := Budget{MaxHeldPercent: 10}
	perRack := Budget{MaxHeld: 5, DomainKey: "rack", MaxHeldPerDomain: 1}
	never := func(string) (bool, string) { return false, "" }
	tripped := func(string) (bool, string) { return true, "storm" }
	pool := func(n int, mods ...Candidate) []Candidate {
		var out []Candidate
		for i := range n {
			out = append(out, cand(fmt.Sprintf("n%02d", i), "p", fmt.Sprintf("r%d", i%2), false, false, false, 0))
		}
		for _, m := range mods {
			for i := range out {
				if out[i].Node == m.Node {
					out[i] = m
				}
			}
		}
		return out
	}
	tests := []struct {
		name     string
		cands    []Candidate
		budget   Budget
		paused   func(string) (bool, string)
		admitted []string
		reasons  map[string]string
	}{
		{"a node that asks nothing is not admitted", pool(10), tenPercent, never, nil, map[string]string{"n00": AdmissionNoRequest}},
		{"the oldest fault is admitted first when one node fits",
			pool(10, cand("n03", "p", "r1", false, true, false, time.Minute), cand("n07", "p", "r1", false, true, false, 0)), tenPercent, never,
			[]string{"n07"}, map[string]string{"n03": AdmissionOverBudget}},
		{"equal fault times are admitted by name",
			pool(10, cand("n05", "p", "r1", false, true, false, 0), cand("n02", "p", "r0", false, true, false, 0)), tenPercent, never,
			[]string{"n02"}, map[string]string{"n05": AdmissionOverBudget}},
		{"another owner's hold counts against the budget",
			pool(10, cand("n01", "p", "r1", true, false, false, 0), cand("n02", "p", "r0", false, true, false, 0)), tenPercent, never,
			nil, map[string]string{"n02": AdmissionOverBudget}},
		{"a node already held by another owner is admitted without using budget",
			pool(10, cand("n01", "p", "r1", true, true, false, 0), cand("n02", "p", "r0", false, true, false, time.Second)), tenPercent, never,
			[]string{"n01"}, map[string]string{"n01": AdmissionAlreadyHeld, "n02": AdmissionOverBudget}},
		{"an unusable node is admitted over budget",
			pool(10, cand("n01", "p", "r1", true, false, false, 0), cand("n02", "p", "r0", false, true, true, 0)), tenPercent, never,
			[]string{"n02"}, map[string]string{"n02": AdmissionUnusable}},
		{"one node per rack is held at once",
			pool(10, cand("n00", "p", "r0", false, true, false, 0), cand("n02", "p", "r0", false, true, false, time.Second), cand("n01", "p", "r1", false, true, false, 2*time.Second)), perRack, never,
			[]string{"n00", "n01"}, map[string]string{"n02": AdmissionOverBudget}},
		{"a tripped breaker admits only unusable nodes",
			pool(10, cand("n00", "p", "r0", false, true, false, 0), cand("n01", "p", "r1", false, true, true, 0)), tenPercent, tripped,
			[]string{"n01"}, map[string]string{"n00": AdmissionPaused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Admit(tt.cands, func(string) Budget { return tt.budget }, tt.paused)
			var names []string
			for i, a := range got {
				if a.Admitted {
					names = append(names, tt.cands[i].Node)
				}
				if r, ok := tt.reasons[tt.cands[i].Node]; ok && a.Reason != r {
					t.Errorf("%s: reason %q, want %q (%s)", tt.cands[i].Node, a.Reason, r, a.Message())
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.admitted) {
				t.Errorf("admitted %v, want %v", names, tt.admitted)
			}
		})
	}
}

// The budget is never exceeded by remediation except for nodes that cannot run work: after
// admission, each pool and domain holds at most max(its limit, what other owners already
// held) plus the unusable nodes admitted.
func TestPropertyBudgetNeverExceededExceptByUnusableNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 3000 {
		size := 1 + r.IntN(40)
		var cands []Candidate
		for i := range size {
			cands = append(cands, Candidate{
				Node: fmt.Sprintf("n%03d", i), Pool: fmt.Sprintf("p%d", r.IntN(2)), Domain: fmt.Sprintf("r%d", r.IntN(4)),
				Held: r.IntN(6) == 0, Wants: r.IntN(3) == 0, Unusable: r.IntN(10) == 0, FaultSince: t0.Add(time.Duration(r.IntN(100)) * time.Second),
			})
		}
		b := Budget{MaxHeld: r.IntN(4), MaxHeldPercent: r.IntN(40), DomainKey: "rack", MaxHeldPerDomain: r.IntN(3)}
		tripped := r.IntN(4) == 0
		got := Admit(cands, func(string) Budget { return b }, func(string) (bool, string) { return tripped, "storm" })
		type acc struct{ before, after, unusable, size int }
		pools, domains := map[string]*acc{}, map[string]*acc{}
		for i, c := range cands {
			for _, m := range []*acc{groupAcc(pools, c.Pool), groupAcc(domains, c.Pool+"/"+c.Domain)} {
				m.size++
				if c.Held {
					m.before++
					m.after++
				} else if got[i].Admitted {
					m.after++
					if c.Unusable {
						m.unusable++
					}
				}
			}
			if got[i].Admitted && tripped && !c.Unusable && !c.Held {
				t.Fatalf("case %d: %s admitted while the breaker is tripped", n, c.Node)
			}
			if got[i].Admitted && !c.Wants {
				t.Fatalf("case %d: %s admitted without asking", n, c.Node)
			}
		}
		for name, m := range pools {
			if l := Limit(b.MaxHeld, b.MaxHeldPercent, m.size); l >= 0 && m.after > max(l, m.before)+m.unusable {
				t.Fatalf("case %d: pool %s holds %d of %d, limit %d, %d held before, %d unusable", n, name, m.after, m.size, l, m.before, m.unusable)
			}
		}
		for name, m := range domains {
			l := Limit(b.MaxHeldPerDomain, 0, m.size)
			if l < 0 {
				l = 1
			}
			if m.after > max(l, m.before)+m.unusable {
				t.Fatalf("case %d: domain %s holds %d, limit %d, %d held before, %d unusable", n, name, m.after, l, m.before, m.unusable)
			}
		}
	}
}

func groupAcc[T any](m map[string]*T, k string) *T {
	if v, ok := m[k]; ok {
		return v
	}
	v := new(T)
	m[k] = v
	return v
}
