package health

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/rules"
)

// FromSnapshot compares two snapshots of the same node and returns the findings of cur,
// in device order: the outcomes of the rule set (internal/rules) under thresholds t, each
// rule's outcomes in its order. prev may be nil (the first poll): counters are then judged
// from zero and rates are not judged. Conditions (a pending row remap, a down link, the
// driver's recovery action) are reported by every snapshot that shows them; counters
// (uncorrected ECC errors) when they grow. A GPU that does not answer gets one finding,
// "gpu-lost", and nothing else, as does a GPU of prev that cur no longer lists. A fact that
// could not be read is not judged; the GPU gets one warning, "telemetry-unreadable", naming
// the facts (rules.Unreadable).
func FromSnapshot(prev, cur *gpu.Snapshot, t rules.Thresholds) []Finding {
	if cur == nil {
		return nil
	}
	var interval time.Duration
	if prev != nil && !prev.Time.IsZero() && cur.Time.After(prev.Time) {
		interval = cur.Time.Sub(prev.Time)
	}
	var out []Finding
	for i := range cur.Devices {
		d := &cur.Devices[i]
		for _, o := range rules.Judge(rules.Input{Device: d, Prev: prevDevice(prev, d), Interval: interval, T: &t}) {
			out = append(out, FromOutcome(d.UUID, d.Index, SourceCounter, cur.Time, o))
		}
	}
	return append(out, vanished(prev, cur)...)
}

// FromOutcome is the finding of one rule outcome on a GPU, observed once at t: its level
// (rules.LevelOf) is the finding's Unhealthy (Fail) or Degrades (Warn).
func FromOutcome(uuid string, index int, src Source, t time.Time, o rules.Outcome) Finding {
	summary := o.Message
	if o.Cause == rules.CauseGPULost {
		summary = "GPU " + o.Message
	}
	return newFinding(uuid, index, o.Component, o.Severity, o.Action, src, o.Cause, summary, t, stamp(t, o.Evidence))
}

// prevDevice finds d's previous reading, by UUID, or by index when the UUID is unknown.
func prevDevice(prev *gpu.Snapshot, d *gpu.Device) *gpu.Device {
	if prev == nil {
		return nil
	}
	for i := range prev.Devices {
		p := &prev.Devices[i]
		if (d.UUID != "" && p.UUID == d.UUID) || (d.UUID == "" && p.UUID == "" && p.Index == d.Index) {
			return p
		}
	}
	return nil
}

// vanished reports the GPUs of prev that cur no longer lists.
func vanished(prev, cur *gpu.Snapshot) []Finding {
	if prev == nil {
		return nil
	}
	var out []Finding
	for i := range prev.Devices {
		p := &prev.Devices[i]
		if p.UUID == "" || prevDevice(cur, p) != nil {
			continue
		}
		out = append(out, newFinding(p.UUID, p.Index, fault.ComponentGPU, fault.SeverityFatal, fault.ActionRebootNode, SourceCounter,
			CauseGPULost, "GPU no longer listed by the driver", cur.Time,
			stamp(cur.Time, fmt.Sprintf("GPU %d (%s, PCI %s) missing from the snapshot", p.Index, p.UUID, p.PCI.BusID))))
	}
	return out
}

// stamp prefixes an evidence line with its time.
func stamp(t time.Time, line string) string {
	if t.IsZero() {
		return line
	}
	return t.UTC().Format(time.RFC3339) + " " + line
}
