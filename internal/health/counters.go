package health

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// CounterPolicy holds the thresholds FromSnapshot judges counters by. A zero field is a
// threshold of zero (any growth reports); DefaultCounterPolicy has the defaults.
type CounterPolicy struct {
	// CorrectedECCPerMinute: a warning when volatile corrected ECC errors grow faster.
	CorrectedECCPerMinute uint64 `json:"correctedECCPerMinute" yaml:"correctedECCPerMinute"`
	// PCIeReplaysPerMinute: a warning when the PCIe replay counter grows faster.
	PCIeReplaysPerMinute uint64 `json:"pcieReplaysPerMinute" yaml:"pcieReplaysPerMinute"`
	// MaxRetiredPages (single + double bit): above it the GPU needs service (RMA).
	MaxRetiredPages int `json:"maxRetiredPages" yaml:"maxRetiredPages"`
}

// DefaultCounterPolicy returns the defaults:
//
//   - CorrectedECCPerMinute 100: a corrected-error storm (about 6,000 an hour); single
//     corrected errors are routine and row remapping absorbs them. The acceptance engine
//     separately warns above 1,000 since the last reset.
//   - PCIeReplaysPerMinute 8: DCGM's PCIe health-watch threshold ("more than 8 PCIe
//     replays per minute").
//   - MaxRetiredPages 60: the acceptance engine's limit, NVIDIA's RMA guidance.
func DefaultCounterPolicy() CounterPolicy {
	return CounterPolicy{CorrectedECCPerMinute: 100, PCIeReplaysPerMinute: 8, MaxRetiredPages: 60}
}

// FromSnapshot compares two snapshots of the same node and returns the findings of cur,
// in device order. prev may be nil (the first poll): counters are then judged from zero
// and rates are not judged. Conditions (a pending row remap, a down link, the driver's
// recovery action) are reported by every snapshot that shows them; counters (uncorrected
// ECC errors) when they grow. A GPU that does not answer gets one finding, "gpu-lost",
// and nothing else, as does a GPU of prev that cur no longer lists. A fact that could not
// be read is not judged (the acceptance engine reports unreadable facts).
func FromSnapshot(prev, cur *gpu.Snapshot, p CounterPolicy) []Finding {
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
		c := snapCtx{d: d, prev: prevDevice(prev, d), t: cur.Time, interval: interval, p: p}
		if e := unreachable(d); e != nil {
			out = append(out, c.finding(fault.ComponentGPU, fault.SeverityFatal, fault.ActionRebootNode, CauseGPULost,
				"GPU not answering: "+e.Message, "device: "+e.Message))
			continue
		}
		out = c.memory(out)
		out = c.links(out)
		out = c.state(out)
	}
	return append(out, vanished(prev, cur)...)
}

// snapCtx is one device of cur with what FromSnapshot compares it to.
type snapCtx struct {
	d        *gpu.Device
	prev     *gpu.Device // nil when prev has no such device
	t        time.Time
	interval time.Duration // 0 when rates cannot be judged
	p        CounterPolicy
}

func (c snapCtx) finding(comp fault.Component, s fault.Severity, a fault.Action, cause, summary, evidence string) Finding {
	return newFinding(c.d.UUID, c.d.Index, comp, s, a, SourceCounter, cause, summary, c.t, stamp(c.t, evidence))
}

// ok reports whether a field of cur was read; prevOK whether prev has it too.
func (c snapCtx) ok(f gpu.Field) bool { return c.d.Err(f) == nil }

func (c snapCtx) prevOK(f gpu.Field) bool {
	return c.prev != nil && c.prev.Err(f) == nil && unreachable(c.prev) == nil
}

func (c snapCtx) memory(out []Finding) []Finding {
	if c.ok(gpu.FieldECCErrors) {
		e := c.d.ECC
		var was gpu.ECC // zero: counted from the last reset
		havePrev := c.prevOK(gpu.FieldECCErrors)
		if havePrev {
			was = c.prev.ECC
		}
		if n := growth(was.VolatileUncorrected, e.VolatileUncorrected); n > 0 {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU, CauseECCUncorrected,
				fmt.Sprintf("%d new uncorrected ECC errors (%d since the last reset): reset the GPU", n, e.VolatileUncorrected),
				fmt.Sprintf("ecc.volatileUncorrected %d -> %d", was.VolatileUncorrected, e.VolatileUncorrected)))
		}
		if n := growth(was.AggregateUncorrected, e.AggregateUncorrected); n > 0 {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityInfo, fault.ActionNone, CauseECCAggregate,
				fmt.Sprintf("%d uncorrected ECC errors in the GPU's lifetime", e.AggregateUncorrected),
				fmt.Sprintf("ecc.aggregateUncorrected %d -> %d", was.AggregateUncorrected, e.AggregateUncorrected)))
		}
		if n := growth(was.VolatileCorrected, e.VolatileCorrected); havePrev && c.interval > 0 && overRate(n, c.p.CorrectedECCPerMinute, c.interval) {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityWarning, fault.ActionNone, CauseECCCorrectedRate,
				fmt.Sprintf("%d corrected ECC errors in %s (threshold %d a minute)", n, c.interval, c.p.CorrectedECCPerMinute),
				fmt.Sprintf("ecc.volatileCorrected %d -> %d in %s", was.VolatileCorrected, e.VolatileCorrected, c.interval)))
		}
	}
	if c.ok(gpu.FieldRowRemap) {
		r := c.d.RowRemap
		if r.Failure {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityFatal, fault.ActionService, CauseRowRemapFailure,
				fmt.Sprintf("row remapping failed (%d uncorrectable rows remapped): the GPU needs service (RMA)", r.Uncorrectable),
				fmt.Sprintf("rowRemap.failure true, uncorrectable %d", r.Uncorrectable)))
		}
		if r.Pending {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU, CauseRowRemapPending,
				"row remap pending: GPU reset required",
				fmt.Sprintf("rowRemap.pending true, uncorrectable %d, correctable %d", r.Uncorrectable, r.Correctable)))
		}
	}
	if c.ok(gpu.FieldRetiredPages) {
		r := c.d.RetiredPages
		if r.Pending {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU, CauseRetiredPending,
				"page retirement pending: GPU reset required",
				fmt.Sprintf("retiredPages.pending true, singleBit %d, doubleBit %d", r.SingleBit, r.DoubleBit)))
		}
		if total := r.SingleBit + r.DoubleBit; total > c.p.MaxRetiredPages {
			out = append(out, c.finding(fault.ComponentMemory, fault.SeverityCritical, fault.ActionService, CauseRetiredLimit,
				fmt.Sprintf("%d retired pages (limit %d): the GPU needs service (RMA)", total, c.p.MaxRetiredPages),
				fmt.Sprintf("retiredPages singleBit %d, doubleBit %d", r.SingleBit, r.DoubleBit)))
		}
	}
	return out
}

// growth is how much a counter grew; a counter below its previous value was reset, so all
// of it is new.
func growth(was, now uint64) uint64 {
	if now < was {
		return now
	}
	return now - was
}

// overRate reports whether n events in interval exceed perMinute. Within a minute or less
// the count itself is compared (n events in 10 s exceed the limit of any minute holding
// them, and a short interval must not magnify one event); over longer intervals the limit
// scales with the minutes.
func overRate(n, perMinute uint64, interval time.Duration) bool {
	if interval <= time.Minute {
		return n > perMinute
	}
	return float64(n) > float64(perMinute)*interval.Minutes()
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

// unreachable returns why a device does not answer (it could not be opened, or a fact
// read failed because the GPU is lost), or nil.
func unreachable(d *gpu.Device) *gpu.FieldError {
	if e := d.Err(gpu.FieldDevice); e != nil {
		return e
	}
	for _, f := range slices.Sorted(maps.Keys(d.Errors)) {
		if e := d.Errors[f]; e.Lost {
			return &e
		}
	}
	return nil
}

// stamp prefixes an evidence line with its time.
func stamp(t time.Time, line string) string {
	if t.IsZero() {
		return line
	}
	return t.UTC().Format(time.RFC3339) + " " + line
}
