package doctor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host/cdi"
	"github.com/gpunode/gpunode/internal/xid"
)

// device is a GPU with nothing wrong with it.
func device(i int) gpu.Device {
	return gpu.Device{
		Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA H100 80GB HBM3",
		PCI:            gpu.PCI{BusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i), LinkGen: 5, LinkGenMax: 5, LinkWidth: 16, LinkWidthMax: 16},
		ECC:            gpu.ECC{Enabled: true, PendingEnabled: true},
		RecoveryAction: gpu.RecoveryNone,
	}
}

// xidOn is the kernel log's XID report for the GPU of index i (attributed by bus ID only).
func xidOn(i, code int, msg string) xid.Event {
	pci := fmt.Sprintf("0000:%02x:00", 0x18+i)
	return xid.Event{XID: code, PCI: pci, GPUInstance: -1, ComputeInstance: -1, Message: msg,
		Line: fmt.Sprintf("NVRM: Xid (PCI:%s): %d, pid=1234, name=python3, %s", pci, code, msg)}
}

func TestDiagnoseJudgesGPUsByTheHealthRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(f *Facts)
		status Status // of GPU 1's probe ("" when GPU 1 has none)
		cause  string // a fragment of the report's cause (a broken GPU) or of GPU 1's detail
		fix    string // a fragment of the fix
	}{
		{"healthy GPUs pass with one probe", func(*Facts) {}, "", "", ""},
		{"a GPU that stopped answering is broken and needs a reboot", func(f *Facts) {
			f.Snapshot.Devices[1].SetErr(gpu.FieldDevice, fmt.Errorf("GPU 1: %w", gpu.ErrGPULost))
		}, Broken, "GPU not answering", "reboot"},
		{"a pending row remap is broken and needs a GPU reset", func(f *Facts) {
			f.Snapshot.Devices[1].RowRemap.Pending = true
		}, Broken, "row remap pending", "nvidia-smi -r -i GPU-1"},
		{"a row-remap failure is broken and needs service", func(f *Facts) {
			f.Snapshot.Devices[1].RowRemap.Failure = true
		}, Broken, "row remapping FAILED", "RMA"},
		{"an XID 79 since boot is broken even when the GPU answers again", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 79, "GPU has fallen off the bus.")}
		}, Broken, "XID 79", "reboot"},
		{"an XID the catalog calls for a GPU reset is broken", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 95, "Uncontained: FBHUB. RST: Yes, D-RST: No")}
		}, Broken, "XID 95", "reset it"},
		{"an XID that only needs the application restarted is a warning", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 13, "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)")}
		}, Warn, "xid-13", ""},
		{"an XID the catalog ignores is no finding", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 43, "Ch 00000008, intr 00000000")}
		}, "", "", ""},
		{"a downgraded PCIe link is judged as the monitor judges it", func(f *Facts) {
			f.Snapshot.Devices[1].PCI.LinkWidth = 8
		}, Broken, "x8, width below x16", "reseat the GPU or its riser"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.mutate(&f)
			r := Diagnose(f)
			p, ok := gpuProbe1(r)
			switch {
			case tc.status == "" && ok:
				t.Fatalf("GPU 1 has a probe %+v", p)
			case tc.status == "":
				if r.BrokenLayer != 0 || !hasProbe(r, "GPU health", OK) {
					t.Fatalf("want every layer working and a passing GPU health probe: %s, %+v", r.Verdict, r.Probes)
				}
				return
			case !ok:
				t.Fatalf("no probe for GPU 1: %+v", r.Probes)
			}
			if p.Status != tc.status || p.Layer != 1 {
				t.Fatalf("GPU 1: layer %d %s, want layer 1 %s (%+v)", p.Layer, p.Status, tc.status, p)
			}
			if *p.GPU != (GPURef{Index: 1, UUID: "GPU-1", BusID: "00000000:19:00.0"}) {
				t.Errorf("GPU 1 named %+v", *p.GPU)
			}
			if !strings.Contains(p.Detail, tc.cause) || !strings.Contains(p.Fix, tc.fix) {
				t.Errorf("detail %q, fix %q: want %q and %q", p.Detail, p.Fix, tc.cause, tc.fix)
			}
			if tc.status != Broken {
				if r.BrokenLayer != 0 {
					t.Errorf("a warning broke layer %d: %s", r.BrokenLayer, r.Verdict)
				}
				return
			}
			if r.BrokenLayer != 1 || !strings.Contains(r.Cause, "GPU 1 (GPU-1, 00000000:19:00.0)") || !strings.Contains(r.Cause, tc.cause) {
				t.Errorf("report: layer %d, cause %q", r.BrokenLayer, r.Cause)
			}
			if !strings.Contains(r.Verdict, "1 GPU is broken") {
				t.Errorf("verdict %q", r.Verdict)
			}
		})
	}
}

func TestABrokenGPUDoesNotHideABrokenLayerAboveIt(t *testing.T) {
	f := healthy()
	f.Snapshot.Devices[0].RowRemap.Pending = true
	f.Host.CDI.Specs[0].Stale = []cdi.StaleRef{{Device: "GPU-x", Kind: cdi.RefGPUUUID, Missing: "GPU-x"}}
	r := Diagnose(f)
	if r.BrokenLayer != 1 || fmt.Sprint(r.BrokenLayers) != "[1 2]" {
		t.Fatalf("broken layers %v (first %d), want [1 2]: %+v", r.BrokenLayers, r.BrokenLayer, r.Probes)
	}
	for _, p := range r.Probes {
		if p.Layer == 3 && (p.Status != Skipped || !strings.Contains(p.Detail, "layer 2")) {
			t.Errorf("layer 3 should be skipped for the broken layer 2: %+v", p)
		}
	}
}

func TestADriverThatDoesNotAnswerStillStopsTheWalk(t *testing.T) {
	f := healthy()
	f.Snapshot.Devices[0].RowRemap.Pending = true
	f.DevNodes = nil
	r := Diagnose(f)
	if fmt.Sprint(r.BrokenLayers) != "[1]" || !hasProbe(r, LayerName(2), Skipped) {
		t.Fatalf("broken layers %v: %+v", r.BrokenLayers, r.Probes)
	}
	for _, p := range r.Probes {
		if p.GPU != nil {
			t.Errorf("a GPU judged behind missing device nodes: %+v", p)
		}
	}
}

func TestAnXIDRepeatedByTheDriversOwnLineIsOneFinding(t *testing.T) {
	f := healthy()
	off := xidOn(1, 79, "GPU has fallen off the bus.")
	derived := off
	derived.Derived, derived.Line = true, "NVRM: GPU 0000:19:00.0: GPU has fallen off the bus."
	f.XIDs = []xid.Event{off, derived}
	p, ok := gpuProbe1(Diagnose(f))
	if !ok || len(p.Findings) != 1 || len(p.Findings[0].Evidence) != 2 {
		t.Fatalf("want one xid-79 finding with both lines: %+v", p)
	}
}

func TestAnXIDOnAGPUTheDriverNoLongerListsIsNamedByItsBusID(t *testing.T) {
	f := healthy()
	f.XIDs = []xid.Event{{XID: 79, PCI: "0000:c1:00", Message: "GPU has fallen off the bus.", Line: "NVRM: Xid (PCI:0000:c1:00): 79"}}
	r := Diagnose(f)
	if r.BrokenLayer != 1 || !strings.Contains(r.Cause, "0000:c1:00") || !hasProbe(r, "GPU at 0000:c1:00", Broken) {
		t.Fatalf("%s: %s %+v", r.Verdict, r.Cause, r.Probes)
	}
}

func gpuProbe1(r Report) (Probe, bool) {
	for _, p := range r.Probes {
		if p.GPU != nil && p.GPU.Index == 1 {
			return p, true
		}
	}
	return Probe{}, false
}

func hasProbe(r Report, name string, s Status) bool {
	for _, p := range r.Probes {
		if p.Name == name && p.Status == s {
			return true
		}
	}
	return false
}

// TestEveryFindingPrintsTheFixOfItsCause pairs each fault doctor can find on a GPU with the
// fix it prints: the fix of the cause, never of the action alone, and never one that the
// cause's own repair contradicts.
func TestEveryFindingPrintsTheFixOfItsCause(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(f *Facts)
		fix    string // a fragment of GPU 1's fix
		never  string // a fragment the fix must not have
	}{
		{"a narrow PCIe link is reseated, not only reset", func(f *Facts) { f.Snapshot.Devices[1].PCI.LinkWidth = 8 }, "reseat the GPU or its riser", "remediation do it"},
		{"an incomplete fabric registration restarts the fabric manager, not the GPU", func(f *Facts) {
			f.Snapshot.Devices[1].Fabric = gpu.Fabric{State: "in-progress"}
		}, "systemctl restart nvidia-fabricmanager", "nvidia-smi -r"},
		{"a down NVLink drains peer-to-peer work and checks the fabric", func(f *Facts) {
			f.Snapshot.Devices[1].NVLinks = []gpu.NVLink{{Link: 0, Active: true}, {Link: 1, Active: false}}
		}, "no peer-to-peer work", "RMA"},
		{"a pending row remap is applied by a reset", func(f *Facts) { f.Snapshot.Devices[1].RowRemap.Pending = true }, "the reset applies the remap", "reseat"},
		{"a failed row remap is serviced", func(f *Facts) { f.Snapshot.Devices[1].RowRemap.Failure = true }, "RMA", "nvidia-smi -r"},
		{"a pending page retirement is applied by a reset", func(f *Facts) { f.Snapshot.Devices[1].RetiredPages.Pending = true }, "the reset retires the pages", "reseat"},
		{"one contained uncorrected ECC error restarts the application", func(f *Facts) { f.Snapshot.Devices[1].ECC.VolatileUncorrected = 1 }, "restart the application", "nvidia-smi -r"},
		{"a second uncorrected ECC error resets the GPU", func(f *Facts) { f.Snapshot.Devices[1].ECC.VolatileUncorrected = 2 }, "nvidia-smi -r -i GPU-1", "reseat"},
		{"many PCIe replays are a marginal link", func(f *Facts) { f.Snapshot.Devices[1].PCI.ReplayCounter = 1 << 20 }, "marginal link", "nvidia-smi -r"},
		{"a lost GPU needs a reboot", func(f *Facts) {
			f.Snapshot.Devices[1].SetErr(gpu.FieldDevice, fmt.Errorf("GPU 1: %w", gpu.ErrGPULost))
		}, "reboot", "nvidia-smi -r"},
		{"the driver's own recovery action is followed", func(f *Facts) { f.Snapshot.Devices[1].RecoveryAction = gpu.RecoveryNodeReboot }, "reboot it, as the driver asks", "reseat"},
		{"an XID that falls off the bus reboots: the catalog says a reset cannot bring it back", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 79, "GPU has fallen off the bus.")}
		}, "reboot", "nvidia-smi -r"},
		{"an XID the catalog resets names the command that explains it", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 95, "Uncontained: FBHUB. RST: Yes, D-RST: No")}
		}, "gpunode xid explain 95", "reseat"},
		{"a contained XID 94 restarts the application", func(f *Facts) {
			f.XIDs = []xid.Event{xidOn(1, 94, "Contained: SM (0x1). RST: No, D-RST: No")}
		}, "restart the application", "nvidia-smi -r"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.mutate(&f)
			r := Diagnose(f)
			p, ok := gpuProbe1(r)
			if !ok {
				t.Fatalf("no probe for GPU 1: %+v", r.Probes)
			}
			if !strings.Contains(p.Fix, tc.fix) || strings.Contains(p.Fix, tc.never) {
				t.Errorf("fix %q: want %q, never %q", p.Fix, tc.fix, tc.never)
			}
			for _, q := range r.Probes {
				if q.GPU != nil && q.GPU.Index != 1 {
					t.Errorf("a healthy GPU got a probe with a fix: %+v", q)
				}
			}
		})
	}
}

// TestAnNVSwitchSXidIsNoGPUsXID: the kernel log's NVSwitch errors are the switch's, not a
// GPU's, and doctor counts none of them as a GPU's XID.
func TestAnNVSwitchSXidIsNoGPUsXID(t *testing.T) {
	f := healthy()
	var sc xid.Scanner
	ev, ok := sc.Line("nvidia-nvswitch0: SXid (PCI:0000:19:00.0): 12028, Non-fatal, Link 34 egress non-posted PRIV error (First)")
	if !ok || ev.Kind != xid.KindSXid {
		t.Fatalf("the SXid line was not read as one: %+v", ev)
	}
	evs := []xid.Event{ev}
	f.XIDs = evs
	r := Diagnose(f)
	if !hasProbe(r, "GPU health", OK) {
		t.Fatalf("an SXid made a GPU finding: %+v", r.Probes)
	}
}
