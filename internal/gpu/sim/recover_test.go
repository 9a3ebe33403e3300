package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestAGPUResetUndoesWhatAResetClearsAndKeepsWhatPersists(t *testing.T) {
	tests := []struct {
		name  string
		fault string
		check func(d gpu.Device, bw float64) string
	}{
		{"a GPU lost after xid 79 answers again", "type: xid\ngpu: 2\nxid: 79", func(d gpu.Device, _ float64) string {
			return want(d.Err(gpu.FieldDevice) == nil && d.Err(gpu.FieldTemperature) == nil, "errors %+v", d.Errors)
		}},
		{"a pending row remap is carried out", "type: row-remap-pending\ngpu: 2", func(d gpu.Device, _ float64) string {
			return want(!d.RowRemap.Pending && d.RowRemap.Uncorrectable == 1, "row remap %+v", d.RowRemap)
		}},
		{"volatile ECC counters start over and aggregate ones persist", "type: ecc-uncorrected\ngpu: 2\ncount: 3", func(d gpu.Device, _ float64) string {
			return want(d.ECC.VolatileUncorrected == 0 && d.ECC.AggregateUncorrected == 3, "ecc %+v", d.ECC)
		}},
		{"a downtrained link retrains", "type: pcie-downgrade\ngpu: 2\nlinkWidth: 8", func(d gpu.Device, _ float64) string {
			return want(d.PCI.LinkWidth == 16, "pci %+v", d.PCI)
		}},
		{"a slowdown ends", "type: slow-bandwidth\ngpu: 2\nfactor: 0.5", func(_ gpu.Device, bw float64) string {
			return want(bw == 1, "bandwidth factor %g", bw)
		}},
		{"a row-remap failure persists", "type: row-remap-failure\ngpu: 2", func(d gpu.Device, _ float64) string {
			return want(d.RowRemap.Failure, "row remap %+v", d.RowRemap)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk := backendAt(t, tt.fault)
			clk.Advance(11 * time.Second)
			uuid := b.base[2].UUID
			if err := b.ResetGPU(uuid); err != nil {
				t.Fatalf("ResetGPU: %v", err)
			}
			snap, err := b.Snapshot(context.Background())
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			bw, _ := b.PerfFactor(2)
			if msg := tt.check(snap.Devices[2], bw); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestAFaultAfterAResetAppliesAgain(t *testing.T) {
	b, clk := backendAt(t, "type: xid\ngpu: 1\nxid: 79")
	clk.Advance(11 * time.Second)
	if err := b.ResetGPU(b.base[1].UUID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := b.Inject(Fault{Type: FaultXID, GPU: 1, XID: 79}); err != nil {
		t.Fatal(err)
	}
	snap, _ := b.Snapshot(context.Background())
	if snap.Devices[1].Err(gpu.FieldDevice) == nil {
		t.Error("GPU 1 answers after a second xid 79 following its reset; want it lost again")
	}
}

func TestARebootChangesTheBootIDAndStartsTheKernelLogOver(t *testing.T) {
	b, clk := backendAt(t, "type: xid\ngpu: 0\nxid: 79")
	clk.Advance(11 * time.Second)
	before := b.BootID()
	if len(b.KernelLog()) == 0 {
		t.Fatal("no kernel-log lines before the reboot")
	}
	if err := b.Reboot(); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	if after := b.BootID(); after == before {
		t.Errorf("boot ID %q unchanged by a reboot", after)
	}
	lines := b.KernelLog()
	if len(lines) != 1 || !strings.Contains(lines[0].Text, "Linux version") {
		t.Errorf("kernel log after the reboot = %+v, want only the boot banner", lines)
	}
	snap, _ := b.Snapshot(context.Background())
	if snap.Devices[0].Err(gpu.FieldDevice) != nil {
		t.Errorf("GPU 0 still lost after a reboot: %+v", snap.Devices[0].Errors)
	}
}

func TestResettingAnUnknownGPUIsAnError(t *testing.T) {
	b, _ := backendAt(t, "type: xid\ngpu: 0\nxid: 31")
	if err := b.ResetGPU("GPU-not-here"); err == nil || !strings.Contains(err.Error(), "GPU-not-here") {
		t.Errorf("ResetGPU(unknown) = %v, want an error naming the GPU", err)
	}
}
