package health

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/rules"
)

// XIDLookup classifies an XID code from the XID catalog: component, severity and action,
// and whether the catalog has the code. The caller wires internal/xid's lookup in.
type XIDLookup func(xid int) (fault.Component, fault.Severity, fault.Action, bool)

// recoveryCodes are the driver's recovery-action values in code order (0x0, 0x1, ...), for
// an event that carries only the number.
var recoveryCodes = []gpu.RecoveryAction{gpu.RecoveryNone, gpu.RecoveryGPUReset, gpu.RecoveryNodeReboot, gpu.RecoveryDrainP2P, gpu.RecoveryDrainAndReset}

// FromEvent classifies one device event (source nvml-event):
//
//   - xid: the catalog's classification through lookup, cause "xid-N". For an XID the
//     catalog does not know, the lookup's default if it gives one (internal/xid does),
//     else gpu/warning/none, as internal/xid's: the driver's own verdict (XID 154, the
//     recovery-action field and event) decides what such an XID requires.
//   - ecc-single-bit: memory/info (corrected; the counter rate judges storms).
//   - ecc-double-bit: memory/critical/reset-gpu, cause "ecc-uncorrected" (the same cause
//     as the counter, so the event and the counter dedupe into one finding).
//   - recovery-action: as the recovery-action field (FromSnapshot); back to none is info.
//   - gpu-unavailable and gpu-lost: gpu/fatal/reboot-node.
//   - any other kind: gpu/warning, cause "event-<kind>".
//
// The kernel-log follower can reuse it for XID lines: a gpu.Event{Kind: EventXID} with the
// line as Message, then Source set to SourceKmsg on the result.
func FromEvent(ev gpu.Event, lookup XIDLookup) Finding {
	f := func(c fault.Component, s fault.Severity, a fault.Action, cause, summary string) Finding {
		return newFinding(ev.UUID, ev.Index, c, s, a, SourceNVMLEvent, cause, summary, ev.Time, stamp(ev.Time, eventEvidence(ev)))
	}
	switch ev.Kind {
	case gpu.EventXID:
		var (
			c     fault.Component
			s     fault.Severity
			a     fault.Action
			known bool
		)
		if lookup != nil {
			c, s, a, known = lookup(ev.XID)
		}
		summary := fmt.Sprintf("XID %d", ev.XID)
		if !known {
			summary += " (not in the XID catalog: investigate)"
			if c == "" || s == "" || a == "" {
				c, s, a = fault.ComponentGPU, fault.SeverityWarning, fault.ActionNone
			}
		}
		if m := strings.TrimSpace(ev.Message); m != "" {
			summary += ": " + m
		}
		return f(c, s, a, XIDCause(ev.XID), summary)
	case gpu.EventECCSingleBit:
		return f(fault.ComponentMemory, fault.SeverityInfo, fault.ActionNone, CauseECCSingleBit, "single-bit ECC error (corrected)")
	case gpu.EventECCDoubleBit:
		// The same fault as the counter (one finding): one uncorrected error is contained
		// to the application that hit it; the counter's second one, or the XID of an
		// uncontained error (95, 48), asks for the reset.
		return f(fault.ComponentMemory, fault.SeverityWarning, fault.ActionRestartApp, CauseECCUncorrected, "double-bit ECC error (uncorrected): restart the application that hit it")
	case gpu.EventRecoveryAction:
		ra := ev.RecoveryAction
		if ra == "" {
			ra = gpu.RecoveryAction(fmt.Sprintf("0x%x", ev.Data))
			if ev.Data < uint64(len(recoveryCodes)) {
				ra = recoveryCodes[ev.Data]
			}
		}
		if o, ok := rules.RecoveryAction(ra); ok {
			r := FromOutcome(ev.UUID, ev.Index, SourceNVMLEvent, ev.Time, o)
			r.Evidence = []string{stamp(ev.Time, eventEvidence(ev))}
			return r
		}
		return f(fault.ComponentGPU, fault.SeverityInfo, fault.ActionNone, CauseRecoveryAction, "the driver's recovery action is back to none")
	case gpu.EventGPUUnavailable:
		return f(fault.ComponentGPU, fault.SeverityFatal, fault.ActionRebootNode, CauseGPUUnavailable, "GPU unavailable: "+orDefault(ev.Message, "the driver reports it unusable"))
	case gpu.EventGPULost:
		return f(fault.ComponentGPU, fault.SeverityFatal, fault.ActionRebootNode, CauseGPULost, "GPU not answering: "+orDefault(ev.Message, "it stopped answering"))
	}
	return f(fault.ComponentGPU, fault.SeverityWarning, fault.ActionNone, EventCause(string(ev.Kind)), fmt.Sprintf("device event %q", ev.Kind))
}

// eventEvidence renders the raw event.
func eventEvidence(ev gpu.Event) string {
	var b strings.Builder
	b.WriteString("event ")
	b.WriteString(string(ev.Kind))
	if ev.Kind == gpu.EventXID {
		fmt.Fprintf(&b, " xid %d", ev.XID)
	}
	if ev.GPUInstance >= 0 {
		fmt.Fprintf(&b, " gpuInstance %d", ev.GPUInstance)
	}
	if ev.ComputeInstance >= 0 {
		fmt.Fprintf(&b, " computeInstance %d", ev.ComputeInstance)
	}
	if ev.RecoveryAction != "" {
		b.WriteString(" recoveryAction " + string(ev.RecoveryAction))
	}
	if ev.Data != 0 {
		fmt.Fprintf(&b, " data 0x%x", ev.Data)
	}
	if m := strings.TrimSpace(ev.Message); m != "" {
		b.WriteString(": " + m)
	}
	return b.String()
}

func orDefault(s, def string) string {
	if s = strings.TrimSpace(s); s != "" {
		return s
	}
	return def
}
