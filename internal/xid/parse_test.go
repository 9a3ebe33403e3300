package xid

import "testing"

func TestParseLine(t *testing.T) {
	cases := []struct {
		name string
		line string
		want Event
		ok   bool
	}{
		{"a kmsg record with process context is parsed", "4,1234,5678,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
			Event{XID: 79, PCI: "0000:18:00", GPUInstance: -1, ComputeInstance: -1, PID: "<unknown>", Process: "<unknown>", Message: "GPU has fallen off the bus."}, true},
		{"a dmesg line without process context is parsed", "[16450076.435595] NVRM: Xid (PCI:0000:3B:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
			Event{XID: 48, PCI: "0000:3b:00", GPUInstance: -1, ComputeInstance: -1, Message: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."}, true},
		{"a MIG-attributed syslog line keeps its instances", "May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:9b:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=python3, Ch 00000008, intr 00000000. MMU Fault",
			Event{XID: 31, PCI: "0000:9b:00", GPUInstance: 2, ComputeInstance: 1, PID: "2345", Process: "python3", Message: "Ch 00000008, intr 00000000. MMU Fault"}, true},
		{"a 94 line with pid and no name is parsed", "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:2a:00): 94, pid=1234, Contained: SM (0x1). RST: No, D-RST: No",
			Event{XID: 94, PCI: "0000:2a:00", GPUInstance: -1, ComputeInstance: -1, PID: "1234", Message: "Contained: SM (0x1). RST: No, D-RST: No"}, true},
		{"the fallen-off-the-bus variant without an Xid is XID 79", "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
			Event{XID: 79, PCI: "0000:2b:00", GPUInstance: -1, ComputeInstance: -1, Message: "GPU has fallen off the bus.", Derived: true}, true},
		{"the legacy fallen-off-the-bus line is XID 79", "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
			Event{XID: 79, PCI: "0000:01:00", GPUInstance: -1, ComputeInstance: -1, Message: "GPU has fallen off the bus.", Derived: true}, true},
		{"an unrelated NVRM line is not an event", "NVRM: GPU at PCI:0000:9b:00: GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8", Event{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseLine(tc.line)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			got.Line = ""
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{"00000000:3B:00.0": "0000:3b:00", "0000:3b:00.0": "0000:3b:00", "0000:3b:00": "0000:3b:00"} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	f.Add("NVRM: Xid (PCI:0000:9b:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=python3, x")
	f.Fuzz(func(t *testing.T, s string) {
		ev, ok := ParseLine(s)
		if ok && ev.XID < 0 {
			t.Fatalf("negative xid from %q", s)
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
