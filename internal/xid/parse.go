// Package xid recognises NVIDIA XID (and NVSwitch SXid) reports in kernel-log text, holds the
// XID catalog (generated from catalog.tsv) and decodes and correlates events into faults.
//
// Formats and gpunode's decisions: docs/xid.md.
package xid

import (
	"fmt"
	"strings"
	"time"
)

// Kind says what reported an event.
type Kind uint8

// Kinds of event: a GPU's Xid (the zero value) or an NVSwitch's SXid.
const (
	KindXID Kind = iota
	KindSXid
)

// String names the kind as JSON writes it.
func (k Kind) String() string {
	if k == KindSXid {
		return "sxid"
	}
	return "xid"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is one XID report.
type Event struct {
	// XID is the error code (for an SXid, the 5-digit switch error code).
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
	// Line is the kernel-log line the event came from (lines joined by "\n" for a message
	// that spans several).
	Line string `json:"line"`
	// Kind is KindSXid for an NVSwitch report; PCI is then the switch's address.
	Kind Kind `json:"kind,omitempty"`
	// UUID is the GPU's UUID when the driver's own "GPU at PCI:..." line named it earlier
	// in the same log (set by Scanner).
	UUID string `json:"uuid,omitempty"`
	// Stamp is the line's timestamp as printed; Uptime (since boot: /dev/kmsg, dmesg) and
	// Time (wall clock: dmesg -T, syslog, journald; year 0 when syslog omits it) are what it
	// says, zero when the prefix has none.
	Stamp  string        `json:"stamp,omitempty"`
	Uptime time.Duration `json:"uptime,omitempty"`
	Time   time.Time     `json:"time,omitzero"`
}

// lineKind is what a driver line is.
type lineKind uint8

const (
	lineOther       lineKind = iota
	lineXID                  // NVRM: Xid (PCI:...): N, ...
	lineOffBus               // NVRM: GPU ...: GPU has fallen off the bus.
	lineSXid                 // nvidia-nvswitchN: SXid (PCI:...): N, ...
	lineGPUAt                // NVRM: GPU at PCI:dddd:bb:dd: GPU-<uuid>
	lineSerial               // NVRM: GPU Board Serial Number: <sn>
	lineProbeGPU             // NVRM: The NVIDIA GPU dddd:bb:dd.f
	lineProbePCIID           // NVRM: (PCI ID: vvvv:dddd) installed in this system has
	lineProbeOffBus          // NVRM: fallen off the bus and is not responding to commands.
)

// parsed is one classified driver line.
type parsed struct {
	kind   lineKind
	prefix string // text before the driver message
	body   string // the driver message, from "NVRM: " or "nvidia-nvswitch"
	line   string
	ev     Event  // lineXID, lineOffBus, lineSXid
	pci    string // lineGPUAt, lineProbeGPU
	value  string // lineGPUAt: the UUID; lineSerial: the serial number
}

func (p parsed) event() Event {
	ev := p.ev
	ev.Line = p.line
	s := parseStamp(p.prefix)
	ev.Stamp, ev.Uptime, ev.Time = s.text, s.uptime, s.time
	return ev
}

// classify recognises a driver line. The cheap substring checks come first: most kernel-log
// lines are not the driver's.
func classify(line string) (parsed, bool) {
	line = strings.TrimRight(line, "\r\n")
	i := strings.Index(line, "NVRM: ")
	if i < 0 {
		return classifySwitch(line)
	}
	if !acceptPrefix(line[:i]) {
		return parsed{}, false
	}
	p := parsed{prefix: line[:i], body: line[i:], line: line}
	rest := line[i+len("NVRM: "):]
	switch {
	case strings.HasPrefix(rest, "Xid "):
		ev, ok := parseXid(rest[len("Xid "):])
		if !ok {
			return parsed{}, false
		}
		p.kind, p.ev = lineXID, ev
	case strings.HasPrefix(rest, "GPU "):
		return classifyGPU(p, rest[len("GPU "):])
	case strings.HasPrefix(rest, "The NVIDIA GPU "):
		pci, ok := parsePCI(strings.TrimPrefix(rest[len("The NVIDIA GPU "):], "PCI:"))
		if !ok {
			return parsed{}, false
		}
		p.kind, p.pci = lineProbeGPU, pci
		if strings.Contains(rest, "fallen off the bus") { // the whole message on one line
			p.kind, p.ev = lineOffBus, offBusEvent(pci, joinProbe(rest))
		}
	case strings.HasPrefix(rest, "(PCI ID: ") && strings.Contains(rest, "installed in this system"):
		p.kind = lineProbePCIID
	case strings.HasPrefix(rest, "fallen off the bus and is not responding"):
		p.kind = lineProbeOffBus
	default:
		return parsed{}, false
	}
	return p, true
}

// classifyGPU handles the "NVRM: GPU ..." lines: the device map and fallen off the bus.
func classifyGPU(p parsed, rest string) (parsed, bool) {
	if v, ok := strings.CutPrefix(rest, "Board Serial Number:"); ok {
		p.kind, p.value = lineSerial, strings.TrimSpace(v)
		return p, p.value != ""
	}
	at := strings.HasPrefix(rest, "at ")
	addr := strings.TrimPrefix(strings.TrimPrefix(rest, "at "), "PCI:")
	pci, ok := parsePCI(addr)
	if !ok {
		return parsed{}, false
	}
	tail := strings.TrimLeft(addr[pciLen(addr):], ":")
	tail = strings.TrimSpace(tail)
	switch {
	case strings.Contains(tail, "fallen off the bus"):
		p.kind, p.ev = lineOffBus, offBusEvent(pci, "GPU has fallen off the bus.")
	case at && strings.HasPrefix(tail, "GPU-"):
		p.kind, p.pci, p.value = lineGPUAt, pci, strings.Fields(tail)[0]
	default:
		return parsed{}, false
	}
	return p, true
}

// joinProbe turns the probe-time message, its lines joined (by a newline, the /dev/kmsg
// escape "\x0a" or a space), into one sentence without the "NVRM: " markers.
func joinProbe(s string) string {
	s = strings.NewReplacer(`\x0a`, " ", "\n", " ", "NVRM: ", " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

func offBusEvent(pci, msg string) Event {
	return Event{XID: 79, PCI: pci, GPUInstance: -1, ComputeInstance: -1, Message: msg, Derived: true}
}

// parseXid reads "(PCI:dddd:bb:dd[ GPU-I:nn][ GPU-CI:nn]): N, [pid=..., [name=..., ]]text".
func parseXid(s string) (Event, bool) {
	ev := Event{GPUInstance: -1, ComputeInstance: -1}
	s, ok := strings.CutPrefix(s, "(")
	if !ok {
		return Event{}, false
	}
	addr := strings.TrimPrefix(s, "PCI:")
	if ev.PCI, ok = parsePCI(addr); !ok {
		return Event{}, false
	}
	s = addr[pciLen(addr):]
	if v, rest, ok := cutNumber(s, " GPU-I:"); ok {
		ev.GPUInstance, s = v, rest
	}
	if v, rest, ok := cutNumber(s, " GPU-CI:"); ok {
		ev.ComputeInstance, s = v, rest
	}
	if s, ok = strings.CutPrefix(s, "): "); !ok {
		return Event{}, false
	}
	code, n := leadingNumber(s, 6)
	if n == 0 {
		return Event{}, false
	}
	ev.XID = code
	s = strings.TrimLeft(s[n:], ", ")
	ev.PID, ev.Process, s = cutProcess(s)
	ev.Message = strings.TrimSpace(s)
	return ev, true
}

// cutProcess splits "pid=N, name=P, rest" (either part optional; pid may be '<unknown>').
func cutProcess(s string) (pid, name, rest string) {
	v, ok := strings.CutPrefix(s, "pid=")
	if !ok {
		return "", "", s
	}
	end := strings.IndexByte(v, ',')
	if end < 0 {
		end = len(v)
	}
	pid = strings.Trim(strings.TrimSpace(v[:end]), "'")
	rest = strings.TrimLeft(v[end:], ", ")
	if v, ok := strings.CutPrefix(rest, "name="); ok {
		end = strings.Index(v, ", ")
		if end < 0 {
			end = len(v)
		}
		name = strings.TrimSpace(strings.TrimSuffix(v[:end], ","))
		rest = strings.TrimLeft(v[end:], ", ")
	}
	return pid, name, rest
}

// parsePCI reads "dddd:bb:dd" (optionally ".f") at the start of s, any case, and returns it
// lower-case without the function. The domain may have 4 to 8 hex digits.
func parsePCI(s string) (string, bool) {
	n := pciLen(s)
	if n == 0 {
		return "", false
	}
	addr := strings.ToLower(s[:n])
	if dot := strings.IndexByte(addr, '.'); dot >= 0 {
		addr = addr[:dot]
	}
	return NormalizeBusID(addr), true
}

// pciLen is the length of the PCI address at the start of s, 0 when there is none.
func pciLen(s string) int {
	d := hexRun(s, 8)
	if d < 4 || len(s) < d+6 || s[d] != ':' || hexRun(s[d+1:], 2) != 2 || s[d+3] != ':' || hexRun(s[d+4:], 2) != 2 {
		return 0
	}
	n := d + 6
	if len(s) > n+1 && s[n] == '.' && s[n+1] >= '0' && s[n+1] <= '7' {
		n += 2
	}
	return n
}

func hexRun(s string, max int) int {
	n := 0
	for n < len(s) && n < max && isHex(s[n]) {
		n++
	}
	return n
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// leadingNumber reads up to max decimal digits at the start of s.
func leadingNumber(s string, max int) (v, n int) {
	for n < len(s) && n < max && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	if n < len(s) && s[n] >= '0' && s[n] <= '9' {
		return 0, 0 // too long to be a code
	}
	return v, n
}

// cutNumber reads prefix followed by a decimal number.
func cutNumber(s, prefix string) (int, string, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, s, false
	}
	v, n := leadingNumber(rest, 4)
	if n == 0 {
		return 0, s, false
	}
	return v, rest[n:], true
}

// NormalizeBusID turns an NVML ("00000000:3B:00.0") or sysfs ("0000:3b:00.0") bus id into
// the driver's kernel-log form ("0000:3b:00").
func NormalizeBusID(id string) string {
	id = strings.ToLower(id)
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[:i]
	}
	parts := strings.Split(id, ":")
	if len(parts) == 3 {
		// NVML pads the domain to 8 digits, the driver and sysfs to 4; a wider domain
		// (VMD: 10000) keeps its digits.
		for len(parts[0]) > 4 && parts[0][0] == '0' {
			parts[0] = parts[0][1:]
		}
	}
	return strings.Join(parts, ":")
}

// SysfsBusID turns the kernel-log form ("0000:3b:00") into the sysfs form ("0000:3b:00.0").
func SysfsBusID(pci string) string {
	if pci == "" || strings.Count(pci, ":") != 2 || strings.IndexByte(pci, '.') >= 0 {
		return pci
	}
	return pci + ".0"
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
