package health

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// links judges the PCIe link and the NVLinks.
func (c snapCtx) links(out []Finding) []Finding {
	if c.ok(gpu.FieldPCIeReplay) && c.prevOK(gpu.FieldPCIeReplay) && c.interval > 0 {
		was, now := c.prev.PCI.ReplayCounter, c.d.PCI.ReplayCounter
		if n := growth(was, now); overRate(n, c.p.PCIeReplaysPerMinute, c.interval) {
			out = append(out, c.finding(fault.ComponentPCIe, fault.SeverityWarning, fault.ActionNone, CausePCIeReplayRate,
				fmt.Sprintf("%d PCIe replays in %s (threshold %d a minute): a marginal link", n, c.interval, c.p.PCIeReplaysPerMinute),
				fmt.Sprintf("pci.replayCounter %d -> %d in %s", was, now, c.interval)))
		}
	}
	if c.ok(gpu.FieldPCIeLink) {
		l := c.d.PCI
		link := fmt.Sprintf("pci link gen%d x%d, max gen%d x%d", l.LinkGen, l.LinkWidth, l.LinkGenMax, l.LinkWidthMax)
		if l.LinkWidthMax > 0 && l.LinkWidth < l.LinkWidthMax {
			out = append(out, c.finding(fault.ComponentPCIe, fault.SeverityCritical, fault.ActionResetGPU, CausePCIeLinkWidth,
				fmt.Sprintf("PCIe link x%d, below its x%d: a reset retrains it; a link that stays narrow needs reseating", l.LinkWidth, l.LinkWidthMax), link))
		}
		// An idle GPU trains its link down to save power: judge the generation only when
		// the GPU says it is not idle.
		if l.LinkGenMax > 0 && l.LinkGen < l.LinkGenMax && c.busy() {
			out = append(out, c.finding(fault.ComponentPCIe, fault.SeverityWarning, fault.ActionNone, CausePCIeLinkGen,
				fmt.Sprintf("PCIe link gen%d while busy, below its gen%d", l.LinkGen, l.LinkGenMax), link))
		}
	}
	if c.ok(gpu.FieldNVLink) {
		for _, l := range c.d.NVLinks {
			if !l.Active {
				out = append(out, c.finding(fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionDrainP2P, NVLinkDownCause(l.Link),
					fmt.Sprintf("NVLink %d down: drain peer-to-peer work", l.Link), fmt.Sprintf("nvlink %d active false", l.Link)))
			}
		}
	}
	return out
}

// busy reports whether the GPU's clock events are known and do not include gpu-idle.
func (c snapCtx) busy() bool {
	return c.ok(gpu.FieldClockEvents) && !slices.Contains(c.d.ClockEvents, gpu.ClockEventIdle)
}

// state judges clock events, the driver's recovery action and the fabric.
func (c snapCtx) state(out []Finding) []Finding {
	if c.ok(gpu.FieldClockEvents) {
		for _, e := range c.d.ClockEvents {
			if !e.Benign() {
				out = append(out, c.finding(fault.ComponentGPU, fault.SeverityWarning, fault.ActionNone, ClockEventCause(e),
					fmt.Sprintf("clocks reduced by %s: check cooling and power", e), "clockEvents "+string(e)))
			}
		}
	}
	if c.ok(gpu.FieldRecoveryAction) {
		if f, ok := recoveryFinding(c.d.UUID, c.d.Index, c.d.RecoveryAction, SourceCounter, c.t); ok {
			out = append(out, f)
		}
	}
	if c.ok(gpu.FieldFabric) {
		fb := c.d.Fabric
		switch {
		case fb.State == "" || fb.State == "not-supported":
		case fb.State != "completed":
			out = append(out, c.finding(fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionResetGPU, CauseFabric,
				fmt.Sprintf("NVSwitch fabric registration %s: CUDA cannot use the GPU", fb.State), fabricEvidence(fb)))
		case fb.Status != "" && fb.Status != "success":
			out = append(out, c.finding(fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionResetGPU, CauseFabric,
				"NVSwitch fabric registration failed: "+fb.Status, fabricEvidence(fb)))
		}
	}
	return out
}

func fabricEvidence(fb gpu.Fabric) string {
	return fmt.Sprintf("fabric state %q status %q clique %d cluster %s", fb.State, fb.Status, fb.CliqueID, fb.ClusterUUID)
}

// ClockEventCause is the cause of a non-benign clock event: "clock-hw-thermal-slowdown".
func ClockEventCause(e gpu.ClockEvent) string { return "clock-" + string(e) }

// recoveryRule is what one driver recovery action requires.
type recoveryRule struct {
	comp    fault.Component
	action  fault.Action
	summary string
}

var recoveryRules = map[gpu.RecoveryAction]recoveryRule{
	gpu.RecoveryGPUReset:      {fault.ComponentGPU, fault.ActionResetGPU, "the driver requires a GPU reset"},
	gpu.RecoveryNodeReboot:    {fault.ComponentGPU, fault.ActionRebootNode, "the driver requires a node reboot"},
	gpu.RecoveryDrainP2P:      {fault.ComponentInterconnect, fault.ActionDrainP2P, "the driver requires draining peer-to-peer work"},
	gpu.RecoveryDrainAndReset: {fault.ComponentGPU, fault.ActionResetGPU, "the driver requires draining peer-to-peer work, then a GPU reset"},
}

// recoveryFinding classifies the driver's recovery action; false for none. An action this
// package does not know is treated as a node reboot, the strongest automated step.
func recoveryFinding(uuid string, index int, ra gpu.RecoveryAction, src Source, t time.Time) (Finding, bool) {
	if ra == gpu.RecoveryNone || ra == "" {
		return Finding{}, false
	}
	r, known := recoveryRules[ra]
	if !known {
		r = recoveryRule{fault.ComponentGPU, fault.ActionRebootNode, fmt.Sprintf("the driver reports recovery action %q (unknown here): treated as a node reboot", ra)}
	}
	return newFinding(uuid, index, r.comp, fault.SeverityCritical, r.action, src, CauseRecoveryAction, r.summary, t,
		stamp(t, "recoveryAction "+string(ra))), true
}
