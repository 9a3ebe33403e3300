package remediation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// node is an 8-GPU node of pool "h100" in rack "r1", all healthy and idle, with mods.
func node(mods ...func(*Facts)) Facts {
	f := Facts{Node: "gpu-1", Pool: "h100", Domain: "r1"}
	for i := range 8 {
		f.GPUs = append(f.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Health: health.Healthy, Action: fault.ActionNone, Since: t0.Add(-48 * time.Hour)})
	}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func unhealthy(i int, a fault.Action, causes ...string) func(*Facts) {
	return func(f *Facts) {
		f.GPUs[i].Health, f.GPUs[i].Action, f.GPUs[i].Causes, f.GPUs[i].Since = health.Unhealthy, a, causes, t0
	}
}

func degraded(i int, a fault.Action, causes ...string) func(*Facts) {
	return func(f *Facts) {
		f.GPUs[i].Health, f.GPUs[i].Action, f.GPUs[i].Causes, f.GPUs[i].Since = health.Degraded, a, causes, t0
	}
}

func awaitingCheck(i int) func(*Facts) { return func(f *Facts) { f.GPUs[i].AwaitingCheck = true } }

func nodeFault(cause string, a fault.Action, fatal bool) func(*Facts) {
	return func(f *Facts) {
		f.NodeFaults = append(f.NodeFaults, NodeFault{Cause: cause, Action: a, Since: t0, Fatal: fatal})
	}
}

func busy(i, pods, procs int) func(*Facts) {
	return func(f *Facts) { f.GPUs[i].Pods, f.GPUs[i].Processes = pods, procs }
}

func heldBy(owners ...string) func(*Facts) {
	return func(f *Facts) {
		for _, o := range owners {
			f.Holds = append(f.Holds, Hold{Owner: o, Reason: o, Since: t0})
		}
	}
}

func withState(s State) func(*Facts) { return func(f *Facts) { f.State = s } }

func outcome(id int64, r OutcomeResult) func(*Facts) {
	return func(f *Facts) { f.Outcome = &Outcome{ID: id, Result: r, At: t0} }
}

func evidence(id int64) func(*Facts) {
	return func(f *Facts) { f.Evidence = &Evidence{ID: id, SHA256: "abc123", At: t0} }
}

func accepted(gen int64, passed bool) func(*Facts) {
	return func(f *Facts) {
		f.Acceptance = Acceptance{Requested: gen, Generation: gen, Passed: passed, At: t0}
	}
}

func requested(gen int64) func(*Facts) { return func(f *Facts) { f.Acceptance.Requested = gen } }

func released(t time.Time) func(*Facts) { return func(f *Facts) { f.ReleaseRequested = t } }

var (
	admitted   = Admission{Admitted: true, Reason: AdmissionWithin, Pool: "h100", PoolSize: 10, PoolLimit: 1, DomainLimit: -1}
	overBudget = Admission{Reason: AdmissionOverBudget, Pool: "h100", PoolSize: 10, PoolHeld: 1, PoolLimit: 1,
		DomainLimit: -1, Position: 2}
	paused = Admission{Reason: AdmissionPaused, Paused: true, PauseReason: "4 of 10 nodes faulted", DomainLimit: -1}
)

// kinds lists the kinds of actions.
func kinds(as []Action) []ActionKind {
	var out []ActionKind
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

func lastAttempt(t *testing.T, s State) Attempt {
	t.Helper()
	if len(s.Attempts) == 0 {
		t.Fatal("no attempt recorded")
	}
	return s.Attempts[len(s.Attempts)-1]
}

func hasCause(n Need, sub string) bool {
	return slices.ContainsFunc(n.Causes, func(c string) bool { return strings.Contains(c, sub) })
}
