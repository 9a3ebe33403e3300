package remediation

import (
	"testing"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

func TestStepFor(t *testing.T) {
	tests := []struct {
		name   string
		action fault.Action
		want   Step
	}{
		{"no action starts at restart-app", fault.ActionNone, StepRestartApp},
		{"restart-app starts at restart-app", fault.ActionRestartApp, StepRestartApp},
		{"drain-p2p starts at restart-app, evicting the GPU's pods", fault.ActionDrainP2P, StepRestartApp},
		{"reset-gpu starts at reset-gpu, not restart-app", fault.ActionResetGPU, StepResetGPU},
		{"reload-driver starts at reload-driver", fault.ActionReloadDriver, StepReloadDriver},
		{"reboot-node starts at reboot-node", fault.ActionRebootNode, StepRebootNode},
		{"service goes straight to maintenance", fault.ActionService, StepMaintenance},
		{"an unknown action goes to a person", fault.Action("melt"), StepMaintenance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StepFor(tt.action); got != tt.want {
				t.Errorf("StepFor(%q) = %q, want %q", tt.action, got, tt.want)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	tests := []struct {
		name        string
		step        Step
		rank        int
		destructive bool
		perGPU      bool
		recovery    health.RecoveryKind
	}{
		{"restart-app is first, per GPU, and destroys nothing", StepRestartApp, 0, false, true, ""},
		{"reset-gpu is per GPU, destructive and counts as a GPU reset", StepResetGPU, 1, true, true, health.RecoveryGPUReset},
		{"reload-driver is node-wide and counts as a driver reload", StepReloadDriver, 2, true, false, health.RecoveryDriverReload},
		{"reboot-node counts as a node reboot", StepRebootNode, 3, true, false, health.RecoveryNodeReboot},
		{"power-cycle counts as a node reboot", StepPowerCycle, 4, true, false, health.RecoveryNodeReboot},
		{"maintenance ends the ladder and is no step", StepMaintenance, 5, false, false, ""},
		{"an unknown step ranks below everything", Step("dance"), -1, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.step.Rank() != tt.rank || tt.step.Destructive() != tt.destructive || tt.step.PerGPU() != tt.perGPU || tt.step.Recovery() != tt.recovery {
				t.Errorf("%s: rank %d destructive %v perGPU %v recovery %q", tt.step, tt.step.Rank(), tt.step.Destructive(), tt.step.PerGPU(), tt.step.Recovery())
			}
		})
	}
}

// The reconciler converts with v1alpha1.Phase(p): the values must be the API's.
func TestPhasesAreTheAPIPhases(t *testing.T) {
	pairs := []struct {
		ours Phase
		api  v1alpha1.Phase
	}{
		{PhaseSuspect, v1alpha1.PhaseSuspect}, {PhaseQuarantined, v1alpha1.PhaseQuarantined},
		{PhaseRecovering, v1alpha1.PhaseRecovering}, {PhaseAccepting, v1alpha1.PhaseAccepting},
		{PhaseMaintenance, v1alpha1.PhaseMaintenance},
	}
	for _, p := range pairs {
		if string(p.ours) != string(p.api) {
			t.Errorf("phase %q is %q in the API", p.ours, p.api)
		}
	}
	if OwnerRemediation != v1alpha1.HoldOwnerRemediation {
		t.Errorf("owner %q is %q in the API", OwnerRemediation, v1alpha1.HoldOwnerRemediation)
	}
}

func TestWithDefaults(t *testing.T) {
	p := Policy{ResetGPU: StepPolicy{MaxAttempts: 5}, Budget: Budget{MaxHeld: 3}}.WithDefaults()
	d := DefaultPolicy()
	if p.ResetGPU.MaxAttempts != 5 || p.ResetGPU.Timeout != d.ResetGPU.Timeout {
		t.Errorf("reset-gpu %+v: a set field must stay and an unset one take the default", p.ResetGPU)
	}
	if p.Budget.MaxHeld != 3 || p.Budget.MaxHeldPercent != 0 {
		t.Errorf("budget %+v: a number alone must not be joined by the default percentage", p.Budget)
	}
	if !p.Step(StepPowerCycle).Disabled {
		t.Error("power-cycle without a configured hook must be disabled")
	}
	if p.longestWindow() != d.RebootNode.Window {
		t.Errorf("longest window %s", p.longestWindow())
	}
}

func TestUUIDs(t *testing.T) {
	f := node()
	if got := f.UUIDs([]int{3, 0, 42}); len(got) != 2 || got[0] != "GPU-3" || got[1] != "GPU-0" {
		t.Errorf("UUIDs = %v, want [GPU-3 GPU-0] (an unknown index left out)", got)
	}
	if got := f.UUIDs(nil); got != nil {
		t.Errorf("UUIDs(nil) = %v, want nil (the whole node)", got)
	}
}
