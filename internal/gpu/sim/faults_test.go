package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// backendAt parses a scenario with one fault at 10s on the h100x8 preset.
func backendAt(t *testing.T, fault string) (*Backend, *fakeClock) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: gpunode.dev/sim/v1\npreset: h100x8\nfaults:\n  - at: 10s\n")
	for _, l := range strings.Split(strings.TrimSpace(fault), "\n") {
		b.WriteString("    " + l + "\n")
	}
	s, err := Parse("fault.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	clk := newClock()
	be, err := New(s, WithClock(clk.Now))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return be, clk
}

func TestEachFaultTypeChangesStateFromItsTimeOn(t *testing.T) {
	cases := []struct {
		name  string
		fault string
		gpu   int
		check func(d gpu.Device, bw, compute float64) string
	}{
		{"xid 79 makes the GPU lost", "type: xid\ngpu: 2\nxid: 79", 2, lostCheck},
		{"gpu-lost makes every fact but the identity fail", "type: gpu-lost\ngpu: 2", 2, lostCheck},
		{"ecc-corrected adds to the corrected counters", "type: ecc-corrected\ngpu: 1\ncount: 5", 1, func(d gpu.Device, _, _ float64) string {
			return want(d.ECC.VolatileCorrected == 5 && d.ECC.AggregateCorrected == 5, "ecc %+v", d.ECC)
		}},
		{"ecc-uncorrected adds to the uncorrected counters", "type: ecc-uncorrected\ngpu: 1", 1, func(d gpu.Device, _, _ float64) string {
			return want(d.ECC.VolatileUncorrected == 1 && d.ECC.AggregateUncorrected == 1, "ecc %+v", d.ECC)
		}},
		{"xid 48 counts an uncorrected error", "type: xid\ngpu: 1\nxid: 48", 1, func(d gpu.Device, _, _ float64) string {
			return want(d.ECC.VolatileUncorrected == 1, "ecc %+v", d.ECC)
		}},
		{"xid 95 counts an uncorrected error", "type: xid\ngpu: 1\nxid: 95", 1, func(d gpu.Device, _, _ float64) string {
			return want(d.ECC.AggregateUncorrected == 1, "ecc %+v", d.ECC)
		}},
		{"row-remap-pending sets pending", "type: row-remap-pending\ngpu: 3", 3, func(d gpu.Device, _, _ float64) string {
			return want(d.RowRemap.Pending && d.RowRemap.Uncorrectable == 1 && !d.RowRemap.Failure, "row remap %+v", d.RowRemap)
		}},
		{"xid 63 sets row remap pending", "type: xid\ngpu: 3\nxid: 63", 3, func(d gpu.Device, _, _ float64) string {
			return want(d.RowRemap.Pending, "row remap %+v", d.RowRemap)
		}},
		{"row-remap-failure sets failure", "type: row-remap-failure\ngpu: 3", 3, func(d gpu.Device, _, _ float64) string {
			return want(d.RowRemap.Failure, "row remap %+v", d.RowRemap)
		}},
		{"xid 64 sets row remap failure", "type: xid\ngpu: 3\nxid: 64", 3, func(d gpu.Device, _, _ float64) string {
			return want(d.RowRemap.Failure, "row remap %+v", d.RowRemap)
		}},
		{"pcie-downgrade lowers the link", "type: pcie-downgrade\ngpu: 4\nlinkGen: 3\nlinkWidth: 8", 4, func(d gpu.Device, _, _ float64) string {
			return want(d.PCI.LinkGen == 3 && d.PCI.LinkWidth == 8 && d.PCI.LinkGenMax == 5 && d.PCI.LinkWidthMax == 16, "pci %+v", d.PCI)
		}},
		{"nvlink-down takes the named links down", "type: nvlink-down\ngpu: 5\nlinks: [2, 17]", 5, func(d gpu.Device, _, _ float64) string {
			var down []int
			for _, l := range d.NVLinks {
				if !l.Active {
					down = append(down, l.Link)
				}
			}
			return want(slices.Equal(down, []int{2, 17}), "down links %v", down)
		}},
		{"nvlink-down without links takes them all down", "type: nvlink-down\ngpu: 5", 5, func(d gpu.Device, _, _ float64) string {
			return want(!slices.ContainsFunc(d.NVLinks, func(l gpu.NVLink) bool { return l.Active }), "links %v", d.NVLinks)
		}},
		{"thermal-throttle heats the GPU and sets the hw thermal event", "type: thermal-throttle\ngpu: 6\ntemperatureC: 93", 6, func(d gpu.Device, _, _ float64) string {
			return want(d.Thermal.GPUC == 93 && slices.Equal(d.ClockEvents, []gpu.ClockEvent{gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal}),
				"thermal %+v events %v", d.Thermal, d.ClockEvents)
		}},
		{"thermal-throttle without a temperature goes past slowdown", "type: thermal-throttle\ngpu: 6", 6, func(d gpu.Device, _, _ float64) string {
			return want(d.Thermal.GPUC > d.Thermal.SlowdownC, "thermal %+v", d.Thermal)
		}},
		{"power-throttle sets the power brake event", "type: power-throttle\ngpu: 7\npowerW: 690", 7, func(d gpu.Device, _, _ float64) string {
			return want(d.Power.DrawW == 690 && slices.Contains(d.ClockEvents, gpu.ClockEventHWPowerBrake) && !slices.Contains(d.ClockEvents, gpu.ClockEventIdle),
				"power %+v events %v", d.Power, d.ClockEvents)
		}},
		{"recovery-action sets the driver's verdict", "type: recovery-action\ngpu: 0\naction: drain-and-reset", 0, func(d gpu.Device, _, _ float64) string {
			return want(d.RecoveryAction == gpu.RecoveryDrainAndReset, "recovery %q", d.RecoveryAction)
		}},
		{"xid 154 takes the action from its message", "type: xid\ngpu: 0\nxid: 154\nmessage: GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", 0, func(d gpu.Device, _, _ float64) string {
			return want(d.RecoveryAction == gpu.RecoveryNodeReboot, "recovery %q", d.RecoveryAction)
		}},
		{"slow-bandwidth scales bandwidth only", "type: slow-bandwidth\ngpu: 1\nfactor: 0.5", 1, func(_ gpu.Device, bw, c float64) string {
			return want(bw == 0.5 && c == 1, "perf %g %g", bw, c)
		}},
		{"slow-compute scales compute only", "type: slow-compute\ngpu: 1\nfactor: 0.25", 1, func(_ gpu.Device, bw, c float64) string {
			return want(bw == 1 && c == 0.25, "perf %g %g", bw, c)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, clk := backendAt(t, c.fault)
			base, _ := PresetScenario("h100x8")
			clk.Advance(10*time.Second - time.Nanosecond)
			before := snapshot(t, b).Devices[c.gpu]
			if !reflect.DeepEqual(before, base.Devices[c.gpu]) {
				t.Errorf("before its time the fault already changed GPU %d:\n%+v\n%+v", c.gpu, before, base.Devices[c.gpu])
			}
			if bw, cp := b.PerfFactor(c.gpu); bw != 1 || cp != 1 {
				t.Errorf("before its time perf = %g %g", bw, cp)
			}
			clk.Advance(time.Nanosecond)
			after := snapshot(t, b).Devices[c.gpu]
			bw, cp := b.PerfFactor(c.gpu)
			if msg := c.check(after, bw, cp); msg != "" {
				t.Error("after its time: " + msg)
			}
			for i, d := range snapshot(t, b).Devices {
				if i != c.gpu && !reflect.DeepEqual(d, base.Devices[i]) {
					t.Errorf("GPU %d changed too", i)
				}
			}
		})
	}
}

func want(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
}

func lostCheck(d gpu.Device, _, _ float64) string {
	for _, f := range []gpu.Field{gpu.FieldDevice, gpu.FieldTemperature, gpu.FieldECCErrors, gpu.FieldNVLink, gpu.FieldMemory} {
		e := d.Err(f)
		if e == nil || e.NotSupported || !strings.Contains(e.Message, gpu.ErrGPULost.Error()) {
			return fmt.Sprintf("field %s error = %v, want GPU lost", f, e)
		}
	}
	if d.Err(gpu.FieldUUID) != nil || d.Err(gpu.FieldPCI) != nil || d.UUID == "" {
		return "the identity of a lost GPU should stay readable"
	}
	return ""
}

func TestInjectAppliesAFaultFromNowOn(t *testing.T) {
	clk := newClock()
	b := load(t, "h200x8", WithClock(clk.Now))
	clk.Advance(time.Hour)
	if err := b.Inject(Fault{At: 5 * time.Hour, GPU: 4, Type: FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	d := snapshot(t, b).Devices[4]
	if e := d.Err(gpu.FieldTemperature); e == nil || !strings.Contains(e.Message, "GPU is lost") {
		t.Errorf("injected xid 79 (At ignored) did not apply now: %v", e)
	}
	lines := b.KernelLog()
	if len(lines) != 4 || !lines[2].Time.Equal(clk.Now()) || !strings.HasPrefix(lines[2].Text, "NVRM: Xid (PCI:0000:9a:00): 79, ") {
		t.Errorf("kernel log after inject = %+v", lines)
	}
	err := b.Inject(Fault{GPU: 8, Type: FaultGPULost})
	if !errors.Is(err, ErrInvalidFault) || !strings.Contains(err.Error(), "gpu index 8 out of range") {
		t.Errorf("inject on GPU 8 of 8: %v", err)
	}
	if err := b.Inject(Fault{Type: "melt"}); !errors.Is(err, ErrInvalidFault) {
		t.Errorf("inject of an unknown type: %v", err)
	}
}

func TestInjectIsSafeAlongsideReaders(t *testing.T) {
	b := load(t, "h100x8")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := b.Inject(Fault{GPU: i, Type: FaultECCCorrected}); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				_, _ = b.Snapshot(context.Background())
				_ = b.KernelLog()
			}
		}()
	}
	wg.Wait()
	for i, d := range snapshot(t, b).Devices {
		if d.ECC.VolatileCorrected != 20 {
			t.Errorf("GPU %d corrected = %d, want 20", i, d.ECC.VolatileCorrected)
		}
	}
}

func TestSnapshotsAreCopiesAndHonourTheContext(t *testing.T) {
	b := load(t, "h100x8")
	s := snapshot(t, b)
	s.Devices[0].NVLinks[0].Active = false
	s.Devices[0].ClockEvents[0] = gpu.ClockEventHWThermal
	s.Devices[0].Errors[gpu.FieldPower] = gpu.FieldError{Message: "x"}
	again := snapshot(t, b).Devices[0]
	if !again.NVLinks[0].Active || again.ClockEvents[0] != gpu.ClockEventIdle || again.Err(gpu.FieldPower) != nil {
		t.Error("changing a snapshot changed the backend")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot with a cancelled context: %v", err)
	}
	if b.Name() != "sim" || b.Close() != nil || b.Close() != nil {
		t.Error("Name or Close")
	}
	if bw, c := b.PerfFactor(8); bw != 0 || c != 0 {
		t.Errorf("PerfFactor of a missing GPU = %g %g", bw, c)
	}
}

func TestNewRejectsABadProgrammaticScenario(t *testing.T) {
	s, _ := PresetScenario("a100x8")
	s.Faults = []Fault{{GPU: 0, Type: FaultSlowBandwidth, Factor: 0}}
	if _, err := New(s); !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), "factor") {
		t.Errorf("New: %v", err)
	}
}
