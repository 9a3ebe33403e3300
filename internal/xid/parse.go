// Package xid recognises NVIDIA XID error reports in kernel-log text.
//
// This is the minimal parser the acceptance engine needs (one event per line, every prefix
// and the MIG-attributed form); the full catalog and correlation rules build on it.
package xid

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Event is one XID report.
type Event struct {
	XID int `json:"xid"`
	// PCI is the device address as the driver prints it, normalised to lower-case
	// "dddd:bb:dd" (domain:bus:device, no function).
	PCI string `json:"pci"`
	// GPUInstance and ComputeInstance are the MIG instance, -1 when the line has none.
	GPUInstance     int    `json:"gpuInstance"`
	ComputeInstance int    `json:"computeInstance"`
	PID             string `json:"pid,omitempty"`
	Process         string `json:"process,omitempty"`
	Message         string `json:"message"`
	// Derived is true for a line that implies the XID without being an "Xid" report (the
	// driver's separate fallen-off-the-bus messages); it usually repeats an XID 79 line.
	Derived bool `json:"derived,omitempty"`
	// Line is the kernel-log line the event came from.
	Line string `json:"line"`
}

var (
	xidRe = regexp.MustCompile(`NVRM: Xid \(PCI:([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?: GPU-I:(\d+))?(?: GPU-CI:(\d+))?\): (\d+),\s*(.*)$`)
	pidRe = regexp.MustCompile(`^pid=('?<unknown>'?|\d+)(?:,\s*name=([^,]*))?,\s*(.*)$`)
	// "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus." and the legacy
	// "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
	offBusRe = regexp.MustCompile(`NVRM: GPU (?:at )?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\.[0-7]:? (?:GPU )?has fallen off the bus`)
)

// ParseLine returns the XID event in one kernel-log line, whatever its prefix
// (/dev/kmsg record, dmesg, dmesg -T, syslog or journald).
func ParseLine(line string) (Event, bool) {
	line = strings.TrimRight(line, "\r\n")
	if m := xidRe.FindStringSubmatch(line); m != nil {
		n, err := strconv.Atoi(m[4])
		if err != nil {
			return Event{}, false
		}
		ev := Event{XID: n, PCI: strings.ToLower(m[1]), GPUInstance: atoiOr(m[2], -1), ComputeInstance: atoiOr(m[3], -1), Line: line}
		rest := m[5]
		if pm := pidRe.FindStringSubmatch(rest); pm != nil {
			ev.PID = strings.Trim(pm[1], "'")
			ev.Process = strings.TrimSpace(pm[2])
			rest = pm[3]
		}
		ev.Message = strings.TrimSpace(rest)
		return ev, true
	}
	if m := offBusRe.FindStringSubmatch(line); m != nil {
		return Event{XID: 79, PCI: strings.ToLower(m[1]), GPUInstance: -1, ComputeInstance: -1,
			Message: "GPU has fallen off the bus.", Derived: true, Line: line}, true
	}
	return Event{}, false
}

func atoiOr(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// NormalizeBusID turns an NVML ("00000000:3B:00.0") or sysfs ("0000:3b:00.0") bus id into
// the driver's kernel-log form ("0000:3b:00").
func NormalizeBusID(id string) string {
	id = strings.ToLower(id)
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[:i]
	}
	parts := strings.Split(id, ":")
	if len(parts) == 3 && len(parts[0]) > 4 {
		parts[0] = parts[0][len(parts[0])-4:]
	}
	return strings.Join(parts, ":")
}

// Dedupe drops derived events that repeat an XID report of the same code and device.
func Dedupe(events []Event) []Event {
	reported := map[string]bool{}
	for _, e := range events {
		if !e.Derived {
			reported[fmt.Sprintf("%s/%d", e.PCI, e.XID)] = true
		}
	}
	out := make([]Event, 0, len(events))
	for _, e := range events {
		if e.Derived && reported[fmt.Sprintf("%s/%d", e.PCI, e.XID)] {
			continue
		}
		out = append(out, e)
	}
	return out
}
