package xid

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// scan feeds lines to a fresh Scanner and returns the events and the scanner.
func scan(lines ...string) ([]Event, *Scanner) {
	var s Scanner
	var out []Event
	for _, l := range lines {
		if ev, ok := s.Line(l); ok {
			out = append(out, ev)
		}
	}
	return out, &s
}

func TestScannerJoinsTheThreeLineProbeMessage(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
	}{
		{"dmesg lines", []string{
			"[    5.1] NVRM: The NVIDIA GPU 0000:18:00.0",
			"[    5.1] NVRM: (PCI ID: 10de:20b0) installed in this system has",
			"[    5.1] NVRM: fallen off the bus and is not responding to commands.",
		}},
		{"journald continuation lines without a prefix", []string{
			"May 18 19:02:39 host kernel: NVRM: The NVIDIA GPU 0000:18:00.0",
			"                             NVRM: (PCI ID: 10de:20b0) installed in this system has",
			"                             NVRM: fallen off the bus and is not responding to commands.",
		}},
		{"another kernel line in between", []string{
			"[    5.1] NVRM: The NVIDIA GPU 0000:18:00.0",
			"[    5.1] usb 1-1: new device",
			"[    5.1] NVRM: (PCI ID: 10de:20b0) installed in this system has",
			"[    5.1] NVRM: fallen off the bus and is not responding to commands.",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, _ := scan(tc.lines...)
			if len(evs) != 1 {
				t.Fatalf("got %d events, want 1: %+v", len(evs), evs)
			}
			ev := evs[0]
			want := "The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus and is not responding to commands."
			if ev.XID != 79 || ev.PCI != "0000:18:00" || !ev.Derived || ev.Message != want {
				t.Errorf("got %+v", ev)
			}
			if strings.Count(ev.Line, "\n") < 2 || !strings.HasPrefix(ev.Line, tc.lines[0]) {
				t.Errorf("Line should join the message's lines, got %q", ev.Line)
			}
		})
	}
}

func TestScannerDoesNotInventAProbeEvent(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
	}{
		{"the not-supported probe message", []string{
			"NVRM: The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:1db6)",
			"NVRM: installed in this system is not supported by the",
			"NVRM: NVIDIA 550.54 driver release.",
		}},
		{"a last line without its first", []string{
			"NVRM: fallen off the bus and is not responding to commands.",
		}},
		{"a first line that expired", []string{
			"NVRM: The NVIDIA GPU 0000:18:00.0", "a", "b", "c", "d", "e",
			"NVRM: fallen off the bus and is not responding to commands.",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if evs, _ := scan(tc.lines...); len(evs) != 0 {
				t.Errorf("got %+v, want nothing", evs)
			}
		})
	}
}

func TestScannerBuildsTheDeviceMapFromTheDriversLines(t *testing.T) {
	evs, s := scan(
		"[ 10.0] NVRM: GPU at PCI:0000:9B:00: GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8",
		"[ 10.0] NVRM: GPU Board Serial Number: 1653922000123",
		"[ 10.0] NVRM: Xid (PCI:0000:9b:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No",
		"[ 11.0] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555",
		"[ 11.0] NVRM: Xid (PCI:0000:3b:00): 13, x",
		"[ 11.0] NVRM: GPU Board Serial Number: 999", // not right after its "GPU at" line
	)
	d, ok := s.Devices().Lookup("00000000:9B:00.0")
	if !ok || d.UUID != "GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8" || d.Serial != "1653922000123" {
		t.Errorf("9b:00 = %+v, %v", d, ok)
	}
	if d, _ := s.Devices().Lookup("0000:3b:00.0"); d.Serial != "" {
		t.Errorf("a serial line that does not follow its GPU line was attributed: %+v", d)
	}
	if s.Devices().Len() != 2 || len(s.Devices().Devices()) != 2 {
		t.Errorf("want 2 devices, got %+v", s.Devices().Devices())
	}
	if len(evs) != 2 || evs[0].UUID != "GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8" || evs[1].UUID != "GPU-11111111-2222-3333-4444-555555555555" {
		t.Errorf("events not attributed: %+v", evs)
	}
}

func TestScannerReportsSXidsAsTheirOwnKind(t *testing.T) {
	evs, _ := scan(
		"kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:C3:00.0): 24007, Fatal, Link 30 sourcetrack timeout error",
		"kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:C3:00.0): 24007, Severity 1 Engine instance 30 Sub-engine instance 00",
		"kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:C3:00.0): 24007, Data {0x00000000, 0x00000001}",
		"May 18 19:02:39 host logger: nvidia-nvswitch0: SXid (PCI:0000:C3:00.0): 24007, Fatal, quoted by a script",
	)
	if len(evs) != 1 {
		t.Fatalf("want one SXid (the follow-up lines belong to it), got %+v", evs)
	}
	ev := evs[0]
	if ev.Kind != KindSXid || ev.XID != 24007 || ev.PCI != "0000:c3:00" || ev.Message != "Fatal, Link 30 sourcetrack timeout error" {
		t.Errorf("got %+v", ev)
	}
}

func TestScanAllAttributesEventsBeforeTheDeviceLine(t *testing.T) {
	text := "NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.\n" +
		"NVRM: GPU at PCI:0000:9b:00: GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8\n"
	scan, err := ScanAll(context.Background(), strings.NewReader(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	evs, devs := scan.Events, scan.Devices
	if len(evs) != 1 || evs[0].UUID != "GPU-0b1a1b2c-3d4e-5f60-7182-93a4b5c6d7e8" || devs.Len() != 1 {
		t.Errorf("got %+v, %+v", evs, devs.Devices())
	}
}

func TestScanAllStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ScanAll(ctx, strings.NewReader("x\n"), "test")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func FuzzScanner(f *testing.F) {
	f.Add("NVRM: The NVIDIA GPU 0000:18:00.0\nNVRM: (PCI ID: 10de:20b0) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.")
	f.Add("NVRM: GPU at PCI:0000:9b:00: GPU-x\nNVRM: GPU Board Serial Number: 1\nNVRM: Xid (PCI:0000:9b:00): 13, y")
	f.Add("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04")
	f.Fuzz(func(t *testing.T, text string) {
		var s Scanner
		for _, l := range strings.Split(text, "\n") {
			ev, ok := s.Line(l)
			if !ok {
				continue
			}
			if ev.XID < 0 || strings.Count(ev.PCI, ":") != 2 {
				t.Fatalf("bad event %+v from %q", ev, text)
			}
			if ev.UUID != "" {
				if d, known := s.Devices().Lookup(ev.PCI); !known || d.UUID != ev.UUID {
					t.Fatalf("event UUID %q not from the device map", ev.UUID)
				}
			}
		}
	})
}
