package upgrade

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		nodes     func() []Node
		spec      func(s *Spec)
		now       time.Time
		phase     Phase
		wave      int
		start     []string
		canaries  []string
		requeueAt time.Time
		message   string
	}{
		{"a new upgrade starts its one canary alone, whatever the budget allows",
			func() []Node { return fleet(8, 2) }, nil, t0,
			PhaseCanary, 0, []string{"node-00"}, []string{"node-00"}, time.Time{}, "canaries: 1 of 1 to go, 1 starting now"},
		{"two canaries are spread over two racks",
			func() []Node { return fleet(8, 2) }, func(s *Spec) { s.CanaryCount = 2 }, t0,
			PhaseCanary, 0, []string{"node-00", "node-02"}, []string{"node-00", "node-02"}, time.Time{}, ""},
		{"canaries by selector are the nodes it matches",
			func() []Node {
				n := fleet(8, 2)
				n[5].Labels["canary"] = "yes"
				return n
			}, func(s *Spec) { s.CanarySelector = labels.SelectorFromSet(labels.Set{"canary": "yes"}) }, t0,
			PhaseCanary, 0, []string{"node-05"}, []string{"node-05"}, time.Time{}, ""},
		{"a canary in progress starts nothing else",
			func() []Node {
				n := fleet(8, 2)
				n[0].State, n[0].Canary = InProgress, true
				return n
			}, nil, t0,
			PhaseCanary, 0, nil, []string{"node-00"}, time.Time{}, "1 of 1 to go, 0 starting now"},
		{"a recorded canary held by remediation waits, and no other node is picked instead",
			func() []Node {
				n := fleet(8, 2)
				n[3].Canary, n[3].InRemediation = true, true
				return n
			}, nil, t0,
			PhaseCanary, 0, nil, []string{"node-03"}, time.Time{}, ""},
		{"the canary passed and soaks before any wave",
			func() []Node {
				n := fleet(8, 2)
				done(n, 0, 0, t0)
				n[0].Canary = true
				return n
			}, nil, t0.Add(5 * time.Minute),
			PhaseSoaking, 0, nil, []string{"node-00"}, t0.Add(10 * time.Minute), "wave 0 soaks until 2026-03-01T12:10:00Z"},
		{"after the canary's soak the first wave takes one node per rack, the canary's rack too, up to the maximum unavailable",
			func() []Node {
				n := fleet(8, 2)
				done(n, 0, 0, t0)
				n[0].Canary = true
				return n
			}, nil, t0.Add(10 * time.Minute),
			PhaseRolling, 1, []string{"node-01", "node-02"}, []string{"node-00"}, time.Time{}, "wave 1: 2 nodes starting"},
		{"a wave skips a rack whose other node another owner holds, and counts that hold in the budget",
			func() []Node {
				n := fleet(8, 2)
				done(n, 0, 0, t0)
				n[0].Canary = true
				n[3].HeldByOthers = true
				return n
			}, func(s *Spec) { s.MaxUnavailable = 3 }, t0.Add(time.Hour),
			PhaseRolling, 1, []string{"node-01", "node-04"}, []string{"node-00"}, time.Time{}, "1 of 3 unavailable allowed in use"},
		{"a node in remediation is never started",
			func() []Node {
				n := fleet(4, 1)
				done(n, 0, 0, t0)
				n[0].Canary = true
				n[1].InRemediation = true
				return n
			}, func(s *Spec) { s.MaxUnavailable = 4 }, t0.Add(time.Hour),
			PhaseRolling, 1, []string{"node-02", "node-03"}, []string{"node-00"}, time.Time{}, ""},
		{"a full budget starts nothing and says so",
			func() []Node {
				n := fleet(6, 1)
				done(n, 0, 0, t0)
				n[0].Canary = true
				n[4].HeldByOthers, n[5].HeldByOthers = true, true
				return n
			}, nil, t0.Add(time.Hour),
			PhaseRolling, 0, nil, []string{"node-00"}, time.Time{}, "none may start"},
		{"a percentage of the pool rounds up",
			func() []Node {
				n := fleet(10, 1)
				done(n, 0, 0, t0)
				n[0].Canary = true
				return n
			}, func(s *Spec) { s.MaxUnavailable, s.MaxUnavailablePercent = 0, 15 }, t0.Add(time.Hour),
			PhaseRolling, 1, []string{"node-01", "node-02"}, []string{"node-00"}, time.Time{}, ""},
		{"a wave in progress starts nothing until it finished",
			func() []Node {
				n := fleet(8, 1)
				done(n, 0, 0, t0)
				n[0].Canary = true
				n[1].State, n[1].Wave = InProgress, 1
				done(n, 2, 1, t0.Add(time.Hour))
				return n
			}, nil, t0.Add(2 * time.Hour),
			PhaseRolling, 1, nil, []string{"node-00"}, time.Time{}, "wave 1: 1 nodes in progress (node-01)"},
		{"the next wave soaks from the last gate of the previous one",
			func() []Node {
				n := fleet(8, 1)
				done(n, 0, 0, t0)
				n[0].Canary = true
				done(n, 1, 1, t0.Add(time.Hour))
				done(n, 2, 1, t0.Add(90*time.Minute))
				return n
			}, nil, t0.Add(95 * time.Minute),
			PhaseSoaking, 1, nil, []string{"node-00"}, t0.Add(100 * time.Minute), ""},
		{"a failed gate halts the upgrade and names the node and why",
			func() []Node {
				n := fleet(8, 1)
				n[0].State, n[0].Canary, n[0].Message = Failed, true, "acceptance failed: hbm-bandwidth 80% of baseline"
				return n
			}, nil, t0,
			PhaseHalted, 0, nil, []string{"node-00"}, time.Time{}, "node-00: acceptance failed: hbm-bandwidth 80% of baseline"},
		{"a paused upgrade starts nothing",
			func() []Node { return fleet(8, 1) }, func(s *Spec) { s.Paused = true }, t0,
			PhasePaused, 0, nil, []string{"node-00"}, time.Time{}, "paused: 0 of 8 nodes upgraded"},
		{"an aborted upgrade starts nothing, even paused",
			func() []Node { return fleet(8, 1) }, func(s *Spec) { s.Paused, s.Abort = true, true }, t0,
			PhaseAborted, 0, nil, []string{"node-00"}, time.Time{}, "aborted"},
		{"nodes that already run the target are done without a move",
			func() []Node {
				n := fleet(3, 1)
				for i := range n {
					n[i].Running = oldStack.Over(target)
				}
				return n
			}, nil, t0,
			PhaseComplete, 0, nil, nil, time.Time{}, "all 3 nodes run driver 580.95.05"},
		{"a canary that already runs the target is passed over for one that does not",
			func() []Node {
				n := fleet(3, 1)
				n[0].Running = oldStack.Over(target)
				return n
			}, nil, t0,
			PhaseCanary, 0, []string{"node-01"}, []string{"node-01"}, time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec()
			if tt.spec != nil {
				tt.spec(&s)
			}
			d := Decide(tt.nodes(), s, tt.now)
			if d.Phase != tt.phase || d.Wave != tt.wave {
				t.Errorf("phase, wave = %s, %d, want %s, %d (%s)", d.Phase, d.Wave, tt.phase, tt.wave, d.Message)
			}
			if got := started(d); !slices.Equal(got, tt.start) {
				t.Errorf("start = %v, want %v (%s)", got, tt.start, d.Message)
			}
			if !slices.Equal(d.Canaries, tt.canaries) {
				t.Errorf("canaries = %v, want %v", d.Canaries, tt.canaries)
			}
			if !d.RequeueAt.Equal(tt.requeueAt) {
				t.Errorf("requeue at %v, want %v", d.RequeueAt, tt.requeueAt)
			}
			if !strings.Contains(d.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", d.Message, tt.message)
			}
		})
	}
}
