package sim

import (
	"context"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

func telemetryOf(t *testing.T, b *Backend) *gpu.Telemetry {
	t.Helper()
	tel, err := b.Telemetry(context.Background())
	if err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	return tel
}

func TestTelemetryOfAnIdlePresetMatchesItsSnapshot(t *testing.T) {
	clk := newClock()
	b := load(t, "h100x8", WithClock(clk.Now))
	snap := snapshot(t, b)
	tel := telemetryOf(t, b)
	if len(tel.Devices) != 8 || !tel.Time.Equal(clk.Now()) {
		t.Fatalf("%d devices at %v, want 8 at %v", len(tel.Devices), tel.Time, clk.Now())
	}
	for i, d := range tel.Devices {
		s := snap.Devices[i]
		checks := []struct {
			name string
			ok   bool
		}{
			{"the identity is the snapshot's", d.Index == i && d.UUID == s.UUID},
			{"nothing failed", len(d.Errors) == 0},
			{"clocks are the H100's idle clocks", d.SMClockMHz == 345 && d.MemClockMHz == 2619},
			{"temperatures are the snapshot's", d.GPUTempC == s.Thermal.GPUC && d.MemTempC == s.Thermal.MemoryC && d.MemTempC > 0},
			{"power is the snapshot's draw", d.PowerW == s.Power.DrawW},
			{"an idle GPU is not utilised", d.GPUUtil == 0 && d.MemCopyUtil == 0 && d.EncUtil == 0 && d.DecUtil == 0},
			{"the framebuffer adds up", d.FBFreeMiB+d.FBUsedMiB+d.FBReservedMiB == s.Memory.TotalMiB && d.FBReservedMiB > 0},
			{"no errors, no remapped rows, no action", d.ECCSingleBit == 0 && d.ECCDoubleBit == 0 && d.RowsUncorrectable == 0 && !d.RowRemapFailure && d.RecoveryAction == gpu.RecoveryNone},
			{"the energy counter holds an hour of idle draw", d.EnergyMJ == uint64(s.Power.DrawW*3600*1000)},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("GPU %d: %s: %+v", i, c.name, d)
			}
		}
	}
}

func TestTelemetryEnergyGrowsAtThePowerDraw(t *testing.T) {
	b, clk := backendAt(t, "type: power-throttle\ngpu: 4\npowerW: 650")
	e0 := telemetryOf(t, b).Devices[4]
	draw := e0.PowerW
	clk.Advance(10 * time.Second) // the throttle fault's time
	e10 := telemetryOf(t, b).Devices[4]
	clk.Advance(5 * time.Second)
	e15 := telemetryOf(t, b).Devices[4]
	near := func(got, want float64) bool { return got > want-2 && got < want+2 } // mJ rounding
	if got, want := float64(e10.EnergyMJ-e0.EnergyMJ), draw*10*1000; !near(got, want) {
		t.Errorf("energy over 10 s at %g W grew %g mJ, want %g", draw, got, want)
	}
	if got, want := float64(e15.EnergyMJ-e10.EnergyMJ), 650.0*5*1000; !near(got, want) {
		t.Errorf("energy over 5 s at 650 W grew %g mJ, want %g", got, want)
	}
	if e15.PowerW != 650 || e15.SMClockMHz != 990 {
		t.Errorf("throttled GPU draws %g W at %d MHz, want 650 W at the slowed 990 MHz", e15.PowerW, e15.SMClockMHz)
	}
}

func TestTelemetryCarriesTheFaultState(t *testing.T) {
	cases := []struct {
		name  string
		fault string
		gpu   int
		check func(d gpu.DeviceTelemetry) bool
	}{
		{"corrected ECC errors count as single-bit", "type: ecc-corrected\ngpu: 1\ncount: 5", 1,
			func(d gpu.DeviceTelemetry) bool { return d.ECCSingleBit == 5 && d.ECCDoubleBit == 0 }},
		{"an Xid 48 counts a double-bit error", "type: xid\ngpu: 1\nxid: 48", 1,
			func(d gpu.DeviceTelemetry) bool { return d.ECCDoubleBit == 1 }},
		{"a pending remap counts an uncorrectable row", "type: row-remap-pending\ngpu: 3\ncount: 2", 3,
			func(d gpu.DeviceTelemetry) bool { return d.RowsUncorrectable == 2 && !d.RowRemapFailure }},
		{"a remap failure is flagged", "type: row-remap-failure\ngpu: 3", 3,
			func(d gpu.DeviceTelemetry) bool { return d.RowRemapFailure }},
		{"the driver's recovery action is carried", "type: recovery-action\ngpu: 6\naction: node-reboot", 6,
			func(d gpu.DeviceTelemetry) bool { return d.RecoveryAction == gpu.RecoveryNodeReboot }},
		{"a thermal slowdown raises the temperature", "type: thermal-throttle\ngpu: 0\ntemperatureC: 93", 0,
			func(d gpu.DeviceTelemetry) bool { return d.GPUTempC == 93 && d.SMClockMHz == 990 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := backendAt(t, tc.fault)
			if d := telemetryOf(t, b).Devices[tc.gpu]; tc.check(d) {
				t.Fatalf("the fault shows before its time: %+v", d)
			}
			clk.Advance(10 * time.Second)
			if d := telemetryOf(t, b).Devices[tc.gpu]; !tc.check(d) {
				t.Errorf("telemetry after the fault: %+v", d)
			}
		})
	}
}

func TestTelemetryOmitsWhatTheSimulatedGPUCannotReport(t *testing.T) {
	b, clk := backendAt(t, "type: gpu-lost\ngpu: 2")
	clk.Advance(10 * time.Second)
	lost := telemetryOf(t, b).Devices[2]
	if lost.UUID == "" {
		t.Error("a lost GPU lost its UUID too")
	}
	for f := range telemetryDeps {
		if e, ok := lost.Errors[f]; !ok || !e.Lost {
			t.Errorf("lost GPU: %s error %+v, want lost", f, e)
		}
	}
	one := load(t, "h200x1")
	d := telemetryOf(t, one).Devices[0]
	if e, ok := d.Errors[gpu.FieldNVLinkThroughput]; !ok || !e.NotSupported {
		t.Errorf("a PCIe H200 without NVLink: throughput error %+v, want not supported", e)
	}
	if len(d.Errors) != 1 || d.MemClockMHz != 3201 {
		t.Errorf("a PCIe H200: errors %v, memory clock %d, want only NVLink and 3201 MHz", d.Errors, d.MemClockMHz)
	}
}

func TestTelemetryStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := load(t, "h100x8").Telemetry(ctx); err == nil {
		t.Error("Telemetry with a cancelled context succeeded")
	}
}
