package upgrade

import (
	"testing"
	"time"
)

// BenchmarkDecide is one decision over 5,000 nodes in 125 racks: the canary done and
// soaked, a tenth of the fleet upgraded, every 50th node held by another owner, every 70th
// in remediation; the decision plans the next wave.
func BenchmarkDecide(b *testing.B) {
	nodes := fleet(5000, 40)
	for i := range nodes {
		switch {
		case i == 0:
			done(nodes, i, 0, t0)
			nodes[i].Canary = true
		case i%10 == 0:
			done(nodes, i, 1, t0)
		case i%50 == 1:
			nodes[i].HeldByOthers = true
		case i%70 == 2:
			nodes[i].InRemediation = true
		}
	}
	s := spec()
	s.DomainKeys = []string{"rack"}
	s.MaxPerDomain, s.MaxUnavailablePercent, s.MaxUnavailable = 3, 5, 0
	now := t0.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		d := Decide(nodes, s, now)
		if len(d.Start) == 0 {
			b.Fatalf("no node starts: %s", d.Message)
		}
	}
}
