package health

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

var year = 365 * 24 * time.Hour

func find(cause string, s fault.Severity, a fault.Action) Finding {
	return Finding{GPU: "GPU-0", Cause: cause, Severity: s, Action: a, LastSeen: t0.Add(150 * time.Minute)}
}

var (
	info      = find("ecc-single-bit", fault.SeverityInfo, fault.ActionNone)
	warn      = find("clock-hw-thermal-slowdown", fault.SeverityWarning, fault.ActionNone)
	critReset = find("xid-48", fault.SeverityCritical, fault.ActionResetGPU)
	remap     = find(CauseRowRemapPending, fault.SeverityCritical, fault.ActionResetGPU)
	rebootF   = find("xid-79", fault.SeverityFatal, fault.ActionRebootNode)
	serviceF  = find(CauseRowRemapFailure, fault.SeverityFatal, fault.ActionService)
)

// st builds a state: health, action, awaiting, causes.
func st(h Health, a fault.Action, awaiting bool, causes ...string) State {
	s := State{Health: h, Action: a, Since: t0, AwaitingCheck: awaiting, Causes: causes}
	if awaiting {
		s.Recovery, s.RecoveredAt = RecoveryNodeReboot, t0.Add(2*time.Hour)
	}
	return s
}

func describe(s State) string {
	return fmt.Sprintf("%s action=%s awaiting=%v causes=[%s]", s.Health, s.Action, s.AwaitingCheck, strings.Join(s.Causes, ","))
}

func TestNext(t *testing.T) {
	now := t0.Add(3 * time.Hour)
	healthy := NewState(t0)
	degraded := st(Degraded, fault.ActionNone, false, warn.Cause)
	unhealthy := st(Unhealthy, fault.ActionResetGPU, false, critReset.Cause)
	awaiting := st(Unhealthy, fault.ActionResetGPU, true, critReset.Cause)
	tests := []struct {
		name       string
		from       State
		in         Input
		want       string
		sinceMoves bool
	}{
		// Healthy
		{"an info finding leaves a healthy GPU healthy", healthy, info, "healthy action=none awaiting=false causes=[]", false},
		{"a warning degrades a healthy GPU", healthy, warn, "degraded action=none awaiting=false causes=[clock-hw-thermal-slowdown]", true},
		{"a critical finding makes a healthy GPU unhealthy with its action", healthy, critReset, "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", true},
		{"a pending row remap means a GPU reset is required", healthy, remap, "unhealthy action=reset-gpu awaiting=false causes=[row-remap-pending]", true},
		{"a warning that requires a GPU reset makes the GPU unhealthy",
			healthy, find("w", fault.SeverityWarning, fault.ActionResetGPU), "unhealthy action=reset-gpu awaiting=false causes=[w]", true},
		{"a fatal finding that needs service makes the GPU unhealthy", healthy, serviceF, "unhealthy action=service awaiting=false causes=[row-remap-failure]", true},
		{"a recovery on a healthy GPU leaves nothing to verify", healthy, Recovered{Kind: RecoveryNodeReboot}, "healthy action=none awaiting=false causes=[]", false},
		{"a passing check leaves a healthy GPU healthy", healthy, CheckPassed{}, "healthy action=none awaiting=false causes=[]", false},
		{"a failing check makes a healthy GPU unhealthy with the check's action",
			healthy, CheckFailed{Check: "hardware.ecc-errors", Action: fault.ActionResetGPU}, "unhealthy action=reset-gpu awaiting=false causes=[check-failed/hardware.ecc-errors]", true},
		{"the zero state is healthy and a warning degrades it", State{}, warn, "degraded action=none awaiting=false causes=[clock-hw-thermal-slowdown]", true},
		// Degraded
		{"another warning keeps a degraded GPU degraded and adds its cause",
			degraded, find("pcie-link-gen", fault.SeverityWarning, fault.ActionNone), "degraded action=none awaiting=false causes=[clock-hw-thermal-slowdown,pcie-link-gen]", false},
		{"a warning asking to drain peer-to-peer work is advisory while degraded",
			degraded, find("xid-74", fault.SeverityWarning, fault.ActionDrainP2P), "degraded action=drain-p2p awaiting=false causes=[clock-hw-thermal-slowdown,xid-74]", false},
		{"a critical finding makes a degraded GPU unhealthy", degraded, rebootF, "unhealthy action=reboot-node awaiting=false causes=[clock-hw-thermal-slowdown,xid-79]", true},
		{"a passing check returns a degraded GPU to healthy and clears its causes", degraded, CheckPassed{}, "healthy action=none awaiting=false causes=[]", true},
		{"a recovery on a degraded GPU awaits the check", degraded, Recovered{Kind: RecoveryGPUReset}, "degraded action=none awaiting=true causes=[clock-hw-thermal-slowdown]", false},
		{"a failing check makes a degraded GPU unhealthy", degraded, CheckFailed{}, "unhealthy action=none awaiting=false causes=[check-failed,clock-hw-thermal-slowdown]", true},
		// Unhealthy
		{"a more disruptive finding escalates the required action", unhealthy, rebootF, "unhealthy action=reboot-node awaiting=false causes=[xid-48,xid-79]", false},
		{"a less disruptive finding never lowers the required action",
			unhealthy, find("xid-13", fault.SeverityCritical, fault.ActionRestartApp), "unhealthy action=reset-gpu awaiting=false causes=[xid-13,xid-48]", false},
		{"a warning adds its cause to an unhealthy GPU", unhealthy, warn, "unhealthy action=reset-gpu awaiting=false causes=[clock-hw-thermal-slowdown,xid-48]", false},
		{"a repeat of a known cause changes nothing", unhealthy, critReset, "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", false},
		{"a passing check without a recovery does not clear an unhealthy GPU", unhealthy, CheckPassed{}, "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", false},
		{"a GPU reset when a reset is required awaits the check", unhealthy, Recovered{Kind: RecoveryGPUReset}, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
		{"a node reboot covers a required GPU reset", unhealthy, Recovered{Kind: RecoveryNodeReboot}, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
		{"a driver reload covers a required GPU reset", unhealthy, Recovered{Kind: RecoveryDriverReload}, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
		{"a GPU reset does not cover a required node reboot",
			st(Unhealthy, fault.ActionRebootNode, false, "xid-79"), Recovered{Kind: RecoveryGPUReset}, "unhealthy action=reboot-node awaiting=false causes=[xid-79]", false},
		{"a node reboot does not cover required service",
			st(Unhealthy, fault.ActionService, false, "row-remap-failure"), Recovered{Kind: RecoveryNodeReboot}, "unhealthy action=service awaiting=false causes=[row-remap-failure]", false},
		{"a person's repair covers required service",
			st(Unhealthy, fault.ActionService, false, "row-remap-failure"), Recovered{Kind: RecoveryServiced}, "unhealthy action=service awaiting=true causes=[row-remap-failure]", false},
		{"a recovery of an unknown kind changes nothing", unhealthy, Recovered{Kind: "prayer"}, "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", false},
		{"a failing check keeps an unhealthy GPU unhealthy and adds its cause", unhealthy, CheckFailed{}, "unhealthy action=reset-gpu awaiting=false causes=[check-failed,xid-48]", false},
		{"an input of an unknown type changes nothing", unhealthy, &CheckPassed{}, "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", false},
		// Unhealthy, a recovery done, awaiting the check
		{"a passing check after a recovery returns the GPU to healthy and clears its causes", awaiting, CheckPassed{}, "healthy action=none awaiting=false causes=[]", true},
		{"a failing check after a recovery keeps the GPU unhealthy and no longer awaiting", awaiting, CheckFailed{Check: "hardware.row-remap"},
			"unhealthy action=reset-gpu awaiting=false causes=[check-failed/hardware.row-remap,xid-48]", false},
		{"a fresh critical finding after a recovery means the recovery did not hold",
			awaiting, find("xid-48", fault.SeverityCritical, fault.ActionResetGPU), "unhealthy action=reset-gpu awaiting=false causes=[xid-48]", false},
		{"a pending row remap still shown after a reset means the reset did not clear it",
			awaiting, remap, "unhealthy action=reset-gpu awaiting=false causes=[row-remap-pending,xid-48]", false},
		{"a stale finding from before the recovery, which the recovery covers, changes nothing",
			awaiting, Finding{Cause: "xid-48", Severity: fault.SeverityCritical, Action: fault.ActionResetGPU, LastSeen: t0}, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
		{"a stale finding from before the recovery that needs more than the recovery did still counts",
			awaiting, Finding{Cause: "row-remap-failure", Severity: fault.SeverityFatal, Action: fault.ActionService, LastSeen: t0},
			"unhealthy action=service awaiting=false causes=[row-remap-failure,xid-48]", false},
		{"a warning after a recovery keeps the GPU awaiting the check", awaiting, warn, "unhealthy action=reset-gpu awaiting=true causes=[clock-hw-thermal-slowdown,xid-48]", false},
		{"an info finding after a recovery changes nothing", awaiting, info, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
		{"a second recovery keeps the GPU awaiting the check", awaiting, Recovered{Kind: RecoveryGPUReset}, "unhealthy action=reset-gpu awaiting=true causes=[xid-48]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Next(tt.from, tt.in, now)
			if d := describe(got); d != tt.want {
				t.Errorf("Next(%s, %T)\n got %s\nwant %s", describe(tt.from), tt.in, d, tt.want)
			}
			if moved := got.Since.Equal(now); moved != tt.sinceMoves {
				t.Errorf("Since = %v, moved %v, want moved %v (Since marks a change of health)", got.Since, moved, tt.sinceMoves)
			}
		})
	}
}

func TestNextRecordsTheRecovery(t *testing.T) {
	now := t0.Add(time.Hour)
	got := Next(st(Unhealthy, fault.ActionResetGPU, false, "xid-48"), Recovered{Kind: RecoveryGPUReset}, now)
	if got.Recovery != RecoveryGPUReset || !got.RecoveredAt.Equal(now) {
		t.Errorf("recovery %q at %v, want gpu-reset at %v", got.Recovery, got.RecoveredAt, now)
	}
}

func TestTimeAloneNeverClearsAFault(t *testing.T) {
	for _, from := range []State{
		st(Degraded, fault.ActionNone, false, "w"),
		st(Unhealthy, fault.ActionResetGPU, false, "xid-48"),
		st(Unhealthy, fault.ActionService, true, "row-remap-failure"),
	} {
		t.Run(string(from.Health)+" stays "+string(from.Health)+" a year later", func(t *testing.T) {
			later := t0.Add(year)
			for _, in := range []Input{info, Recovered{}} {
				if got := Next(from, in, later); got.Health != from.Health || got.Action != from.Action || !slices.Equal(got.Causes, from.Causes) {
					t.Errorf("a year later, %T turned %s into %s", in, describe(from), describe(got))
				}
			}
		})
	}
}

func TestNextDoesNotChangeTheCallersCauses(t *testing.T) {
	causes := make([]string, 1, 8)
	causes[0] = "b"
	from := State{Health: Degraded, Action: fault.ActionNone, Causes: causes}
	first := Next(from, find("a", fault.SeverityWarning, fault.ActionNone), t0)
	second := Next(from, find("c", fault.SeverityWarning, fault.ActionNone), t0)
	if strings.Join(first.Causes, ",") != "a,b" || strings.Join(second.Causes, ",") != "b,c" || strings.Join(from.Causes, ",") != "b" {
		t.Errorf("first %v second %v from %v: each Next must leave the others alone", first.Causes, second.Causes, from.Causes)
	}
}

func TestCausesAreBounded(t *testing.T) {
	s := NewState(t0)
	for i := range MaxCauses + 10 {
		s = Next(s, find(fmt.Sprintf("cause-%03d", i), fault.SeverityWarning, fault.ActionNone), t0)
	}
	if len(s.Causes) != MaxCauses || s.MoreCauses != 10 {
		t.Errorf("%d causes, %d more; want %d and 10", len(s.Causes), s.MoreCauses, MaxCauses)
	}
	if s = Next(s, CheckPassed{}, t0); len(s.Causes) != 0 || s.MoreCauses != 0 {
		t.Errorf("after a passing check %d causes, %d more; want none", len(s.Causes), s.MoreCauses)
	}
}
