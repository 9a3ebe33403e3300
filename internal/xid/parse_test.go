package xid

import (
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	feb23 := time.Date(2025, time.February, 23, 16, 24, 18, 0, time.UTC)
	may18 := time.Date(0, time.May, 18, 19, 2, 39, 0, time.UTC)
	cases := []struct {
		name string
		line string
		want Event
	}{
		{"a kmsg record with process context is parsed", "4,1234,5678,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
			Event{XID: 79, PCI: "0000:18:00", GPUInstance: -1, ComputeInstance: -1, PID: "<unknown>", Process: "<unknown>", Message: "GPU has fallen off the bus.",
				Stamp: "5678", Uptime: 5678 * time.Microsecond}},
		{"a dmesg line without process context is parsed", "[16450076.435595] NVRM: Xid (PCI:0000:3B:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
			Event{XID: 48, PCI: "0000:3b:00", GPUInstance: -1, ComputeInstance: -1, Message: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
				Stamp: "16450076.435595", Uptime: 16450076*time.Second + 435595*time.Microsecond}},
		{"a MIG-attributed syslog line keeps its instances", "May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:9b:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=python3, Ch 00000008, intr 00000000. MMU Fault",
			Event{XID: 31, PCI: "0000:9b:00", GPUInstance: 2, ComputeInstance: 1, PID: "2345", Process: "python3", Message: "Ch 00000008, intr 00000000. MMU Fault",
				Stamp: "May 18 19:02:39", Time: may18}},
		{"a line with a GPU instance only keeps it", "NVRM: Xid (PCI:0000:9B:00 GPU-I:07): 43, pid=99, name=x, Ch 00000010",
			Event{XID: 43, PCI: "0000:9b:00", GPUInstance: 7, ComputeInstance: -1, PID: "99", Process: "x", Message: "Ch 00000010"}},
		{"a 94 line with pid and no name is parsed", "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:2a:00): 94, pid=1234, Contained: SM (0x1). RST: No, D-RST: No",
			Event{XID: 94, PCI: "0000:2a:00", GPUInstance: -1, ComputeInstance: -1, PID: "1234", Message: "Contained: SM (0x1). RST: No, D-RST: No",
				Stamp: "Sun Feb 23 16:24:18 2025", Time: feb23}},
		{"pid='<unknown>' without quotes in the name is parsed", "NVRM: Xid (PCI:0004:01:00): 119, pid='<unknown>', name=<unknown>, Timeout waiting for RPC from GSP!",
			Event{XID: 119, PCI: "0004:01:00", GPUInstance: -1, ComputeInstance: -1, PID: "<unknown>", Process: "<unknown>", Message: "Timeout waiting for RPC from GSP!"}},
		{"a syslog line with a kernel timestamp has both clocks", "Oct 12 08:25:03 localhost kernel: [  851.885993] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
			Event{XID: 63, PCI: "0000:10:1c", GPUInstance: -1, ComputeInstance: -1, PID: "1896", Message: "Row Remapper: New row marked for remapping, reset gpu to activate.",
				Stamp: "851.885993", Uptime: 851885993 * time.Microsecond, Time: time.Date(0, time.October, 12, 8, 25, 3, 0, time.UTC)}},
		{"a dmesg line with a caller id is parsed", "[  130.456250] [ T1946] NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-bench, channel 0x00000002",
			Event{XID: 31, PCI: "0000:2b:00", GPUInstance: -1, ComputeInstance: -1, PID: "1942", Process: "llama-bench", Message: "channel 0x00000002",
				Stamp: "130.456250", Uptime: 130456250 * time.Microsecond}},
		{"an older line without PCI: is parsed", "NVRM: Xid (0000:03:00): 14, Channel 00000001",
			Event{XID: 14, PCI: "0000:03:00", GPUInstance: -1, ComputeInstance: -1, Message: "Channel 00000001"}},
		{"the fallen-off-the-bus variant without an Xid is XID 79", "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
			Event{XID: 79, PCI: "0000:2b:00", GPUInstance: -1, ComputeInstance: -1, Message: "GPU has fallen off the bus.", Derived: true}},
		{"the legacy fallen-off-the-bus line is XID 79", "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
			Event{XID: 79, PCI: "0000:01:00", GPUInstance: -1, ComputeInstance: -1, Message: "GPU has fallen off the bus.", Derived: true}},
		{"the probe-time message escaped into one kmsg record is XID 79", `6,812,5140900,-;NVRM: The NVIDIA GPU 0000:18:00.0\x0aNVRM: (PCI ID: 10de:20b0) installed in this system has\x0aNVRM: fallen off the bus and is not responding to commands.`,
			Event{XID: 79, PCI: "0000:18:00", GPUInstance: -1, ComputeInstance: -1, Derived: true, Stamp: "5140900", Uptime: 5140900 * time.Microsecond,
				Message: "The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus and is not responding to commands."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseLine(tc.line)
			if !ok {
				t.Fatalf("ParseLine(%q) found no event", tc.line)
			}
			if got.Line != tc.line {
				t.Errorf("Line = %q, want the input", got.Line)
			}
			got.Line = ""
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseLineIgnoresWhatIsNotAGPUXidReport(t *testing.T) {
	for name, line := range map[string]string{
		"a device-map line":                                           "NVRM: GPU at PCI:0000:9b:00: GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8",
		"a serial-number line":                                        "NVRM: GPU Board Serial Number: 1653922000123",
		"an NVSwitch SXid (Scanner only)":                             "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
		"another program quoting it":                                  "May 18 19:02:39 host myscript[42]: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a user-space kmsg record":                                    "12,1303,92000100,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
		"a syslog tag before the kernel word":                         "May 18 19:02:39 host myscript[42]: kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a dmesg -x record of the user facility (logger > /dev/kmsg)": "user  :notice: [ 12.345678] NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a dmesg -x record of the daemon facility":                    "daemon:info  : NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a shell echoing the words":                                   "$ echo kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a user-facility syslog priority":                             "<13>May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a driver banner":                                             "[    5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
		"an unrelated kernel line":                                    "[    5.1] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
		"an Xid without a code":                                       "NVRM: Xid (PCI:0000:9b:00): , nothing",
		"an Xid with a bad address":                                   "NVRM: Xid (PCI:00:9b:00): 13, x",
		"an absurdly long code":                                       "NVRM: Xid (PCI:0000:9b:00): 12345678901234567890, x",
		"the first probe line alone":                                  "NVRM: The NVIDIA GPU 0000:18:00.0",
	} {
		t.Run(name, func(t *testing.T) {
			if ev, ok := ParseLine(line); ok {
				t.Errorf("ParseLine(%q) = %+v, want nothing", line, ev)
			}
		})
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00", "0000:3b:00.0": "0000:3b:00", "0000:3b:00": "0000:3b:00",
		"00010000:01:00.0": "10000:01:00", // a VMD domain keeps its fifth digit
	} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSysfsBusIDAddsTheFunction(t *testing.T) {
	for in, want := range map[string]string{"0000:3b:00": "0000:3b:00.0", "0000:3b:00.0": "0000:3b:00.0", "": ""} {
		if got := SysfsBusID(in); got != want {
			t.Errorf("SysfsBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	f.Add("NVRM: Xid (PCI:0000:9b:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=python3, x")
	f.Add("6,1,2,-;NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.")
	f.Add("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:2a:00): 94, pid=1234, Contained")
	f.Add(`NVRM: The NVIDIA GPU 0000:18:00.0\x0aNVRM: fallen off the bus`)
	f.Fuzz(func(t *testing.T, s string) {
		ev, ok := ParseLine(s)
		if !ok {
			return
		}
		if ev.XID < 0 || ev.GPUInstance < -1 || ev.ComputeInstance < -1 || ev.Uptime < 0 {
			t.Fatalf("impossible values %+v from %q", ev, s)
		}
		if ev.PCI != strings.ToLower(ev.PCI) || strings.Count(ev.PCI, ":") != 2 {
			t.Fatalf("PCI %q not normalised, from %q", ev.PCI, s)
		}
		if ev.Message != strings.TrimSpace(ev.Message) {
			t.Fatalf("message %q not trimmed, from %q", ev.Message, s)
		}
		if ev.Kind != KindXID {
			t.Fatalf("ParseLine returned a %s from %q", ev.Kind, s)
		}
	})
}

func TestDedupeDropsTheFallenOffTheBusLineThatRepeatsAnXID79(t *testing.T) {
	lines := []string{
		"NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.",
		"NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.",
	}
	var evs []Event
	for _, l := range lines {
		ev, ok := ParseLine(l)
		if !ok {
			t.Fatalf("not parsed: %q", l)
		}
		evs = append(evs, ev)
	}
	got := Dedupe(evs)
	if len(got) != 2 || got[0].Derived || got[1].PCI != "0000:5d:00" {
		t.Fatalf("Dedupe = %+v", got)
	}
}

func TestParseLineTakesEveryKernelLogFormat(t *testing.T) {
	for name, line := range map[string]string{
		"a dmesg -x record of the kernel facility": "kern  :err   : [ 12.345678] NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"journald's ISO format":                    "2026-12-01T12:00:00.123456+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"journald's monotonic format":              "[  851.885993] gpu-node-7 kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"a syslog line with the kernel's priority": "<4>May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
		"the kernel tag alone":                     "kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",
	} {
		t.Run(name, func(t *testing.T) {
			if ev, ok := ParseLine(line); !ok || ev.XID != 79 {
				t.Errorf("ParseLine(%q) = %+v, %v: want XID 79", line, ev, ok)
			}
		})
	}
}
