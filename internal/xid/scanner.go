package xid

import (
	"context"
	"io"
	"slices"
	"strings"
)

// Device is what the driver's own kernel-log lines say about one GPU: printed once per GPU
// ("NVRM: GPU at PCI:0000:9b:00: GPU-<uuid>", then "NVRM: GPU Board Serial Number: <sn>"),
// so a PCI address can be attributed to a GPU even when NVML is dead.
type Device struct {
	PCI    string `json:"pci"` // "dddd:bb:dd", as Event.PCI
	UUID   string `json:"uuid"`
	Serial string `json:"serial,omitempty"`
}

// DeviceMap maps GPU PCI addresses to what the driver said about them. The zero value is an
// empty map ready to use.
type DeviceMap struct {
	byPCI map[string]Device
}

// Add records a device (its PCI address in any form: kernel log, sysfs or NVML).
func (m *DeviceMap) Add(d Device) {
	if m.byPCI == nil {
		m.byPCI = map[string]Device{}
	}
	d.PCI = NormalizeBusID(d.PCI)
	if old, ok := m.byPCI[d.PCI]; ok {
		if d.UUID == "" {
			d.UUID = old.UUID
		}
		if d.Serial == "" && d.UUID == old.UUID {
			d.Serial = old.Serial
		}
	}
	m.byPCI[d.PCI] = d
}

// Lookup finds a device by bus id in any form ("0000:3b:00", "0000:3b:00.0", "00000000:3B:00.0").
func (m *DeviceMap) Lookup(busID string) (Device, bool) {
	d, ok := m.byPCI[NormalizeBusID(busID)]
	return d, ok
}

// Devices lists the devices, sorted by PCI address.
func (m *DeviceMap) Devices() []Device {
	out := make([]Device, 0, len(m.byPCI))
	for _, d := range m.byPCI {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.PCI, b.PCI) })
	return out
}

// Len is the number of devices.
func (m *DeviceMap) Len() int { return len(m.byPCI) }

// Attribute sets the UUID of GPU events that lack one and whose address the map knows.
func (m *DeviceMap) Attribute(events []Event) {
	for i := range events {
		if events[i].UUID == "" && events[i].Kind == KindXID {
			if d, ok := m.byPCI[events[i].PCI]; ok {
				events[i].UUID = d.UUID
			}
		}
	}
}

// probeExpiry is how many lines the probe-time message's first line waits for the rest.
const probeExpiry = 4

// Scanner turns kernel-log lines into events, one line at a time. It is needed where one
// message spans lines (the probe-time "fallen off the bus" message) and to build the
// DeviceMap from the driver's own lines. The zero value is ready to use; it is not safe for
// concurrent use.
type Scanner struct {
	devices   DeviceMap
	lastGPUAt string // PCI of a "GPU at" line that was the last driver line, for its serial

	probeLines []string // the probe-time message so far
	probeBody  []string
	probePCI   string
	probeAge   int
}

// Line feeds one kernel-log line and returns the event it completes, if any: an Xid, a
// fallen-off-the-bus message (XID 79), or an NVSwitch SXid (Kind KindSXid).
func (s *Scanner) Line(line string) (Event, bool) {
	p, ok := classify(line)
	if !ok {
		s.ageProbe()
		return Event{}, false
	}
	prevGPUAt := s.lastGPUAt // the serial line must follow its "GPU at" line directly
	s.lastGPUAt = ""
	switch p.kind {
	case lineXID, lineOffBus, lineSXid:
		s.resetProbe()
		ev := p.event()
		if ev.Kind == KindXID {
			ev.UUID = s.devices.byPCI[ev.PCI].UUID
		}
		return ev, true
	case lineGPUAt:
		s.devices.Add(Device{PCI: p.pci, UUID: p.value})
		s.lastGPUAt = p.pci
	case lineSerial:
		if prevGPUAt != "" {
			d := s.devices.byPCI[prevGPUAt]
			d.Serial = p.value
			s.devices.byPCI[prevGPUAt] = d
		}
	case lineProbeGPU:
		s.resetProbe()
		s.probePCI, s.probeLines, s.probeBody = p.pci, []string{p.line}, []string{p.body}
	case lineProbePCIID:
		if s.probePCI != "" && len(s.probeLines) == 1 {
			s.probeLines, s.probeBody = append(s.probeLines, p.line), append(s.probeBody, p.body)
		}
	case lineProbeOffBus:
		if s.probePCI == "" {
			return Event{}, false
		}
		first, _ := classify(s.probeLines[0])
		ev := parsed{prefix: first.prefix, line: strings.Join(append(s.probeLines, p.line), "\n"),
			ev: offBusEvent(s.probePCI, joinProbe(strings.Join(append(s.probeBody, p.body), " ")))}.event()
		ev.UUID = s.devices.byPCI[ev.PCI].UUID
		s.resetProbe()
		return ev, true
	}
	return Event{}, false
}

func (s *Scanner) ageProbe() {
	if s.probePCI == "" {
		return
	}
	if s.probeAge++; s.probeAge > probeExpiry {
		s.resetProbe()
	}
}

func (s *Scanner) resetProbe() {
	s.probePCI, s.probeLines, s.probeBody, s.probeAge = "", nil, nil, 0
}

// Devices is the PCI → UUID/serial map built from the lines so far.
func (s *Scanner) Devices() *DeviceMap { return &s.devices }

// MaxEvents is how many events ScanAll keeps in full. Past it, an event is kept only when
// it is the first of its kind, code and device (GPU instance included): a flood of one
// fault's lines (a million XID 13s) is counted, not held, and a different fault after it
// is still seen. So memory is bounded by the cap and the distinct faults, not the log.
const MaxEvents = 20_000

// Scan is what ScanAll read.
type Scan struct {
	// Events in log order, UUIDs filled in from the driver's device lines anywhere in the
	// text; past MaxEvents only the first of each fault (see MaxEvents).
	Events []Event
	// Devices is the PCI → UUID/serial map of the driver's lines.
	Devices *DeviceMap
	LineStats
	// Repeats counts the events past MaxEvents not kept: repeats of a fault already kept.
	Repeats int `json:"repeats,omitempty"`
}

// faultKey is what makes two events the same fault for the MaxEvents rule.
type faultKey struct {
	kind   Kind
	xid    int
	pci    string
	gi, ci int
}

// ScanAll reads kernel-log text (any of the formats ParseLine accepts) line by line with
// bounded memory (ReadLines, MaxEvents). name is used in errors; on an error the events so
// far are returned with it.
func ScanAll(ctx context.Context, r io.Reader, name string) (Scan, error) {
	var s Scanner
	var out Scan
	seen := map[faultKey]bool{}
	st, err := ReadLines(ctx, r, name, func(line string) {
		ev, ok := s.Line(line)
		if !ok {
			return
		}
		k := faultKey{ev.Kind, ev.XID, ev.PCI, ev.GPUInstance, ev.ComputeInstance}
		if len(out.Events) >= MaxEvents && seen[k] {
			out.Repeats++
			return
		}
		seen[k] = true
		out.Events = append(out.Events, ev)
	})
	out.LineStats, out.Devices = st, s.Devices()
	if err != nil {
		return out, err
	}
	s.devices.Attribute(out.Events)
	return out, nil
}
