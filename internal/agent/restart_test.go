package agent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/testenv"
)

// errDead is what a crashed agent's durable state and steps answer: a process that died
// writes nothing more.
var errDead = errors.New("this agent process is dead")

// crashPoint says where in a step an agent process dies: at the call op ("save", "reset",
// "clear"), before or after it took effect, when match accepts the journal entry.
type crashPoint struct {
	op     string
	after  bool
	match  func(e agent.JournalEntry) bool
	active bool
}

// node is the durable part of one simulated node, shared by its agent processes: the
// simulated GPUs and their kernel log, the state folder, and how often each step ran.
type node struct {
	b              *sim.Backend
	resets, boots  atomic.Int64
	journal        agent.FileJournal
	cleared        agent.FileCleared
	lastSavedEntry atomic.Int64
}

// process is one agent process on node: it dies (every later write and step fails) at its
// crash point, then waits for its context to end.
type process struct {
	n       *node
	point   crashPoint
	dead    atomic.Bool
	crashed chan struct{}
	once    sync.Once
	ctx     context.Context
}

func (p *process) at(op string, after bool, e agent.JournalEntry) error {
	if p.dead.Load() {
		return errDead
	}
	c := p.point
	if c.active && c.op == op && c.after == after && (c.match == nil || c.match(e)) {
		p.dead.Store(true)
		p.once.Do(func() { close(p.crashed) })
		<-p.ctx.Done()
		return errDead
	}
	return nil
}

type processJournal struct{ p *process }

func (j processJournal) Load() (agent.JournalEntry, bool, error) {
	if j.p.dead.Load() {
		return agent.JournalEntry{}, false, errDead
	}
	return j.p.n.journal.Load()
}

func (j processJournal) Save(e agent.JournalEntry) error {
	if err := j.p.at("save", false, e); err != nil {
		return err
	}
	if err := j.p.n.journal.Save(e); err != nil {
		return err
	}
	j.p.n.lastSavedEntry.Store(e.ID)
	return j.p.at("save", true, e)
}

func (j processJournal) Clear() error {
	e := agent.JournalEntry{ID: j.p.n.lastSavedEntry.Load()}
	if err := j.p.at("clear", false, e); err != nil {
		return err
	}
	return j.p.n.journal.Clear()
}

type processCleared struct{ p *process }

func (c processCleared) Load() (agent.ClearedXIDs, bool, error) { return c.p.n.cleared.Load() }

func (c processCleared) Save(x agent.ClearedXIDs) error {
	if c.p.dead.Load() {
		return errDead
	}
	return c.p.n.cleared.Save(x)
}

// processSteps are the simulated node's steps, counted, through process p.
type processSteps struct {
	p   *process
	sim recovery.Sim
}

func (s processSteps) ResetGPU(ctx context.Context, uuid string) error {
	if s.p.dead.Load() {
		return errDead
	}
	if err := s.sim.ResetGPU(ctx, uuid); err != nil {
		return err
	}
	s.p.n.resets.Add(1)
	return s.p.at("reset", true, agent.JournalEntry{ID: s.p.n.lastSavedEntry.Load()})
}

func (s processSteps) RebootNode(ctx context.Context) (bool, error) {
	if s.p.dead.Load() {
		return false, errDead
	}
	s.p.n.boots.Add(1)
	return s.sim.RebootNode(ctx)
}

func (s processSteps) PowerCycle(ctx context.Context) (bool, error) { return s.RebootNode(ctx) }

func (s processSteps) BootID(ctx context.Context) (string, error) { return s.sim.BootID(ctx) }

// startProcess runs an agent process on n until it crashes at point (the returned channel
// closes then) or the test ends. cfg is the node's agent configuration.
func startProcess(t *testing.T, cfg agent.Config, n *node, point crashPoint) (crashed <-chan struct{}, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{n: n, point: point, crashed: make(chan struct{}), ctx: ctx}
	cfg.Journal, cfg.Cleared = processJournal{p}, processCleared{p}
	cfg.Steps = processSteps{p: p, sim: recovery.Sim{Backend: n.b}}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return p.crashed, stop
}

// sentinel logs an XID 95 on GPU gpu and waits until the published status shows it: the
// monitor reads the kernel log in order, so every line before it has been judged.
func sentinel(t *testing.T, c client.Client, name string, b *sim.Backend, gpu int32) {
	t.Helper()
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: int(gpu), XID: 95}); err != nil {
		t.Fatal(err)
	}
	healthIs(t, c, name, gpu, v1alpha1.HealthUnhealthy)
}

func entryIs(id int64, done, answered bool) func(agent.JournalEntry) bool {
	return func(e agent.JournalEntry) bool { return e.ID == id && e.Done == done && (e.Answer != nil) == answered }
}

func TestAnAgentRestartedAtAnyPointOfTheLadderRunsNoStepTwiceAndForgetsNoFault(t *testing.T) {
	cases := []struct {
		name  string
		point crashPoint
		// resets is how many GPU resets ran in all; recovered is whether the restarted
		// agent knows the reset recovered the GPU (else the XID is judged again, and the
		// node needs the next step: a reboot).
		resets    int64
		recovered bool
		outcome   v1alpha1.StepOutcome
		message   string
	}{
		{"an agent that dies before the reset is recorded resets the GPU once after its restart",
			crashPoint{op: "save", match: entryIs(2, false, false)}, 1, true, v1alpha1.OutcomeSucceeded, "reset 1 GPU(s); GPU checks: 1 healthy"},
		{"an agent that dies after recording the reset but before it runs never runs it and keeps the fault",
			crashPoint{op: "save", after: true, match: entryIs(2, false, false)}, 0, false, v1alpha1.OutcomeFailed, "not started again"},
		{"an agent that dies mid-step, after the GPU was reset, does not reset it again and keeps the fault it cannot know was cleared",
			crashPoint{op: "reset", after: true}, 1, false, v1alpha1.OutcomeFailed, "not started again"},
		{"an agent that dies after the reset is done but before the check records the recovery and checks the GPU after its restart",
			crashPoint{op: "save", after: true, match: entryIs(2, true, false)}, 1, true, v1alpha1.OutcomeSucceeded, "before the agent restarted; GPU checks: 1 healthy"},
		{"an agent that dies after the check but before keeping the answer answers from the journal's done step",
			crashPoint{op: "save", match: entryIs(2, true, true)}, 1, true, v1alpha1.OutcomeSucceeded, "before the agent restarted; GPU checks: 1 healthy"},
		{"an agent that dies after keeping the answer publishes that answer after its restart",
			crashPoint{op: "save", after: true, match: entryIs(2, true, true)}, 1, true, v1alpha1.OutcomeSucceeded, "reset 1 GPU(s); GPU checks: 1 healthy"},
		{"an agent that dies after publishing the answer does nothing more and the GPU stays healthy",
			crashPoint{op: "clear", match: func(e agent.JournalEntry) bool { return e.ID == 2 }}, 1, true, v1alpha1.OutcomeSucceeded, "reset 1 GPU(s); GPU checks: 1 healthy"},
	}
	_, c := testenv.Start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := newNode(t, c, nil)
			cfg, fb := simConfig(t, c, name)
			dir := t.TempDir()
			n := &node{b: fb.Backend, journal: agent.FileJournal{Path: filepath.Join(dir, "remediation-step.json")},
				cleared: agent.FileCleared{Path: filepath.Join(dir, "cleared-xids.json")}}
			point := tc.point
			point.active = true
			crashed, kill := startProcess(t, cfg, n, point)
			healthIs(t, c, name, 3, v1alpha1.HealthHealthy)
			if err := n.b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95}); err != nil {
				t.Fatal(err)
			}
			uuid := healthIs(t, c, name, 3, v1alpha1.HealthUnhealthy)
			askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepCaptureEvidence, GPUs: []string{uuid}, Reason: "gpu 3: xid-95"})
			answerTo(t, c, name, 1)
			askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
			select {
			case <-crashed:
			case <-time.After(20 * time.Second):
				t.Fatal("the agent did not reach its crash point within 20 s")
			}
			kill() // its goroutines end; it writes nothing more

			_, stop := startProcess(t, cfg, n, crashPoint{})
			ans := answerTo(t, c, name, 2)
			if ans.Outcome != tc.outcome || !strings.Contains(ans.Message, tc.message) {
				t.Fatalf("answer after the restart = %s %q, want %s containing %q", ans.Outcome, ans.Message, tc.outcome, tc.message)
			}
			sentinel(t, c, name, n.b, 5)
			want := v1alpha1.HealthHealthy
			if !tc.recovered {
				want = v1alpha1.HealthUnhealthy
			}
			if g, err := gpuHealth(c, name, 3); err != nil || g.Health != want {
				t.Fatalf("GPU 3 after the restart: %+v (%v), want %s", g, err, want)
			}
			if !tc.recovered { // the fault is still there: the ladder's next step repairs it
				askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 3, Step: v1alpha1.StepRebootNode})
				if ans := answerTo(t, c, name, 3); ans.Outcome != v1alpha1.OutcomeSucceeded {
					t.Fatalf("reboot after the restart = %+v", ans)
				}
				healthIs(t, c, name, 3, v1alpha1.HealthHealthy)
			}

			// Three more restarts after the ladder: nothing is held again, nothing runs again.
			for i := range 3 {
				stop()
				_, stop = startProcess(t, cfg, n, crashPoint{})
				sentinel(t, c, name, n.b, int32(i))
				if g, err := gpuHealth(c, name, 3); err != nil || g.Health != v1alpha1.HealthHealthy {
					t.Fatalf("GPU 3 after restart %d past the ladder: %+v (%v), want healthy", i+2, g, err)
				}
			}
			wantBoots := int64(0)
			if !tc.recovered {
				wantBoots = 1
			}
			if got := n.resets.Load(); got != tc.resets {
				t.Errorf("the GPU was reset %d times, want %d", got, tc.resets)
			}
			if got := n.boots.Load(); got != wantBoots {
				t.Errorf("the node was rebooted %d times, want %d", got, wantBoots)
			}
		})
	}
}

func TestAnAgentRestartedBeforeAnyStepStillHoldsAnXID79AndResetsAndRebootsForIt(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, fb := simConfig(t, c, name)
	dir := t.TempDir()
	n := &node{b: fb.Backend, journal: agent.FileJournal{Path: filepath.Join(dir, "remediation-step.json")},
		cleared: agent.FileCleared{Path: filepath.Join(dir, "cleared-xids.json")}}
	_, stop := startProcess(t, cfg, n, crashPoint{})
	healthIs(t, c, name, 2, v1alpha1.HealthHealthy)
	if err := n.b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 2, XID: 79}); err != nil {
		t.Fatal(err)
	}
	uuid := healthIs(t, c, name, 2, v1alpha1.HealthUnhealthy)
	for range 2 {
		stop()
		_, stop = startProcess(t, cfg, n, crashPoint{})
	}
	sentinel(t, c, name, n.b, 6)
	if g, err := gpuHealth(c, name, 2); err != nil || g.Health != v1alpha1.HealthUnhealthy {
		t.Fatalf("GPU 2 after two restarts: %+v (%v), want still unhealthy (xid 79 not repaired)", g, err)
	}
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	if ans := answerTo(t, c, name, 1); ans.Outcome != v1alpha1.OutcomeSucceeded || !strings.Contains(ans.Message, "1 still unhealthy") {
		t.Fatalf("reset answer = %+v, want the GPU still unhealthy (xid 79 needs a reboot)", ans)
	}
	stop()
	_, stop = startProcess(t, cfg, n, crashPoint{})
	sentinel(t, c, name, n.b, 7)
	if g, err := gpuHealth(c, name, 2); err != nil || g.Health != v1alpha1.HealthUnhealthy {
		t.Fatalf("GPU 2 after a reset and a restart: %+v (%v), want still unhealthy (a reset does not cover xid 79)", g, err)
	}
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepRebootNode})
	if ans := answerTo(t, c, name, 2); ans.Outcome != v1alpha1.OutcomeSucceeded {
		t.Fatalf("reboot answer = %+v", ans)
	}
	healthIs(t, c, name, 2, v1alpha1.HealthHealthy)
	stop()
	startProcess(t, cfg, n, crashPoint{})
	sentinel(t, c, name, n.b, 1)
	if g, err := gpuHealth(c, name, 2); err != nil || g.Health != v1alpha1.HealthHealthy {
		t.Fatalf("GPU 2 after the reboot and a restart: %+v (%v), want healthy", g, err)
	}
	if n.resets.Load() != 1 || n.boots.Load() != 1 {
		t.Errorf("resets %d, reboots %d: want one of each", n.resets.Load(), n.boots.Load())
	}
}

func TestAClearedXIDTheKernelLogNoLongerHoldsIsDroppedSoANewOneIsJudged(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, fb := simConfig(t, c, name)
	dir := t.TempDir()
	n := &node{b: fb.Backend, journal: agent.FileJournal{Path: filepath.Join(dir, "remediation-step.json")},
		cleared: agent.FileCleared{Path: filepath.Join(dir, "cleared-xids.json")}}
	_, stop := startProcess(t, cfg, n, crashPoint{})
	healthIs(t, c, name, 3, v1alpha1.HealthHealthy)
	if err := n.b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95}); err != nil {
		t.Fatal(err)
	}
	uuid := healthIs(t, c, name, 3, v1alpha1.HealthUnhealthy)
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	if ans := answerTo(t, c, name, 1); ans.Outcome != v1alpha1.OutcomeSucceeded {
		t.Fatalf("reset answer = %+v", ans)
	}
	stop()

	// The same boot ID over a log that lost the cleared line (a simulated node started again
	// with a fresh log; on a real node, a ring buffer that wrapped): the same fault logged now
	// is new, and must be judged.
	cfg2, fb2 := simConfig(t, c, name)
	if fb2.BootID() != fb.BootID() {
		t.Fatalf("boot IDs %s and %s: the test needs the same boot", fb2.BootID(), fb.BootID())
	}
	n2 := &node{b: fb2.Backend, journal: n.journal, cleared: n.cleared}
	startProcess(t, cfg2, n2, crashPoint{})
	eventually(t, "the restarted agent dropped the cleared line its log no longer holds", func() error {
		set, _, err := n.cleared.Load()
		if err != nil || len(set.Lines) != 0 {
			return fmt.Errorf("cleared set %+v (%w)", set, err)
		}
		return nil
	})
	if err := fb2.Inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95}); err != nil {
		t.Fatal(err)
	}
	healthIs(t, c, name, 3, v1alpha1.HealthUnhealthy)
}
