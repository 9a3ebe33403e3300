package xid

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
)

// at builds a dmesg line for an XID at sec seconds after boot.
func at(sec float64, pci string, xid int, rest string) string {
	return fmt.Sprintf("[%12.6f] NVRM: Xid (PCI:%s): %d, %s", sec, pci, xid, rest)
}

// outcome is what correlation decided for one event.
type outcome struct {
	xid         int
	consequence bool
	causedBy    int
	drain       bool
	diagnose    bool
	severity    fault.Severity
	action      fault.Action
}

func TestCorrelation(t *testing.T) {
	const gpuA, gpuB = "0000:3b:00", "0000:5e:00"
	cases := []struct {
		name  string
		lines []string
		want  []outcome
	}{
		{"a 45 seconds after a 95 on the same GPU is its consequence",
			[]string{at(10, gpuA, 95, "pid=7, Uncontained: LTC TAG. RST: Yes"), at(11, gpuA, 45, "pid=7, name=x, Ch 00000010")},
			[]outcome{{95, false, 0, false, false, fault.SeverityCritical, fault.ActionResetGPU}, {45, true, 95, false, false, fault.SeverityInfo, fault.ActionNone}}},
		{"a 45 after a 94 follows the memory error, not a later 13",
			[]string{at(10, gpuA, 94, "pid=7, Contained: SM"), at(10.5, gpuA, 13, "Graphics Exception"), at(11, gpuA, 45, "Ch 1")},
			[]outcome{{94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {45, true, 94, false, false, fault.SeverityInfo, fault.ActionNone}}},
		{"a 45 after a 48 on another GPU is not a consequence",
			[]string{at(10, gpuA, 48, "DBE"), at(11, gpuB, 45, "Ch 1")},
			[]outcome{{48, false, 0, false, false, fault.SeverityCritical, fault.ActionResetGPU}, {45, false, 0, false, false, fault.SeverityWarning, fault.ActionNone}}},
		{"a 45 ten minutes after a 95 stands alone",
			[]string{at(10, gpuA, 95, "Uncontained"), at(610, gpuA, 45, "Ch 1")},
			[]outcome{{95, false, 0, false, false, fault.SeverityCritical, fault.ActionResetGPU}, {45, false, 0, false, false, fault.SeverityWarning, fault.ActionNone}}},
		{"a 45 that says what caused it is a consequence without the other line",
			[]string{at(10, gpuA, 45, "Ch 1 caused by previous Xid 48")},
			[]outcome{{45, true, 48, false, false, fault.SeverityInfo, fault.ActionNone}}},
		{"a 48 with a 63 on the same GPU means drain, then reset",
			[]string{at(10, gpuA, 48, "DBE"), at(10.1, gpuA, 63, "Row Remapper: New row marked for remapping, reset gpu to activate.")},
			[]outcome{{48, false, 0, true, false, fault.SeverityCritical, fault.ActionResetGPU}, {63, false, 0, true, false, fault.SeverityCritical, fault.ActionResetGPU}}},
		{"a 64 before a 48 still pairs, and keeps its service",
			[]string{at(10, gpuA, 64, "Row Remapper Error"), at(10.2, gpuA, 48, "DBE")},
			[]outcome{{64, false, 0, true, false, fault.SeverityFatal, fault.ActionService}, {48, false, 0, true, false, fault.SeverityCritical, fault.ActionResetGPU}}},
		{"a 48 and a 63 on different GPUs do not pair",
			[]string{at(10, gpuA, 48, "DBE"), at(10, gpuB, 63, "Row Remapper")},
			[]outcome{{48, false, 0, false, false, fault.SeverityCritical, fault.ActionResetGPU}, {63, false, 0, false, false, fault.SeverityWarning, fault.ActionNone}}},
		{"a 13 from a second process on the same GPC and TPC runs diagnostics",
			[]string{at(10, gpuA, 13, "pid=100, name=a, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address"),
				at(3600, gpuA, 13, "pid=200, name=b, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address")},
			[]outcome{{13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {13, false, 0, false, true, fault.SeverityCritical, fault.ActionResetGPU}}},
		{"a burst of 13s from one process is one incident",
			[]string{at(10, gpuA, 13, "pid=100, name=a, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)"),
				at(10.001, gpuA, 13, "pid=100, name=a, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1)")},
			[]outcome{{13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"13s on different TPCs do not escalate",
			[]string{at(10, gpuA, 13, "pid=100, name=a, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)"),
				at(3600, gpuA, 13, "pid=200, name=b, Graphics SM Warp Exception on (GPC 2, TPC 3, SM 0)")},
			[]outcome{{13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {13, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"a contained error (94) once restarts the application and leaves the GPU in service",
			[]string{at(10, gpuA, 94, "pid=100, name=a, Contained: SM (0x1). RST: No, D-RST: No")},
			[]outcome{{94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"a contained error (94) again from a second process within a day needs a reset",
			[]string{at(10, gpuA, 94, "pid=100, name=a, Contained: SM (0x1). RST: No, D-RST: No"),
				at(7200, gpuA, 94, "pid=200, name=b, Contained: SM (0x1). RST: No, D-RST: No")},
			[]outcome{{94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {94, false, 0, false, false, fault.SeverityCritical, fault.ActionResetGPU}}},
		{"a burst of 94 lines from one process is one contained error",
			[]string{at(10, gpuA, 94, "pid=100, name=a, Contained: SM (0x1)"), at(10.2, gpuA, 94, "pid=100, name=a, Contained: SM (0x1)")},
			[]outcome{{94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"94s on two GPUs are one contained error each",
			[]string{at(10, gpuA, 94, "pid=100, name=a, Contained: SM"), at(3600, gpuB, 94, "pid=200, name=b, Contained: SM")},
			[]outcome{{94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {94, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"a 31 again two days later does not escalate",
			[]string{at(10, gpuA, 31, "pid=100, name=a, MMU Fault"), at(10+48*3600, gpuA, 31, "pid=200, name=b, MMU Fault")},
			[]outcome{{31, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {31, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}}},
		{"a 31 after a pause from an unknown process escalates",
			[]string{at(10, gpuA, 31, "pid='<unknown>', name=<unknown>, MMU Fault"), at(100, gpuA, 31, "pid='<unknown>', name=<unknown>, MMU Fault")},
			[]outcome{{31, false, 0, false, false, fault.SeverityWarning, fault.ActionRestartApp}, {31, false, 0, false, true, fault.SeverityCritical, fault.ActionResetGPU}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, _ := scan(tc.lines...)
			ds := Decode(evs, Options{})
			if len(ds) != len(tc.want) {
				t.Fatalf("%d decoded, want %d", len(ds), len(tc.want))
			}
			for i, d := range ds {
				got := outcome{d.XID, d.Consequence, d.CausedBy, d.Drain, d.RunDiagnostics, d.Severity, d.Action}
				if got != tc.want[i] {
					t.Errorf("event %d: got %+v\nwant %+v (reason %q)", i, got, tc.want[i], d.Reason)
				}
			}
		})
	}
}

func TestEventsWithoutTimestampsCountAsCloseTogether(t *testing.T) {
	evs, _ := scan("NVRM: Xid (PCI:0000:3b:00): 95, Uncontained", "NVRM: Xid (PCI:0000:3b:00): 45, Ch 1")
	if ds := Decode(evs, Options{}); !ds[1].Consequence {
		t.Errorf("the 45 is not a consequence: %+v", ds[1])
	}
}

func TestWindowsAreOptions(t *testing.T) {
	evs, _ := scan(at(10, "0000:3b:00", 95, "x"), at(20, "0000:3b:00", 45, "y"))
	if ds := Decode(evs, Options{ConsequenceWindow: 5 * time.Second}); ds[1].Consequence {
		t.Errorf("a 45 ten seconds later is outside a five-second window: %+v", ds[1])
	}
	if !strings.Contains(Decode(evs, Options{})[1].Reason, "follows XID 95") {
		t.Errorf("the default window should make it a consequence")
	}
}
