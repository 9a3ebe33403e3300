package health

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

// A step of a random sequence: the input, with finding times as an offset in steps from
// the step's own time, so that the same sequence can run on clocks of any speed.
type step struct {
	in     Input
	offset int // for a Finding: LastSeen is now + offset steps (offset <= 0)
}

func randomSequence(r *rand.Rand, n int) []step {
	causes := []string{"xid-48", "xid-79", "row-remap-pending", "nvlink-down-3", "clock-hw-slowdown", "pcie-link-gen"}
	kinds := []RecoveryKind{RecoveryGPUReset, RecoveryDriverReload, RecoveryNodeReboot, RecoveryServiced, "unknown"}
	out := make([]step, n)
	for i := range out {
		switch k := r.IntN(10); {
		case k < 5:
			out[i] = step{in: Finding{
				Cause:    causes[r.IntN(len(causes))],
				Severity: fault.Severities[r.IntN(len(fault.Severities))],
				Action:   fault.Actions[r.IntN(len(fault.Actions))],
			}, offset: -r.IntN(3)}
		case k < 7:
			out[i] = step{in: Recovered{Kind: kinds[r.IntN(len(kinds))]}}
		case k < 9:
			out[i] = step{in: CheckPassed{}}
		default:
			out[i] = step{in: CheckFailed{Action: fault.Actions[r.IntN(len(fault.Actions))]}}
		}
	}
	return out
}

// run applies a sequence on a clock that advances by tick each step and returns every state.
func run(seq []step, tick time.Duration) []State {
	s := NewState(t0)
	states := []State{s}
	for i, st := range seq {
		now := t0.Add(time.Duration(i+1) * tick)
		in := st.in
		if f, ok := in.(Finding); ok {
			f.LastSeen = now.Add(time.Duration(st.offset) * tick)
			in = f
		}
		s = Next(s, in, now)
		states = append(states, s)
	}
	return states
}

const (
	propertySequences = 2000
	propertySteps     = 60
)

func TestPropertyActionNeverDeescalatesUntilHealthy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range propertySequences {
		seq := randomSequence(r, propertySteps)
		states := run(seq, time.Second)
		for i := 1; i < len(states); i++ {
			prev, next := states[i-1], states[i]
			if next.Health != Healthy && next.Action.Rank() < prev.Action.Rank() {
				t.Fatalf("sequence %d step %d: %T lowered the action %s -> %s while %s", n, i, seq[i-1].in, prev.Action, next.Action, next.Health)
			}
			if prev.Health == Unhealthy && next.Health == Degraded {
				t.Fatalf("sequence %d step %d: %T made an unhealthy GPU merely degraded", n, i, seq[i-1].in)
			}
		}
	}
}

// A model independent of Next: an unhealthy GPU may become healthy only through a passing
// check that follows a recovery covering the required action, with no unhealthy-making
// input between them.
func TestPropertyOnlyARecoveryAndAPassingCheckReturnToHealthy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range propertySequences {
		seq := randomSequence(r, propertySteps)
		states := run(seq, time.Second)
		recovered := false
		recStep, recCovers := -1, fault.ActionNone
		for i := 1; i < len(states); i++ {
			prev, next, in := states[i-1], states[i], seq[i-1].in
			if prev.Health == Unhealthy && next.Health == Healthy {
				if _, ok := in.(CheckPassed); !ok || !recovered {
					t.Fatalf("sequence %d step %d: %T returned an unhealthy GPU to healthy (recovered since the fault: %v)", n, i, in, recovered)
				}
			}
			if prev.Health == Degraded && next.Health == Healthy {
				if _, ok := in.(CheckPassed); !ok {
					t.Fatalf("sequence %d step %d: %T returned a degraded GPU to healthy", n, i, in)
				}
			}
			switch in := in.(type) {
			case Recovered:
				if c, ok := recoveryCovers[in.Kind]; ok && c.Rank() >= prev.Action.Rank() {
					recovered, recStep, recCovers = true, i, c
				}
			case CheckFailed:
				recovered = false
			case Finding:
				stale := recStep >= 0 && i+seq[i-1].offset < recStep && in.Action.Rank() <= recCovers.Rank()
				if in.Unhealthy() && !stale {
					recovered = false
				}
			}
			if next.Health == Healthy {
				recovered = false
			}
		}
	}
}

// The decisions depend on the order of events, never on how much time passed: the same
// sequence on a clock of seconds and on a clock of years reaches the same states.
func TestPropertyTimeNeverClearsAFault(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range propertySequences {
		seq := randomSequence(r, propertySteps)
		fast, slow := run(seq, time.Second), run(seq, year)
		for i := range fast {
			a, b := fast[i], slow[i]
			if a.Health != b.Health || a.Action != b.Action || a.AwaitingCheck != b.AwaitingCheck || !slices.Equal(a.Causes, b.Causes) {
				t.Fatalf("sequence %d step %d: seconds gave %s, years gave %s", n, i, describe(a), describe(b))
			}
		}
	}
}

func TestPropertyNextIsPure(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := range propertySequences / 4 {
		seq := randomSequence(r, propertySteps)
		states := run(seq, time.Minute)
		for i := 1; i < len(states); i++ {
			prev := states[i-1]
			keep := fmt.Sprintf("%#v", prev)
			now := t0.Add(time.Duration(i) * time.Minute)
			in := seq[i-1].in
			if f, ok := in.(Finding); ok {
				f.LastSeen = now.Add(time.Duration(seq[i-1].offset) * time.Minute)
				in = f
			}
			again := Next(prev, in, now)
			if !reflect.DeepEqual(again, states[i]) || fmt.Sprintf("%#v", prev) != keep {
				t.Fatalf("sequence %d step %d: Next is not a pure function of its arguments", n, i)
			}
		}
	}
}
