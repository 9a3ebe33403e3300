package xid

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// verdict is the part of a Decoded the decode tests check.
type verdict struct {
	component fault.Component
	severity  fault.Severity
	action    fault.Action
	drain     bool
	link      int
	fatal     string // "true", "false" or "" for nil
}

func verdictOf(d Decoded) verdict {
	v := verdict{d.Component, d.Severity, d.Action, d.Drain, d.Link, ""}
	if d.Fatal != nil {
		v.fatal = map[bool]string{true: "true", false: "false"}[*d.Fatal]
	}
	return v
}

func mustParse(t *testing.T, line string) Event {
	t.Helper()
	evs, _ := scan(line)
	if len(evs) != 1 {
		t.Fatalf("%q gave %d events", line, len(evs))
	}
	return evs[0]
}

func TestDecodeOneReadsWhatTheMessageSays(t *testing.T) {
	const ic, crit, warn = fault.ComponentInterconnect, fault.SeverityCritical, fault.SeverityWarning
	cases := []struct {
		name   string
		line   string
		want   verdict
		inWhy  string
		unit   string
		nRegs  int
		inNote string
	}{
		{"a fatal XID 74 is a reset with its link and seven words",
			"NVRM: Xid (PCI:0000:10:1c): 74, pid=37407, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
			verdict{ic, crit, fault.ActionResetGPU, false, 14, "true"}, "remote end", "", 7, "word 3 bit 16: if repeated, run field diagnostics"},
		{"a non-fatal XID 74 with only an ECC-threshold bit is a warning",
			"NVRM: Xid (PCI:0000:10:1c): 74, NVLink: non-fatal error detected on link 3(0x0, 0x0, 0x0, 0x0, 0x100000, 0x0, 0x0)",
			verdict{ic, warn, fault.ActionNone, false, 3, "false"}, "continue", "", 7, "word 5 bit 20: an ECC error threshold"},
		{"an XID 74 without words keeps the catalog's reset",
			"kernel: NVRM: Xid (PCI:0000:c1:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 1",
			verdict{ic, crit, fault.ActionResetGPU, false, 1, "true"}, "link 1", "", 0, ""},
		{"an XID 136 names the link that failed training",
			"NVRM: Xid (PCI:0000:10:1c): 136, NVLink: Link training failed for link 5(0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
			verdict{ic, crit, fault.ActionResetGPU, false, 5, ""}, "link 5", "", 7, ""},
		{"an XID 136 for a link mask names no link",
			"NVRM: Xid (PCI:0000:10:1c): 136, NVLink: Link training failed for links 0x30(0x1, 0x2, 0x0, 0x0, 0x0, 0x0, 0x0)",
			verdict{ic, crit, fault.ActionResetGPU, false, -1, ""}, "unnamed link", "", 7, ""},
		{"a fatal XID 145 is a reset",
			"NVRM: Xid (PCI:0000:00:1e): 145, pid=4, name=<unknown>, RLW_SRC_TRACK  Fatal   XC0 i1 Link 00 (0x00000001 0x00000002 0x00000000 0x00000000 0x00000000 0x00000000)",
			verdict{ic, crit, fault.ActionResetGPU, false, 0, "true"}, "fatal on link 0", "RLW_SRC_TRACK", 6, "i1: an injected error"},
		{"a non-fatal XID 145 is a warning",
			"NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02",
			verdict{ic, warn, fault.ActionNone, false, 2, "false"}, "XID 154", "RLW_REMAP", 0, ""},
		{"a link-fatal XID 149 drains, then resets",
			"NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			verdict{ic, crit, fault.ActionResetGPU, true, 0, "true"}, "drain", "NETIR_LINK_EVT", 6, ""},
		{"the pre-R575 bracketed form of 149 is read",
			"NVRM: Xid (PCI:0000:00:1e): 149, NETIR_LINK_EVT Fatal XC 1 i 2 Link 01 [0x0000000a]",
			verdict{ic, crit, fault.ActionResetGPU, true, 1, "true"}, "drain", "NETIR_LINK_EVT", 1, "XC1: cross-contained"},
		{"a unit name with a space (150 MSE degraded) is kept whole",
			"NVRM: Xid (PCI:0000:00:1e): 150, MSE degraded  Fatal   XC0 i0 Link -1 (0x00000000 0xffffffff 0x00000000 0x00000000 0x00000000 0x00000000)",
			verdict{ic, crit, fault.ActionResetGPU, false, -1, "true"}, "unnamed link", "MSE degraded", 6, ""},
		{"an XID 155 link down names its link",
			"NVRM: Xid (PCI:0000:00:1e): 155, NVLINK_SW_DEFINED_ERROR  Fatal   XC0 i0 Link 05 : Link Down While Active.",
			verdict{ic, crit, fault.ActionResetGPU, false, 5, "true"}, "link 5", "NVLINK_SW_DEFINED_ERROR", 0, ""},
		{"an NVLink5 message without a severity word is treated as fatal",
			"NVRM: Xid (PCI:0000:00:1e): 147, TREX garbled",
			verdict{ic, crit, fault.ActionResetGPU, false, -1, ""}, "treated as fatal", "", 0, ""},
		{"a fatal SXid reboots the node",
			"nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 30 sourcetrack timeout error",
			verdict{ic, crit, fault.ActionRebootNode, false, 30, "true"}, "switch", "", 0, ""},
		{"a non-fatal SXid is a warning",
			"nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
			verdict{ic, warn, fault.ActionNone, false, 32, "false"}, "non-fatal", "", 0, ""},
		{"an SXid without a severity word is a warning",
			"nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, something",
			verdict{ic, warn, fault.ActionNone, false, -1, ""}, "investigate", "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecodeOne(mustParse(t, tc.line))
			if got := verdictOf(d); got != tc.want {
				t.Errorf("verdict %+v, want %+v", got, tc.want)
			}
			if !strings.Contains(d.Reason, tc.inWhy) {
				t.Errorf("reason %q lacks %q", d.Reason, tc.inWhy)
			}
			if d.Unit != tc.unit || len(d.Registers) != tc.nRegs {
				t.Errorf("unit %q, %d registers; want %q, %d", d.Unit, len(d.Registers), tc.unit, tc.nRegs)
			}
			if tc.inNote != "" && !slices.ContainsFunc(d.RegisterNotes, func(n string) bool { return strings.Contains(n, tc.inNote) }) {
				t.Errorf("register notes %q lack %q", d.RegisterNotes, tc.inNote)
			}
		})
	}
}

func TestXID154GivesTheDriversRecoveryAction(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		want   gpu.RecoveryAction
		action fault.Action
		drain  bool
	}{
		{"a GPU reset", "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", gpu.RecoveryGPUReset, fault.ActionResetGPU, false},
		{"a node reboot", "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", gpu.RecoveryNodeReboot, fault.ActionRebootNode, false},
		{"drain P2P", "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", gpu.RecoveryDrainP2P, fault.ActionDrainP2P, false},
		{"drain and reset", "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x4 (Drain and Reset)", gpu.RecoveryDrainAndReset, fault.ActionResetGPU, true},
		{"back to none", "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", gpu.RecoveryNone, fault.ActionNone, false},
		{"a number without a name", "GPU recovery action changed from 0x0 to 0x2", gpu.RecoveryNodeReboot, fault.ActionRebootNode, false},
		{"recover the IMEX domain", "GPU recovery action changed from 0x0 (None) to 0x5 (Recover IMEX Domain)", "recover-imex-domain", fault.ActionRebootNode, false},
		{"an unknown number", "GPU recovery action changed from 0x0 (None) to 0x9 (Something New)", "unknown-9", fault.ActionNone, false},
		{"an unreadable message", "GPU recovery action changed", "", fault.ActionNone, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecodeOne(mustParse(t, "NVRM: Xid (PCI:0008:01:00): 154, "+tc.text))
			if d.RecoveryAction != tc.want || d.Action != tc.action || d.Drain != tc.drain {
				t.Errorf("got %q %s drain=%v, want %q %s drain=%v", d.RecoveryAction, d.Action, d.Drain, tc.want, tc.action, tc.drain)
			}
		})
	}
}

func TestDecodeOneUsesTheCatalogAndItsDefault(t *testing.T) {
	cases := []struct {
		name string
		line string
		want verdict
		mn   string
	}{
		{"a row-remap failure is a case for service", "NVRM: Xid (PCI:0000:3b:00): 64, Row Remapper Error: (0x0000000000abcdef) - Row Remapping table is full",
			verdict{fault.ComponentMemory, fault.SeverityFatal, fault.ActionService, false, -1, ""}, "INFOROM_DRAM_RETIREMENT_FAILURE"},
		{"a GPU fallen off the bus reboots the node", "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
			verdict{fault.ComponentPCIe, fault.SeverityFatal, fault.ActionRebootNode, false, -1, ""}, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"},
		{"an XID not in the catalog is a warning to investigate", "NVRM: Xid (PCI:0000:3b:00): 999, something new",
			verdict{fault.ComponentGPU, fault.SeverityWarning, fault.ActionNone, false, -1, ""}, "UNKNOWN"},
		{"a 45 that names its cause is a consequence", "NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=x, Ch 00000010 caused by previous Xid 95",
			verdict{fault.ComponentDriver, fault.SeverityInfo, fault.ActionNone, false, -1, ""}, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecodeOne(mustParse(t, tc.line))
			if got := verdictOf(d); got != tc.want || d.Entry.Mnemonic != tc.mn {
				t.Errorf("got %+v %s, want %+v %s", got, d.Entry.Mnemonic, tc.want, tc.mn)
			}
		})
	}
}

func TestAnXID13NamesItsGPCAndTPC(t *testing.T) {
	d := DecodeOne(mustParse(t, "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address"))
	if d.Location != "GPC 1, TPC 0" {
		t.Errorf("location %q", d.Location)
	}
}
