package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

func texts(lines []KernelLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

func TestXidLinesUseTheDriversFormat(t *testing.T) {
	gi, ci := 1, 0
	cases := []struct {
		name  string
		fault Fault
		want  string
	}{
		{"a line without process context prints pid and name unknown",
			Fault{GPU: 0, Type: FaultXID, XID: 79, Message: "GPU has fallen off the bus."},
			"NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."},
		{"a line with a process names it",
			Fault{GPU: 3, Type: FaultXID, XID: 13, PID: 4242, Process: "python3", Message: "Graphics Exception"},
			"NVRM: Xid (PCI:0000:5d:00): 13, pid=4242, name=python3, Graphics Exception"},
		{"the bare form has neither pid nor name",
			Fault{GPU: 5, Type: FaultXID, XID: 119, NoProcess: true, Message: "Timeout waiting for RPC from GSP!"},
			"NVRM: Xid (PCI:0000:ab:00): 119, Timeout waiting for RPC from GSP!"},
		{"a MIG GPU instance is named in the address",
			Fault{GPU: 7, Type: FaultXID, XID: 94, GPUInstance: &gi, Message: "Contained: SM (0x1). RST: No, D-RST: No"},
			"NVRM: Xid (PCI:0000:db:00 GPU-I:01): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No"},
		{"a MIG compute instance follows its GPU instance",
			Fault{GPU: 7, Type: FaultXID, XID: 31, GPUInstance: &gi, ComputeInstance: &ci, PID: 7, Process: "a.out", Message: "MMU Fault"},
			"NVRM: Xid (PCI:0000:db:00 GPU-I:01 GPU-CI:00): 31, pid=7, name=a.out, MMU Fault"},
		{"a code without a message gets the driver's usual text",
			Fault{GPU: 1, Type: FaultXID, XID: 63},
			"NVRM: Xid (PCI:0000:2a:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping, reset gpu to activate."},
		{"xid 154 without a message describes the change",
			Fault{GPU: 2, Type: FaultXID, XID: 154, Action: gpu.RecoveryNodeReboot},
			"NVRM: Xid (PCI:0000:3a:00): 154, pid='<unknown>', name=<unknown>, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"},
		{"a kernel-log fault writes its line verbatim",
			Fault{Type: FaultKernelLog, Message: "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal"},
			"nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			b := load(t, "h100x8", WithClock(clk.Now))
			if err := b.Inject(c.fault); err != nil {
				t.Fatal(err)
			}
			got := texts(b.KernelLog())
			if !slices.Contains(got, c.want) {
				t.Errorf("kernel log %q lacks\n%q", got, c.want)
			}
		})
	}
}

func TestTheDriverNamesAGPUOnceBeforeItsFirstXid(t *testing.T) {
	clk := newClock()
	b := load(t, "h200x1", WithClock(clk.Now))
	d := snapshot(t, b).Devices[0]
	for _, code := range []int{13, 13, 79} {
		if err := b.Inject(Fault{GPU: 0, Type: FaultXID, XID: code}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"NVRM: GPU at PCI:0000:00:06: " + d.UUID,
		"NVRM: GPU Board Serial Number: " + d.Serial,
		"NVRM: Xid (PCI:0000:00:06): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
		"NVRM: Xid (PCI:0000:00:06): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
		"NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.",
	}
	if got := texts(b.KernelLog()); !slices.Equal(got, want) {
		t.Errorf("kernel log:\n%q\nwant\n%q", got, want)
	}
}

func TestKernelLogHoldsOnlyLinesWhoseTimeHasCome(t *testing.T) {
	clk := newClock()
	start := clk.Now()
	b := load(t, "../../../examples/scenarios/a100x8-memory-errors.yaml", WithClock(clk.Now))
	if n := len(b.KernelLog()); n != 0 {
		t.Fatalf("at start the log has %d lines", n)
	}
	clk.Advance(10 * time.Second)
	got := b.KernelLog()
	if len(got) != 4 || !got[3].Time.Equal(start.Add(10*time.Second)) {
		t.Fatalf("at 10s: %+v", got)
	}
	if got[2].Text != "NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1, subpartition 0." {
		t.Errorf("xid 48 line = %q", got[2].Text)
	}
	clk.Advance(35 * time.Second)
	got = b.KernelLog()
	if len(got) != 7 || got[6].Text != "NVRM: Xid (PCI:0000:ab:00): 94, pid=41872, name=python3, Contained: SM (0x1). RST: No, D-RST: No" {
		t.Errorf("at 45s: %q", texts(got))
	}
	d0 := snapshot(t, b).Devices[0]
	if d0.ECC.VolatileUncorrected != 1 || !d0.RowRemap.Pending {
		t.Errorf("GPU 0 after 48 and 63: ecc %+v remap %+v", d0.ECC, d0.RowRemap)
	}
}

func TestBusIDsConvertToTheDriversAddressForms(t *testing.T) {
	cases := []struct{ busID, tag, sysfs string }{
		{"00000000:18:00.0", "0000:18:00", "0000:18:00.0"},
		{"00000000:DB:00.0", "0000:db:00", "0000:db:00.0"},
		{"00000001:2A:1F.3", "0001:2a:1f", "0001:2a:1f.3"},
		{"0000:3b:00.0", "0000:3b:00", "0000:3b:00.0"},
	}
	for _, c := range cases {
		if got := pciTag(c.busID); got != c.tag {
			t.Errorf("pciTag(%q) = %q, want %q", c.busID, got, c.tag)
		}
		if got := sysfsAddr(c.busID); got != c.sysfs {
			t.Errorf("sysfsAddr(%q) = %q, want %q", c.busID, got, c.sysfs)
		}
	}
}
