package health

import (
	"context"
	"testing"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/rules"
)

// The simulated GPUs are the contract tests and demos rely on: a healthy preset has no
// findings, and each injected fault produces the finding this package promises.
func TestFromSnapshotOnSimulatedGPUs(t *testing.T) {
	tests := []struct {
		name  string
		fault sim.Fault
		want  string
	}{
		{"a healthy simulated H100 node has no findings", sim.Fault{}, ""},
		{"a simulated uncorrected ECC error requires a reset", sim.Fault{GPU: 2, Type: sim.FaultECCUncorrected, Count: 2},
			"2 ecc-uncorrected memory/critical/reset-gpu; 2 ecc-uncorrected-aggregate memory/info/none"},
		{"a simulated pending row remap requires a reset", sim.Fault{GPU: 1, Type: sim.FaultRowRemapPending},
			"1 row-remap-pending memory/critical/reset-gpu"},
		{"a simulated NVLink down requires draining", sim.Fault{GPU: 3, Type: sim.FaultNVLinkDown, Links: []int{4}},
			"3 nvlink-down-4 interconnect/critical/drain-p2p"},
		{"a simulated PCIe width downgrade requires a reset", sim.Fault{GPU: 0, Type: sim.FaultPCIeDowngrade, LinkWidth: 8},
			"0 pcie-link-width pcie/critical/reset-gpu"},
		{"a simulated thermal throttle warns", sim.Fault{GPU: 5, Type: sim.FaultThermalThrottle},
			"5 temperature-high gpu/warning/none; 5 clock-hw-slowdown gpu/warning/none; 5 clock-hw-thermal-slowdown gpu/warning/none"},
		{"a simulated recovery action requires what it says", sim.Fault{GPU: 6, Type: sim.FaultRecoveryAction, Action: gpu.RecoveryNodeReboot},
			"6 recovery-action gpu/critical/reboot-node"},
		{"a simulated lost GPU is lost", sim.Fault{GPU: 7, Type: sim.FaultGPULost}, "7 gpu-lost gpu/fatal/reboot-node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := sim.Load("h100x8")
			if err != nil {
				t.Fatal(err)
			}
			prev, err := b.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.fault.Type != "" {
				if err := b.Inject(tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			cur, err := b.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r := render(FromSnapshot(prev, cur, rules.DefaultThresholds())); r != tt.want {
				t.Errorf("findings\n got %q\nwant %q", r, tt.want)
			}
			if r := render(FromSnapshot(nil, prev, rules.DefaultThresholds())); r != "" {
				t.Errorf("the healthy first snapshot has findings %q", r)
			}
		})
	}
}

func TestFindingClassification(t *testing.T) {
	tests := []struct {
		name                string
		sev                 fault.Severity
		act                 fault.Action
		unhealthy, degrades bool
	}{
		{"an info finding with no action neither degrades nor takes the GPU out", fault.SeverityInfo, fault.ActionNone, false, false},
		{"a warning degrades", fault.SeverityWarning, fault.ActionNone, false, true},
		{"an info finding asking to restart the app degrades", fault.SeverityInfo, fault.ActionRestartApp, false, true},
		{"a warning asking to drain peer-to-peer work degrades", fault.SeverityWarning, fault.ActionDrainP2P, false, true},
		{"a warning that requires a GPU reset takes the GPU out", fault.SeverityWarning, fault.ActionResetGPU, true, false},
		{"a critical finding takes the GPU out", fault.SeverityCritical, fault.ActionNone, true, false},
		{"a fatal finding takes the GPU out", fault.SeverityFatal, fault.ActionService, true, false},
		{"an unknown severity degrades like a warning", "bogus", fault.ActionNone, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Finding{Severity: tt.sev, Action: tt.act}
			if f.Unhealthy() != tt.unhealthy || f.Degrades() != tt.degrades {
				t.Errorf("Unhealthy %v Degrades %v, want %v %v", f.Unhealthy(), f.Degrades(), tt.unhealthy, tt.degrades)
			}
		})
	}
}
