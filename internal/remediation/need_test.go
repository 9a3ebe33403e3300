package remediation

import (
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

func TestAssess(t *testing.T) {
	remediateDegraded := DefaultPolicy()
	remediateDegraded.RemediateDegraded = true
	tests := []struct {
		name      string
		facts     Facts
		policy    Policy
		remediate bool
		start     Step
		gpus      []int
		nodeWide  bool
		unusable  bool
		cause     string
	}{
		{"a healthy node needs nothing", node(), DefaultPolicy(), false, "", nil, false, false, ""},
		{"a degraded GPU with warnings only needs nothing", node(degraded(1, fault.ActionNone, "clock-hw-slowdown")), remediateDegraded, false, "", nil, false, false, ""},
		{"an advisory restart-app needs nothing by default", node(degraded(1, fault.ActionRestartApp, "xid-13")), DefaultPolicy(), false, "", nil, false, false, ""},
		{"an advisory restart-app needs restart-app when the policy says so", node(degraded(1, fault.ActionRestartApp, "xid-13")), remediateDegraded, true, StepRestartApp, []int{1}, false, false, "GPU 1: xid-13"},
		{"an unhealthy GPU needs at least a reset", node(unhealthy(2, fault.ActionRestartApp, "xid-43")), DefaultPolicy(), true, StepResetGPU, []int{2}, false, false, "xid-43"},
		{"the worst action across GPUs decides the step and every faulty GPU is named",
			node(unhealthy(2, fault.ActionResetGPU, "xid-95"), unhealthy(5, fault.ActionReloadDriver, "xid-119")), DefaultPolicy(), true, StepReloadDriver, []int{2, 5}, false, false, "GPU 5: xid-119"},
		{"a lost GPU makes the node unusable and needs a reboot", node(unhealthy(7, fault.ActionRebootNode, "gpu-lost")), DefaultPolicy(), true, StepRebootNode, []int{7}, false, true, "gpu-lost"},
		{"an unavailable GPU makes the node unusable", node(unhealthy(0, fault.ActionRebootNode, "gpu-unavailable")), DefaultPolicy(), true, StepRebootNode, []int{0}, false, true, "gpu-unavailable"},
		{"service on any GPU needs maintenance", node(unhealthy(0, fault.ActionService, "row-remap-failure"), unhealthy(1, fault.ActionResetGPU, "xid-95")), DefaultPolicy(), true, StepMaintenance, []int{0, 1}, false, false, "row-remap-failure"},
		{"a fatal node fault is node-wide and unusable", node(nodeFault(CauseDriverNotLoaded, fault.ActionReloadDriver, true)), DefaultPolicy(), true, StepReloadDriver, nil, true, true, "node: driver-not-loaded"},
		{"a node fault without an action and not fatal needs nothing", node(nodeFault("clock-skew", fault.ActionNone, false)), DefaultPolicy(), false, "", nil, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Assess(tt.facts, tt.policy)
			if n.Remediate != tt.remediate || n.Start != tt.start || !slices.Equal(n.GPUs, tt.gpus) || n.NodeWide != tt.nodeWide || n.Unusable != tt.unusable {
				t.Errorf("need %+v, want remediate %v start %q GPUs %v node-wide %v unusable %v", n, tt.remediate, tt.start, tt.gpus, tt.nodeWide, tt.unusable)
			}
			if tt.cause != "" && !hasCause(n, tt.cause) {
				t.Errorf("causes %v lack %q", n.Causes, tt.cause)
			}
			if n.Remediate && !n.Since.Equal(t0) {
				t.Errorf("since %s, want %s", n.Since, t0)
			}
		})
	}
}

func TestAssessTakesTheEarliestFault(t *testing.T) {
	f := node(unhealthy(1, fault.ActionResetGPU, "xid-95"), unhealthy(2, fault.ActionResetGPU, "xid-95"))
	f.GPUs[2].Since = t0.Add(-time.Hour)
	if n := Assess(f, DefaultPolicy()); !n.Since.Equal(t0.Add(-time.Hour)) {
		t.Errorf("since %s, want the earlier GPU's", n.Since)
	}
}
