package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
)

// run starts a monitor on a simulated node and returns it with a stop function.
func run(t *testing.T, b *sim.Backend, kernel KernelSource, noEvents bool) (*Monitor, func(), <-chan health.Finding) {
	t.Helper()
	found := make(chan health.Finding, 64)
	m, err := New(Config{Backend: b, Interval: 20 * time.Millisecond, Kernel: kernel, NoEvents: noEvents,
		OnFinding: func(f health.Finding, _ bool) {
			select {
			case found <- f:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = m.Run(ctx) }()
	return m, func() { cancel(); wg.Wait() }, found
}

// waitFor returns the first finding with the cause, or fails after a generous bound.
func waitFor(t *testing.T, found <-chan health.Finding, cause string) health.Finding {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-found:
			if f.Cause == cause {
				return f
			}
		case <-deadline:
			t.Fatalf("no %s finding", cause)
		}
	}
}

func TestEachSourceTurnsAnInjectedFaultIntoAFindingAndUnhealthyGPU(t *testing.T) {
	cases := []struct {
		name     string
		events   bool
		kernel   bool
		fault    sim.Fault
		cause    string
		action   fault.Action
		wantGPU  int
		wantFrom health.Source
	}{
		{"an NVML-style XID event for a GPU that fell off the bus", true, false, sim.Fault{GPU: 2, Type: sim.FaultXID, XID: 79}, "xid-79", fault.ActionRebootNode, 2, health.SourceNVMLEvent},
		{"the same XID seen only in the kernel log", false, true, sim.Fault{GPU: 5, Type: sim.FaultXID, XID: 79}, "xid-79", fault.ActionRebootNode, 5, health.SourceKmsg},
		{"a pending row remap seen only by polling the counters", false, false, sim.Fault{GPU: 1, Type: sim.FaultRowRemapPending}, health.CauseRowRemapPending, fault.ActionResetGPU, 1, health.SourceCounter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := sim.Load("h100x8")
			if err != nil {
				t.Fatal(err)
			}
			var k KernelSource
			if tc.kernel {
				k = SimKernel(b, 10*time.Millisecond)
			}
			m, stop, found := run(t, b, k, !tc.events)
			defer stop()
			time.Sleep(50 * time.Millisecond) // the first poll knows the GPUs
			if err := b.Inject(tc.fault); err != nil {
				t.Fatal(err)
			}
			f := waitFor(t, found, tc.cause)
			if f.GPUIndex != tc.wantGPU || f.Source != tc.wantFrom {
				t.Errorf("finding %s", f)
			}
			var st *GPUHealth
			for _, h := range m.Health() {
				if h.Index == tc.wantGPU {
					h := h
					st = &h
				}
			}
			if st == nil || st.Health != health.Unhealthy || st.Action.Rank() < tc.action.Rank() {
				t.Fatalf("GPU %d health %+v, want unhealthy with at least %s", tc.wantGPU, st, tc.action)
			}
			for _, h := range m.Health() {
				if h.Index != tc.wantGPU && h.Health != health.Healthy {
					t.Errorf("GPU %d is %s, only GPU %d is at fault", h.Index, h.Health, tc.wantGPU)
				}
			}
		})
	}
}

func TestAnXID45ThatFollowsAn94IsAConsequenceNotANewFault(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m, stop, found := run(t, b, SimKernel(b, 10*time.Millisecond), true)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	for _, f := range []sim.Fault{{GPU: 3, Type: sim.FaultXID, XID: 94}, {GPU: 3, Type: sim.FaultXID, XID: 45}} {
		if err := b.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, found, "xid-94")
	deadline := time.Now().Add(5 * time.Second)
	for m.Stats().Consequences == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if m.Stats().Consequences != 1 {
		t.Fatalf("stats %+v: the 45 was not recognised as a consequence", m.Stats())
	}
	for _, f := range m.Findings() {
		if f.Cause == "xid-45" {
			t.Fatalf("XID 45 reported as its own fault: %s", f)
		}
	}
}

func TestAGPUReturnsToHealthyOnlyAfterARecoveryAndAPassingCheck(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m, stop, found := run(t, b, nil, false)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	if err := b.Inject(sim.Fault{GPU: 0, Type: sim.FaultXID, XID: 48}); err != nil {
		t.Fatal(err)
	}
	f := waitFor(t, found, "xid-48")
	uuid := f.GPU
	if err := m.Apply(uuid, health.CheckPassed{}); err != nil {
		t.Fatal(err)
	}
	if h := m.Health()[0]; h.Health != health.Unhealthy {
		t.Fatalf("a passing check alone cleared the GPU: %+v", h)
	}
	for _, in := range []health.Input{health.Recovered{Kind: health.RecoveryGPUReset}, health.CheckPassed{}} {
		if err := m.Apply(uuid, in); err != nil {
			t.Fatal(err)
		}
	}
	if h := m.Health()[0]; h.Health != health.Healthy {
		t.Fatalf("after a reset and a passing check: %+v", h)
	}
	if err := m.Apply("GPU-nope", health.CheckPassed{}); err == nil {
		t.Error("an unknown GPU was accepted")
	}
}

func TestTheFallenOffTheBusLineAfterAnXID79IsNotASecondXID(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m, stop, found := run(t, b, SimKernel(b, 10*time.Millisecond), true)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	if err := b.Inject(sim.Fault{GPU: 2, Type: sim.FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	f := waitFor(t, found, "xid-79")
	deadline := time.Now().Add(5 * time.Second)
	for m.Stats().Consequences == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := m.Stats(); st.XIDs != 1 || st.Consequences != 1 {
		t.Fatalf("stats %+v: want 1 XID and the derived line counted as its repeat", st)
	}
	for _, g := range m.Findings() {
		if g.Cause == "xid-79" && g.Count != 1 {
			t.Errorf("%s counted %d times", f.Cause, g.Count)
		}
	}
}
