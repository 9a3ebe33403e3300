package xid

import (
	"bufio"
	"context"
	"fmt"
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

// maxLine is the longest line ScanAll accepts (a /dev/kmsg record is at most 8 KiB; saved
// logs may carry longer lines of other programs).
const maxLine = 1 << 20

// ScanAll reads kernel-log text (any of the formats ParseLine accepts) and returns its events
// in order, with UUIDs filled in from the driver's device lines anywhere in the text, and the
// device map. name is used in errors.
func ScanAll(ctx context.Context, r io.Reader, name string) ([]Event, *DeviceMap, error) {
	var s Scanner
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for n := 0; sc.Scan(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return events, s.Devices(), fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if ev, ok := s.Line(sc.Text()); ok {
			events = append(events, ev)
		}
	}
	if err := sc.Err(); err != nil {
		return events, s.Devices(), fmt.Errorf("%s: %w", name, err)
	}
	s.devices.Attribute(events)
	return events, s.Devices(), nil
}
