package remediation

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func faultTimes(n int, ago time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(-ago)
	}
	return out
}

// far is a stamp far in the future (2099).
var far = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEvaluateBreaker(t *testing.T) {
	p := DefaultPolicy().Breaker // 20%, at least 3, within 10m
	trippedAt := Breaker{TrippedAt: t0.Add(-time.Hour), Reason: "storm"}
	tests := []struct {
		name    string
		b       Breaker
		p       BreakerPolicy
		size    int
		faults  []time.Time
		tripped bool
	}{
		{"a quiet pool stays closed", Breaker{}, p, 10, nil, false},
		{"exactly the share does not trip it: it takes more than the share", Breaker{}, p, 15, faultTimes(3, time.Minute), false},
		{"more than the share within the window trips it", Breaker{}, p, 10, faultTimes(4, time.Minute), true},
		{"40% of the pool faulting at once trips it", Breaker{}, p, 100, faultTimes(40, 0), true},
		{"faults older than the window are not new", Breaker{}, p, 10, faultTimes(4, 11*time.Minute), false},
		{"fewer faults than the minimum never trip it, whatever the share", Breaker{}, p, 4, faultTimes(2, time.Minute), false},
		{"a count threshold trips on more than that many nodes, whatever the share", Breaker{}, BreakerPolicy{Count: 2, Window: 10 * time.Minute}, 1000, faultTimes(3, time.Minute), true},
		{"a count threshold is not tripped by exactly that many nodes", Breaker{}, BreakerPolicy{Count: 3, Window: 10 * time.Minute}, 10, faultTimes(3, time.Minute), false},
		{"a disabled breaker never trips", Breaker{}, BreakerPolicy{Disabled: true, Percent: 20, MinNodes: 3, Window: time.Minute}, 10, faultTimes(10, 0), false},
		{"a tripped breaker stays tripped with no fault at all", trippedAt, p, 10, nil, true},
		{"a resumed breaker is closed", Breaker{TrippedAt: t0.Add(-time.Hour), ResumedAt: t0.Add(-30 * time.Minute)}, p, 10, nil, false},
		{"faults from before the resume do not trip it again", Breaker{TrippedAt: t0.Add(-time.Hour), ResumedAt: t0.Add(-time.Minute)}, p, 10, faultTimes(5, 2*time.Minute), false},
		{"a resume stamped in the future does not keep 10 of 10 faulting nodes from tripping it", Breaker{ResumedAt: far}, p, 10, faultTimes(10, time.Minute), true},
		{"a resume stamped in the future does not close a tripped breaker", Breaker{TrippedAt: t0.Add(-time.Hour), Reason: "4 of 10 nodes: automation paused", Faulting: 4, Nodes: 10, ResumedAt: far}, p, 10, nil, true},
		{"a resume stamped within the clock-skew allowance closes a tripped breaker", Breaker{TrippedAt: t0.Add(-time.Hour), ResumedAt: t0.Add(MaxStampSkew)}, p, 10, nil, false},
		{"new faults after the resume trip it again", Breaker{TrippedAt: t0.Add(-time.Hour), ResumedAt: t0.Add(-5 * time.Minute)}, p, 10, faultTimes(5, 2*time.Minute), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EvaluateBreaker(tt.b, tt.p, tt.size, tt.faults, t0)
			if got.Tripped() != tt.tripped {
				t.Errorf("tripped %v, want %v (%+v)", got.Tripped(), tt.tripped, got)
			}
			if got.Tripped() && !tt.b.Tripped() && (!strings.Contains(got.Reason, "automation paused") || got.Faulting == 0) {
				t.Errorf("a tripped breaker must say why with the numbers: %+v", got)
			}
		})
	}
}

// Time alone never closes a breaker: only a resume after it tripped does.
func TestPropertyBreakerClosesOnlyOnResume(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := DefaultPolicy().Breaker
	for n := range 500 {
		var b Breaker
		now := t0
		for i := range 100 {
			now = now.Add(time.Duration(r.IntN(600)) * time.Second)
			faults := make([]time.Time, r.IntN(6))
			for j := range faults {
				faults[j] = now.Add(-time.Duration(r.IntN(1200)) * time.Second)
			}
			resumed := false
			if r.IntN(20) == 0 {
				b.ResumedAt, resumed = now, true
			}
			next := EvaluateBreaker(b, p, 10, faults, now)
			if b.Tripped() && !next.Tripped() {
				t.Fatalf("sequence %d step %d: the breaker closed without a resume", n, i)
			}
			if b.Tripped() && next != b {
				t.Fatalf("sequence %d step %d: a tripped breaker changed: %+v -> %+v", n, i, b, next)
			}
			if resumed && b.TrippedAt.Before(now) && b.Tripped() {
				t.Fatalf("sequence %d step %d: a resume at the evaluation time did not close it", n, i)
			}
			b = next
		}
	}
}
