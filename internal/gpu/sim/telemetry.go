package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

var _ gpu.TelemetrySource = (*Backend)(nil)

// clockModel is a GPU model's memory clock and its SM clock when idle and when slowed down
// by a hardware slowdown (thermal or power brake), in MHz.
type clockModel struct{ idleSM, slowSM, mem uint32 }

// clockModels by device name; a model not listed gets defaultClocks.
var clockModels = map[string]clockModel{
	"NVIDIA A100-SXM4-80GB": {idleSM: 210, slowSM: 705, mem: 1593},
	"NVIDIA H100 80GB HBM3": {idleSM: 345, slowSM: 990, mem: 2619},
	"NVIDIA H200":           {idleSM: 345, slowSM: 990, mem: 3201},
	"NVIDIA B200":           {idleSM: 120, slowSM: 960, mem: 3996},
}

var defaultClocks = clockModel{idleSM: 300, slowSM: 900, mem: 1500}

// uptimeBeforeStart is how long the simulated driver had been loaded when the backend
// started: the energy counter starts from that much idle draw, not from 0.
const uptimeBeforeStart = time.Hour

// telemetryDeps lists, per telemetry value, the snapshot facts whose failure it shares: a
// fact a scenario marks failed or not supported (or a lost GPU) takes the value with it.
var telemetryDeps = map[gpu.Field][]gpu.Field{
	gpu.FieldClocks:            {gpu.FieldDevice, gpu.FieldClockEvents},
	gpu.FieldTemperature:       {gpu.FieldDevice, gpu.FieldTemperature},
	gpu.FieldMemoryTemperature: {gpu.FieldDevice, gpu.FieldTemperature},
	gpu.FieldPower:             {gpu.FieldDevice, gpu.FieldPower},
	gpu.FieldEnergy:            {gpu.FieldDevice, gpu.FieldPower},
	gpu.FieldUtilization:       {gpu.FieldDevice},
	gpu.FieldEncoder:           {gpu.FieldDevice},
	gpu.FieldDecoder:           {gpu.FieldDevice},
	gpu.FieldMemory:            {gpu.FieldDevice, gpu.FieldMemory},
	gpu.FieldMemoryReserved:    {gpu.FieldDevice, gpu.FieldMemory},
	gpu.FieldPCIeReplay:        {gpu.FieldDevice, gpu.FieldPCIeReplay},
	gpu.FieldNVLinkThroughput:  {gpu.FieldDevice, gpu.FieldNVLink},
	gpu.FieldECCErrors:         {gpu.FieldDevice, gpu.FieldECCErrors},
	gpu.FieldRowRemap:          {gpu.FieldDevice, gpu.FieldRowRemap},
	gpu.FieldRecoveryAction:    {gpu.FieldDevice, gpu.FieldRecoveryAction},
}

// Telemetry implements gpu.TelemetrySource from the same replayed state as Snapshot: idle
// clocks (slowed SM clock under a hardware slowdown), the snapshot's temperatures, power
// draw, PCIe replays, ECC counts, remapped rows and recovery action, zero utilisation, an
// energy counter that grows at the power draw (each power-throttle fault changes the rate
// from its time on), and no NVLink traffic.
func (b *Backend) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim telemetry: %w", err)
	}
	if _, err := b.loadedDriver(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	now := b.clock()
	faults := b.faults // never modified in place
	b.mu.Unlock()
	elapsed := now.Sub(b.start)
	st := replay(b.base, faults, b.start, elapsed)
	t := &gpu.Telemetry{Time: now, Devices: make([]gpu.DeviceTelemetry, 0, len(st.devs))}
	for i := range st.devs {
		t.Devices = append(t.Devices, deviceTelemetry(&st.devs[i], energyMJ(b.base[i].Power.DrawW, i, faults, elapsed)))
	}
	return t, nil
}

// deviceTelemetry derives one GPU's telemetry from its replayed state.
func deviceTelemetry(d *gpu.Device, energy uint64) gpu.DeviceTelemetry {
	clocks, ok := clockModels[d.Name]
	if !ok {
		clocks = defaultClocks
	}
	sm := clocks.idleSM
	for _, c := range d.ClockEvents {
		if c == gpu.ClockEventHWSlowdown {
			sm = clocks.slowSM
		}
	}
	total := d.Memory.TotalMiB
	reserved := total / 256 // the driver's reserve: about 0.4 % of the framebuffer
	used := min(d.Memory.UsedMiB, total-reserved)
	t := gpu.DeviceTelemetry{
		Index: d.Index, UUID: d.UUID,
		SMClockMHz: sm, MemClockMHz: clocks.mem,
		GPUTempC: d.Thermal.GPUC, MemTempC: d.Thermal.MemoryC,
		PowerW: d.Power.DrawW, EnergyMJ: energy,
		FBFreeMiB: total - reserved - used, FBUsedMiB: used, FBReservedMiB: reserved,
		PCIeReplays:  d.PCI.ReplayCounter,
		ECCSingleBit: d.ECC.VolatileCorrected, ECCDoubleBit: d.ECC.VolatileUncorrected,
		RowsCorrectable: d.RowRemap.Correctable, RowsUncorrectable: d.RowRemap.Uncorrectable,
		RowRemapFailure: d.RowRemap.Failure, RecoveryAction: d.RecoveryAction,
	}
	for f, deps := range telemetryDeps {
		for _, dep := range deps {
			if e, failed := d.Errors[dep]; failed {
				if t.Errors == nil {
					t.Errors = map[gpu.Field]gpu.FieldError{}
				}
				t.Errors[f] = e
				break
			}
		}
	}
	if _, failed := t.Errors[gpu.FieldMemoryTemperature]; !failed && d.Thermal.MemoryC == 0 {
		t.SetErr(gpu.FieldMemoryTemperature, fmt.Errorf("memory temperature: %w", gpu.ErrNotSupported))
	}
	return t
}

// energyMJ integrates GPU i's power draw from uptimeBeforeStart before the start to elapsed:
// base is its draw until its first power-throttle fault that sets a draw, each of which
// sets the draw from its time on. The result never decreases as elapsed grows.
func energyMJ(base float64, i int, faults []Fault, elapsed time.Duration) uint64 {
	draw, from := base, -uptimeBeforeStart
	joules := 0.0
	for _, f := range faults {
		if f.At > elapsed {
			break
		}
		if f.Type != FaultPowerThrottle || f.GPU != i || f.PowerW <= 0 {
			continue
		}
		joules += draw * (f.At - from).Seconds()
		draw, from = f.PowerW, f.At
	}
	joules += draw * (elapsed - from).Seconds()
	return uint64(joules * 1000)
}
