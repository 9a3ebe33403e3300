package health

import (
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/rules"
)

// catalog stands in for internal/xid's lookup: it knows 13, 48 and 79.
func catalog(code int) (fault.Component, fault.Severity, fault.Action, bool) {
	switch code {
	case 13:
		return fault.ComponentApplication, fault.SeverityWarning, fault.ActionRestartApp, true
	case 48:
		return fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU, true
	case 79:
		return fault.ComponentGPU, fault.SeverityFatal, fault.ActionRebootNode, true
	}
	return "", "", "", false
}

func event(kind gpu.EventKind) gpu.Event {
	return gpu.Event{Time: t0, Kind: kind, Index: 3, UUID: "GPU-3", GPUInstance: -1, ComputeInstance: -1}
}

func TestFromEvent(t *testing.T) {
	with := func(ev gpu.Event, f func(*gpu.Event)) gpu.Event { f(&ev); return ev }
	tests := []struct {
		name   string
		ev     gpu.Event
		lookup XIDLookup
		want   string // "cause component/severity/action"
		inText string // in the summary and the evidence
	}{
		{"an XID the catalog knows takes the catalog's classification",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID, e.Message = 79, "GPU has fallen off the bus." }), catalog,
			"xid-79 gpu/fatal/reboot-node", "GPU has fallen off the bus."},
		{"an application XID restarts the application",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID = 13 }), catalog,
			"xid-13 application/warning/restart-app", "XID 13"},
		{"an XID the catalog does not know is a warning to investigate",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID = 999 }), catalog,
			"xid-999 gpu/warning/none", "not in the XID catalog"},
		{"an XID the catalog does not know takes the catalog's default for unknown codes",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID = 999 }),
			func(int) (fault.Component, fault.Severity, fault.Action, bool) {
				return fault.ComponentDriver, fault.SeverityCritical, fault.ActionReloadDriver, false
			},
			"xid-999 driver/critical/reload-driver", "not in the XID catalog"},
		{"an XID without a catalog is treated as unknown",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID = 48 }), nil,
			"xid-48 gpu/warning/none", "not in the XID catalog"},
		{"an XID attributed to a MIG instance names the instance in the evidence",
			with(event(gpu.EventXID), func(e *gpu.Event) { e.XID, e.GPUInstance, e.ComputeInstance = 13, 1, 0 }), catalog,
			"xid-13 application/warning/restart-app", "gpuInstance 1 computeInstance 0"},
		{"a single-bit ECC event is information", event(gpu.EventECCSingleBit), catalog,
			"ecc-single-bit memory/info/none", "corrected"},
		{"a double-bit ECC event restarts the application (contained until the counter says otherwise) and shares the counter's cause", event(gpu.EventECCDoubleBit), catalog,
			"ecc-uncorrected memory/warning/restart-app", "double-bit"},
		{"a recovery-action event asking for a GPU reset requires a reset",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.RecoveryAction, e.Data = gpu.RecoveryGPUReset, 1 }), catalog,
			"recovery-action gpu/critical/reset-gpu", "recoveryAction gpu-reset"},
		{"a recovery-action event asking for a node reboot requires a reboot",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.RecoveryAction = gpu.RecoveryNodeReboot }), catalog,
			"recovery-action gpu/critical/reboot-node", "node reboot"},
		{"a recovery-action event asking to drain P2P requires draining",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.RecoveryAction = gpu.RecoveryDrainP2P }), catalog,
			"recovery-action interconnect/critical/drain-p2p", "peer-to-peer"},
		{"a recovery-action event asking to drain and reset requires a reset",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.RecoveryAction = gpu.RecoveryDrainAndReset }), catalog,
			"recovery-action gpu/critical/reset-gpu", "then a GPU reset"},
		{"a recovery-action event carrying only the code is read from the code",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.Data = 2 }), catalog,
			"recovery-action gpu/critical/reboot-node", "data 0x2"},
		{"a recovery-action event with a code unknown here is treated as a node reboot",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.Data = 5 }), catalog,
			"recovery-action gpu/critical/reboot-node", `"0x5"`},
		{"a recovery-action event back to none is information",
			with(event(gpu.EventRecoveryAction), func(e *gpu.Event) { e.RecoveryAction = gpu.RecoveryNone }), catalog,
			"recovery-action gpu/info/none", "back to none"},
		{"a GPU-unavailable event is fatal and requires a node reboot", event(gpu.EventGPUUnavailable), catalog,
			"gpu-unavailable gpu/fatal/reboot-node", "unavailable"},
		{"a GPU-lost event is fatal and requires a node reboot",
			with(event(gpu.EventGPULost), func(e *gpu.Event) { e.Message = "ERROR_GPU_IS_LOST" }), catalog,
			"gpu-lost gpu/fatal/reboot-node", "ERROR_GPU_IS_LOST"},
		{"an event of a kind unknown here warns", event("power-source-change"), catalog,
			"event-power-source-change gpu/warning/none", "power-source-change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := FromEvent(tt.ev, tt.lookup)
			got := f.Cause + " " + string(f.Component) + "/" + string(f.Severity) + "/" + string(f.Action)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			text := f.Summary + " | " + strings.Join(f.Evidence, " | ")
			if !strings.Contains(text, tt.inText) {
				t.Errorf("summary and evidence %q do not say %q", text, tt.inText)
			}
			if f.GPU != "GPU-3" || f.GPUIndex != 3 || f.Source != SourceNVMLEvent || f.Count != 1 || !f.FirstSeen.Equal(t0) || !f.LastSeen.Equal(t0) {
				t.Errorf("finding %+v: want GPU-3 index 3, nvml-event, count 1, seen at t0", f)
			}
			if len(f.Evidence) != 1 || !strings.HasPrefix(f.Evidence[0], "2025-05-18T19:02:39Z event "+string(tt.ev.Kind)) {
				t.Errorf("evidence %q, want one stamped line naming the event", f.Evidence)
			}
		})
	}
}

func TestDoubleBitEventAndCounterAreOneFinding(t *testing.T) {
	a := NewAggregator(0)
	a.Add(FromEvent(event(gpu.EventECCDoubleBit), catalog))
	cur := snapshotAt(t0, func(d *gpu.Device) { d.Index, d.UUID, d.ECC.VolatileUncorrected = 3, "GPU-3", 1 })
	for _, f := range FromSnapshot(nil, cur, rules.DefaultThresholds()) {
		a.Add(f)
	}
	f, ok := a.Get("GPU-3", CauseECCUncorrected)
	if !ok || f.Count != 2 || f.Source != SourceNVMLEvent || len(f.Evidence) != 2 {
		t.Errorf("finding %+v, want one finding seen twice with both evidence lines", f)
	}
}
