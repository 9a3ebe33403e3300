package xid

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

// Options are the correlation windows. A zero field takes its DefaultOptions value. Events
// whose timestamps cannot be compared (no prefix, or one with uptime and one with wall
// clock) count as within every window.
type Options struct {
	// ConsequenceWindow: a 45 this soon after another XID on the same GPU is its consequence.
	ConsequenceWindow time.Duration
	// PairWindow: a 48 and a 63 or 64 on the same GPU this close together mean drain, then reset.
	PairWindow time.Duration
	// RepeatWindow: a 13 (same GPC/TPC) or 31 on the same GPU from a second process within
	// this window escalates to critical, run diagnostics.
	RepeatWindow time.Duration
	// BurstGap: lines of one XID closer than this (and from the same process) are one incident.
	BurstGap time.Duration
}

// DefaultOptions are the windows gpunode uses.
func DefaultOptions() Options {
	return Options{ConsequenceWindow: time.Minute, PairWindow: time.Minute, RepeatWindow: 24 * time.Hour, BurstGap: 10 * time.Second}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.ConsequenceWindow <= 0 {
		o.ConsequenceWindow = d.ConsequenceWindow
	}
	if o.PairWindow <= 0 {
		o.PairWindow = d.PairWindow
	}
	if o.RepeatWindow <= 0 {
		o.RepeatWindow = d.RepeatWindow
	}
	if o.BurstGap <= 0 {
		o.BurstGap = d.BurstGap
	}
	return o
}

// Decode decodes a sequence of events (in log order) and applies the correlation rules
// between events of the same GPU. It is a pure function of its input.
func Decode(events []Event, o Options) []Decoded {
	o = o.withDefaults()
	out := make([]Decoded, len(events))
	for i, ev := range events {
		out[i] = DecodeOne(ev)
	}
	consequences(out, o.ConsequenceWindow)
	pairs(out, o.PairWindow)
	repeats(out, o.RepeatWindow, o.BurstGap)
	return out
}

// elapsed is how long after a the event b was logged; ok is false when the two timestamps
// cannot be compared.
func elapsed(a, b Event) (time.Duration, bool) {
	switch {
	case a.Uptime > 0 && b.Uptime > 0:
		return b.Uptime - a.Uptime, true
	case !a.Time.IsZero() && !b.Time.IsZero():
		return b.Time.Sub(a.Time), true
	}
	return 0, false
}

// within reports whether b is at most w from a (or their distance is unknown).
func within(a, b Event, w time.Duration) bool {
	d, ok := elapsed(a, b)
	if !ok {
		return true
	}
	return d <= w && d >= -w
}

func isMemoryFault(xid int) bool { return xid == 94 || xid == 95 || xid == 48 }

// consequences marks a 45 that follows another XID on the same GPU (a memory error first:
// 94, 95, 48; else the latest other XID) as that XID's consequence.
func consequences(ds []Decoded, w time.Duration) {
	lastMem := map[string]int{}
	lastAny := map[string]int{}
	for i := range ds {
		d := &ds[i]
		if d.Kind != KindXID {
			continue
		}
		if d.XID != 45 {
			lastAny[d.PCI] = i
			if isMemoryFault(d.XID) {
				lastMem[d.PCI] = i
			}
			continue
		}
		if d.Consequence {
			continue
		}
		for _, last := range []map[string]int{lastMem, lastAny} {
			if j, ok := last[d.PCI]; ok && within(ds[j].Event, d.Event, w) {
				d.markConsequence(ds[j].XID, fmt.Sprintf(
					"follows XID %d on the same GPU: a consequence (preemptive cleanup), no new fault; follow XID %d", ds[j].XID, ds[j].XID))
				break
			}
		}
	}
}

// pairs marks a 48 and a 63 or 64 on the same GPU within w of each other: drain, then reset.
func pairs(ds []Decoded, w time.Duration) {
	last48 := map[string]int{}
	lastRemap := map[string]int{}
	mark := func(d *Decoded, other int) {
		d.Drain = true
		d.Severity = fault.MaxSeverity(d.Severity, fault.SeverityCritical)
		d.Action = fault.Max(d.Action, fault.ActionResetGPU)
		d.Reason = fmt.Sprintf("XID 48 with %d on the same GPU: drain (let running work finish, schedule none), then reset the GPU", other)
		if d.Action == fault.ActionService {
			d.Reason += "; the remap failure still means service (RMA)"
		}
	}
	for i := range ds {
		d := &ds[i]
		if d.Kind != KindXID {
			continue
		}
		switch d.XID {
		case 48:
			if j, ok := lastRemap[d.PCI]; ok && within(ds[j].Event, d.Event, w) {
				mark(d, ds[j].XID)
				mark(&ds[j], ds[j].XID)
			}
			last48[d.PCI] = i
		case 63, 64:
			if j, ok := last48[d.PCI]; ok && within(ds[j].Event, d.Event, w) {
				mark(d, d.XID)
				mark(&ds[j], d.XID)
			}
			lastRemap[d.PCI] = i
		}
	}
}

// repeatKey is what makes two 13s or 31s "the same": the GPU, the code and, for 13, the
// GPC/TPC the message names.
type repeatKey struct {
	pci string
	xid int
	loc string
}

// repeats escalates a 13, 31 or 94 that repeats on the same GPU (13: same GPC/TPC) from a
// second incident (another process, or after a pause longer than gap) within w. A 13 or 31
// again points at hardware: run diagnostics. A contained memory error (94) again means the
// containment is not holding: the memory needs the reset that applies its row remap.
func repeats(ds []Decoded, w, gap time.Duration) {
	starts := map[repeatKey][]int{} // first event of each incident, oldest first
	last := map[repeatKey]int{}
	for i := range ds {
		d := &ds[i]
		if d.Kind != KindXID || (d.XID != 13 && d.XID != 31 && d.XID != 94) || d.Consequence {
			continue
		}
		k := repeatKey{d.PCI, d.XID, d.Location}
		j, seen := last[k]
		last[k] = i
		if !seen || newIncident(ds[j].Event, d.Event, gap) {
			kept := starts[k][:0]
			for _, s := range starts[k] {
				if within(ds[s].Event, d.Event, w) {
					kept = append(kept, s)
				}
			}
			starts[k] = append(kept, i)
		}
		if n := len(starts[k]); n >= 2 && d.XID == 94 {
			d.Component, d.Severity, d.Action = fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU
			d.Reason = fmt.Sprintf("XID 94 again on this GPU (%d incidents within %s): containment is not holding; drain the GPU and reset it (the reset applies the pending row remap)",
				n, short(w))
		} else if n >= 2 {
			where := "this GPU"
			if d.Location != "" {
				where = d.Location + " of this GPU"
			}
			d.Component, d.Severity, d.Action, d.RunDiagnostics = fault.ComponentGPU, fault.SeverityCritical, fault.ActionResetGPU, true
			d.Reason = fmt.Sprintf("XID %d again on %s (%d incidents within %s): possibly hardware; run diagnostics (gpunode resets the GPU and runs acceptance)",
				d.XID, where, n, short(w))
		}
	}
}

// newIncident reports whether b starts a new incident after a: another process, or a pause.
func newIncident(a, b Event, gap time.Duration) bool {
	pa, pb := knownPID(a.PID), knownPID(b.PID)
	if pa != "" && pb != "" && pa != pb {
		return true
	}
	d, ok := elapsed(a, b)
	return ok && d > gap
}

func knownPID(p string) string {
	if p == "<unknown>" {
		return ""
	}
	return p
}

// short writes a window the way people say it: "24h", "1m", "10s".
func short(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
