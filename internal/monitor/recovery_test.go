package monitor

import (
	"context"
	"testing"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
)

// stepper is a monitor on a simulated node driven by hand: each step is one poll, then the
// kernel-log lines logged since the last step (no goroutine, no timing).
type stepper struct {
	t    *testing.T
	b    *sim.Backend
	m    *Monitor
	seen int
	boot string
	recs [][]string
}

func newStepper(t *testing.T, bootID bool) *stepper {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	s := &stepper{t: t, b: b, boot: b.BootID()}
	cfg := Config{Backend: b, OnRecovered: func(uuids []string, _ health.RecoveryKind) { s.recs = append(s.recs, uuids) }}
	if bootID {
		cfg.BootID = b.BootID
	}
	if s.m, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	s.step()
	return s
}

func (s *stepper) step() {
	s.t.Helper()
	s.m.poll(context.Background())
	if id := s.b.BootID(); id != s.boot {
		s.seen, s.boot = 0, id
	}
	lines := s.b.KernelLog()
	for _, l := range lines[min(s.seen, len(lines)):] {
		s.m.kernelLine(KernelLine{Time: l.Time, Text: l.Text})
	}
	s.seen = len(lines)
}

func (s *stepper) inject(f sim.Fault) {
	s.t.Helper()
	if err := s.b.Inject(f); err != nil {
		s.t.Fatal(err)
	}
	s.step()
}

func (s *stepper) health(i int) gpuView {
	s.t.Helper()
	for _, g := range s.m.Health() {
		if g.Index == i {
			return gpuView{g.Health, g.Action}
		}
	}
	s.t.Fatalf("no GPU %d", i)
	return gpuView{}
}

// monitor is what a test asserts of one GPU's state.
type gpuView struct {
	health health.Health
	action fault.Action
}

func TestARecoveryTheMonitorSeesMakesTheGPUHealthyAfterItsCheck(t *testing.T) {
	reset := sim.Fault{Type: sim.FaultGPUReset, GPU: 3}
	reboot := sim.Fault{Type: sim.FaultNodeReboot}
	resetThenECC := sim.Fault{Type: sim.FaultGPUReset, GPU: 3} // and new errors before the poll (below)
	cases := []struct {
		name      string
		fault     sim.Fault
		recovery  *sim.Fault // nil: none carried out
		bootID    bool
		want      health.Health
		recovered bool // OnRecovered called
	}{
		{"a double-bit ECC error (XID 48) clears once a reset restarts the volatile counters",
			sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 48}, &reset, false, health.Healthy, true},
		{"a pending row remap clears once a reset carries it out",
			sim.Fault{Type: sim.FaultRowRemapPending, GPU: 3}, &reset, false, health.Healthy, true},
		{"the driver asking for a reset (XID 154) clears once its recovery action is back to none",
			sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 154}, &reset, false, health.Healthy, true},
		{"uncorrected ECC errors beyond containment (two since the reset) with no reset stay unhealthy",
			sim.Fault{Type: sim.FaultECCUncorrected, GPU: 3, Count: 2}, nil, false, health.Unhealthy, false},
		{"a failed row remap persists through a reset, which leaves no trace: the GPU stays unhealthy",
			sim.Fault{Type: sim.FaultRowRemapFailure, GPU: 3}, &reset, false, health.Unhealthy, false},
		{"a pending row remap with new uncorrected errors after the reset fails its check",
			sim.Fault{Type: sim.FaultRowRemapPending, GPU: 3}, &resetThenECC, false, health.Unhealthy, true},
		{"a GPU that fell off the bus (XID 79) answers after a reset but needs a reboot, which a reset does not cover",
			sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 79}, &reset, false, health.Unhealthy, true},
		{"a GPU that fell off the bus clears after a reboot seen by its new boot ID",
			sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 79}, &reboot, true, health.Healthy, true},
		{"a reboot without a boot ID to read is still seen on a GPU that answers again, as a reset",
			sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 48}, &reboot, false, health.Healthy, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStepper(t, tc.bootID)
			s.inject(tc.fault)
			s.step() // a second poll: nothing new, the GPU stays as the fault left it
			if got := s.health(3); got.health != health.Unhealthy {
				t.Fatalf("after the fault GPU 3 is %s (%s), want unhealthy", got.health, got.action)
			}
			if tc.recovery != nil {
				if err := s.b.Inject(*tc.recovery); err != nil {
					t.Fatal(err)
				}
				if tc.recovery == &resetThenECC { // between the reset and the poll
					if err := s.b.Inject(sim.Fault{Type: sim.FaultECCUncorrected, GPU: 3, Count: 2}); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.step()
			if got := s.health(3); got.health != tc.want {
				t.Fatalf("after the recovery GPU 3 is %s (%s), want %s; findings %+v", got.health, got.action, tc.want, s.m.Findings())
			}
			if got := len(s.recs) > 0; got != tc.recovered {
				t.Errorf("OnRecovered called: %v, want %v (%v)", got, tc.recovered, s.recs)
			}
			for i := range 8 {
				if i != 3 && s.health(i).health != health.Healthy {
					t.Errorf("GPU %d is %s: only GPU 3 had a fault", i, s.health(i).health)
				}
			}
		})
	}
}

func TestOnlyWhatAResetLeavesBehindCountsAsOne(t *testing.T) {
	base := gpu.Device{UUID: "GPU-a", ECC: gpu.ECC{VolatileUncorrected: 2, VolatileCorrected: 5},
		RowRemap: gpu.RowRemap{Pending: true}, RecoveryAction: gpu.RecoveryGPUReset}
	lostDev := base
	lostDev.Errors = map[gpu.Field]gpu.FieldError{gpu.FieldDevice: {Message: "GPU is lost", Lost: true}}
	with := func(f func(d *gpu.Device)) gpu.Device {
		d := base
		d.Errors = nil
		f(&d)
		return d
	}
	cases := []struct {
		name     string
		was, now gpu.Device
		reset    bool
	}{
		{"the same reading twice is no reset", base, base, false},
		{"a GPU that was lost and answers again was reset", lostDev, base, true},
		{"a GPU lost in both readings was not seen to recover", lostDev, lostDev, false},
		{"a GPU that is lost now was not reset", base, lostDev, false},
		{"volatile uncorrected errors going down mean the counters restarted", base, with(func(d *gpu.Device) { d.ECC.VolatileUncorrected = 0 }), true},
		{"volatile corrected errors going down mean the counters restarted", base, with(func(d *gpu.Device) { d.ECC.VolatileCorrected = 1 }), true},
		{"volatile counters that grew mean no reset", base, with(func(d *gpu.Device) { d.ECC.VolatileUncorrected = 9 }), false},
		{"counters that could not be read now prove nothing", base, with(func(d *gpu.Device) {
			d.ECC.VolatileUncorrected = 0
			d.Errors = map[gpu.Field]gpu.FieldError{gpu.FieldECCErrors: {Message: "not supported"}}
		}), false},
		{"a pending row remap carried out means a reset", base, with(func(d *gpu.Device) { d.RowRemap.Pending = false }), true},
		{"the driver's recovery action back to none means the recovery was done", base, with(func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryNone }), true},
		{"a recovery action that only changed is no recovery", base, with(func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryNodeReboot }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := resetTrace(&tc.was, &tc.now)
			if (got != "") != tc.reset {
				t.Fatalf("resetTrace = %q, want a reset: %v", got, tc.reset)
			}
		})
	}
}

func TestTheAgentsCheckAndTheMonitorsAreOne(t *testing.T) {
	// The agent records its own step (Recovered, then Check): the same check as a poll's.
	s := newStepper(t, false)
	s.inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 48})
	pre, err := s.b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	uuid := pre.Devices[3].UUID
	if err := s.b.ResetGPU(uuid); err != nil {
		t.Fatal(err)
	}
	if err := s.m.Recovered([]string{uuid}, health.RecoveryGPUReset); err != nil {
		t.Fatal(err)
	}
	res, err := s.m.Check(context.Background(), pre, []string{uuid})
	if err != nil {
		t.Fatal(err)
	}
	if res != (CheckResult{Healthy: 1}) || s.health(3).health != health.Healthy {
		t.Fatalf("check %v, GPU 3 %s; want 1 healthy", res, s.health(3).health)
	}
	s.step() // the poll sees the same reset on a GPU already healthy: nothing more
	if len(s.recs) != 0 || s.health(3).health != health.Healthy {
		t.Fatalf("the poll after the agent's check: recoveries %v, GPU 3 %s", s.recs, s.health(3).health)
	}
	if err := s.m.Recovered([]string{"GPU-none"}, health.RecoveryGPUReset); err == nil {
		t.Fatal("a recovery of a GPU the node does not have was accepted")
	}
}
