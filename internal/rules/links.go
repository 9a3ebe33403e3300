package rules

import (
	"fmt"
	"strconv"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Link causes.
const (
	CausePCIeReplays    = "pcie-replay-limit"
	CausePCIeReplayRate = "pcie-replay-rate"
	CausePCIeLinkWidth  = "pcie-link-width"
	CausePCIeLinkGen    = "pcie-link-gen"
	CauseFabric         = "fabric-registration"
)

// NVLinkDownCause is the cause of a down NVLink: "nvlink-down-7".
func NVLinkDownCause(link int) string { return "nvlink-down-" + strconv.Itoa(link) }

// pcieReplays warns above the threshold since the driver loaded, and when the counter grows
// faster than the rate between two readings: a marginal link.
var pcieReplays = Rule{
	Check: "hardware.pcie-replays", Title: "PCIe replay count",
	Fix:    "many PCIe replays mean a marginal link: reseat the GPU or riser; open a hardware ticket if it continues",
	Fields: []gpu.Field{gpu.FieldPCIeReplay},
	Pass:   func(in Input) string { return fmt.Sprintf("%d PCIe replays", in.Device.PCI.ReplayCounter) },
	Judge: func(in Input) []Outcome {
		now := in.Device.PCI.ReplayCounter
		var out []Outcome
		if now > in.T.MaxPCIeReplays {
			out = append(out, Outcome{Cause: CausePCIeReplays, Component: fault.ComponentPCIe, Severity: fault.SeverityWarning, Action: fault.ActionNone,
				Message:  fmt.Sprintf("%d PCIe replays since driver load (threshold %d)", now, in.T.MaxPCIeReplays),
				Evidence: fmt.Sprintf("pci.replayCounter %d", now)})
		}
		if in.prevOK(gpu.FieldPCIeReplay) && in.Interval > 0 {
			was := in.Prev.PCI.ReplayCounter
			if n := growth(was, now); overRate(n, in.T.PCIeReplaysPerMinute, in.Interval) {
				out = append(out, Outcome{Cause: CausePCIeReplayRate, Component: fault.ComponentPCIe, Severity: fault.SeverityWarning, Action: fault.ActionNone,
					Message:  fmt.Sprintf("%d PCIe replays in %s (threshold %d a minute): a marginal link", n, in.Interval, in.T.PCIeReplaysPerMinute),
					Evidence: fmt.Sprintf("pci.replayCounter %d -> %d in %s", was, now, in.Interval)})
			}
		}
		return out
	},
}

// pcieLink judges the link against its own maximum: a narrower link fails (a reset retrains
// it); a lower generation warns only while the GPU says it is busy (an idle GPU trains its
// link down to save power). The policy's minimum link is an expectation acceptance adds.
var pcieLink = Rule{
	Check: "hardware.pcie-link", Title: "PCIe link at full generation and width",
	Fix:    "a degraded link is a riser, slot, cable or BIOS fault: reseat the GPU, check BIOS PCIe settings, or open a hardware ticket",
	Fields: []gpu.Field{gpu.FieldPCIeLink},
	Pass: func(in Input) string {
		l := in.Device.PCI
		if l.LinkGenMax > 0 && l.LinkGen < l.LinkGenMax {
			return fmt.Sprintf("gen%d x%d (max gen%d x%d; not busy: an idle GPU trains its link down to save power)", l.LinkGen, l.LinkWidth, l.LinkGenMax, l.LinkWidthMax)
		}
		return fmt.Sprintf("gen%d x%d (max gen%d x%d)", l.LinkGen, l.LinkWidth, l.LinkGenMax, l.LinkWidthMax)
	},
	Judge: func(in Input) []Outcome {
		l := in.Device.PCI
		narrow := l.LinkWidthMax > 0 && l.LinkWidth < l.LinkWidthMax
		slow := l.LinkGenMax > 0 && l.LinkGen < l.LinkGenMax && busy(in.Device)
		if !narrow && !slow {
			return nil
		}
		cur := fmt.Sprintf("gen%d x%d", l.LinkGen, l.LinkWidth)
		ev := fmt.Sprintf("pci link gen%d x%d, max gen%d x%d", l.LinkGen, l.LinkWidth, l.LinkGenMax, l.LinkWidthMax)
		var out []Outcome
		if narrow {
			out = append(out, Outcome{Cause: CausePCIeLinkWidth, Component: fault.ComponentPCIe, Severity: fault.SeverityCritical, Action: fault.ActionResetGPU,
				Message: fmt.Sprintf("%s, width below x%d", cur, l.LinkWidthMax), Evidence: ev})
		}
		if slow {
			out = append(out, Outcome{Cause: CausePCIeLinkGen, Component: fault.ComponentPCIe, Severity: fault.SeverityWarning, Action: fault.ActionNone,
				Message: fmt.Sprintf("%s while busy, generation below gen%d", cur, l.LinkGenMax), Evidence: ev})
		}
		return out
	},
}

// nvlinkDown fails for every reported NVLink that is not active: drain peer-to-peer work.
var nvlinkDown = Rule{
	Check: "hardware.nvlink", Title: "NVLink links up",
	Fix:    "inactive NVLinks: check `nvidia-smi nvlink -s`, the fabric manager, and reseat the GPU baseboard",
	Fields: []gpu.Field{gpu.FieldNVLink},
	Skip: func(d *gpu.Device) string {
		if len(d.NVLinks) == 0 {
			return "GPU reports no NVLinks"
		}
		return ""
	},
	Pass: func(in Input) string {
		return fmt.Sprintf("%d/%d links active", len(in.Device.NVLinks), len(in.Device.NVLinks))
	},
	Judge: func(in Input) []Outcome {
		var out []Outcome
		for _, l := range in.Device.NVLinks {
			if !l.Active {
				out = append(out, Outcome{Cause: NVLinkDownCause(l.Link), Component: fault.ComponentInterconnect, Severity: fault.SeverityCritical,
					Action: fault.ActionDrainP2P, Message: fmt.Sprintf("NVLink %d down: drain peer-to-peer work", l.Link),
					Evidence: fmt.Sprintf("nvlink %d active false", l.Link)})
			}
		}
		return out
	},
}

// HasFabric reports whether the GPU is in an NVSwitch fabric.
func HasFabric(d *gpu.Device) bool {
	e := d.Err(gpu.FieldFabric)
	return d.Fabric.State != "" && d.Fabric.State != "not-supported" && (e == nil || !e.NotSupported)
}

// fabric fails a registration that is not complete, or complete with an error: CUDA cannot
// use the GPU.
var fabric = Rule{
	Check: "hardware.fabric", Title: "NVSwitch fabric registration complete",
	Fix:    "start or restart nvidia-fabricmanager and check its log; the GPU cannot use NVLink until registration completes",
	Fields: []gpu.Field{gpu.FieldFabric},
	Skip: func(d *gpu.Device) string {
		if !HasFabric(d) {
			return "GPU has no NVSwitch fabric (not supported)"
		}
		return ""
	},
	Pass: func(in Input) string { return fmt.Sprintf("fabric completed (clique %d)", in.Device.Fabric.CliqueID) },
	Judge: func(in Input) []Outcome {
		fb := in.Device.Fabric
		var msg string
		switch {
		case fb.State != "completed":
			msg = fmt.Sprintf("fabric registration %s", fb.State)
		case fb.Status != "" && fb.Status != "success":
			msg = "fabric registration completed with error: " + fb.Status
		default:
			return nil
		}
		return []Outcome{{Cause: CauseFabric, Component: fault.ComponentInterconnect, Severity: fault.SeverityCritical, Action: fault.ActionResetGPU,
			Message: msg, Evidence: fmt.Sprintf("fabric state %q status %q clique %d cluster %s", fb.State, fb.Status, fb.CliqueID, fb.ClusterUUID)}}
	},
}
