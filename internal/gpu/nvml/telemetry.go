package nvml

import (
	"context"
	"errors"
	"fmt"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

var _ gpu.TelemetrySource = (*Backend)(nil)

// telemetryFields are the values a scrape reads in one nvmlDeviceGetFieldValues call per
// device (a field costs about 1 µs on an H200, against a driver round trip per separate
// call). The NVLink throughput fields take the link in scopeId; UINT_MAX sums every link.
// The energy counter comes last: it alone costs 4 ms on an H200 (the board answers it),
// so ScrapeTelemetry reads the others without it.
var telemetryFields = []gonvml.FieldValue{
	tfMemTemp:        {FieldId: gonvml.FI_DEV_MEMORY_TEMP},
	tfPCIeReplay:     {FieldId: gonvml.FI_DEV_PCIE_REPLAY_COUNTER},
	tfECCSingle:      {FieldId: gonvml.FI_DEV_ECC_SBE_VOL_TOTAL},
	tfECCDouble:      {FieldId: gonvml.FI_DEV_ECC_DBE_VOL_TOTAL},
	tfRowsCor:        {FieldId: gonvml.FI_DEV_REMAPPED_COR},
	tfRowsUnc:        {FieldId: gonvml.FI_DEV_REMAPPED_UNC},
	tfRowsFailure:    {FieldId: gonvml.FI_DEV_REMAPPED_FAILURE},
	tfNVLinkTX:       {FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_TX, ScopeId: math.MaxUint32},
	tfNVLinkRX:       {FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_RX, ScopeId: math.MaxUint32},
	tfRecoveryAction: {FieldId: gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION},
	tfEnergy:         {FieldId: gonvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION},
}

// Positions in telemetryFields.
const (
	tfMemTemp = iota
	tfPCIeReplay
	tfECCSingle
	tfECCDouble
	tfRowsCor
	tfRowsUnc
	tfRowsFailure
	tfNVLinkTX
	tfNVLinkRX
	tfRecoveryAction
	tfEnergy // last: see telemetryFields
)

// telemetryValues are every value of DeviceTelemetry, all marked failed when the device
// cannot be opened.
var telemetryValues = []gpu.Field{
	gpu.FieldUUID, gpu.FieldClocks, gpu.FieldTemperature, gpu.FieldMemoryTemperature, gpu.FieldPower,
	gpu.FieldEnergy, gpu.FieldUtilization, gpu.FieldEncoder, gpu.FieldDecoder, gpu.FieldMemory,
	gpu.FieldMemoryReserved, gpu.FieldPCIeReplay, gpu.FieldNVLinkThroughput, gpu.FieldECCErrors,
	gpu.FieldRowRemap, gpu.FieldRecoveryAction, gpu.FieldDevice,
}

// Telemetry implements gpu.TelemetrySource: per device, a handle and UUID, two clocks, the
// GPU temperature, power, utilisation, encoder, decoder and memory calls, and one field-value
// call for the rest: 11 NVML calls. It fails as a whole only when the backend is closed,
// the context ends, or NVML cannot count its devices. Every value is read now, the energy
// counter included (4 ms a GPU on an H200); a metrics exporter uses ScrapeTelemetry.
func (b *Backend) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	return b.telemetry(ctx, true)
}

// telemetry reads every device, the energy counter only when energy is set.
func (b *Backend) telemetry(ctx context.Context, energy bool) (*gpu.Telemetry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nvml telemetry: %w", err)
	}
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return nil, errors.New("nvml telemetry: backend is closed")
	}
	count, err := get("nvmlDeviceGetCount", b.lib.DeviceGetCount)
	if err != nil {
		return nil, fmt.Errorf("nvml telemetry: counting devices: %w", err)
	}
	t := &gpu.Telemetry{Time: b.now(), Devices: make([]gpu.DeviceTelemetry, 0, count)}
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("nvml telemetry: before device %d: %w", i, err)
		}
		t.Devices = append(t.Devices, b.readTelemetry(i, energy))
	}
	return t, nil
}

// readTelemetry reads device i; it always returns the device, with Index set.
func (b *Backend) readTelemetry(i int, energy bool) gpu.DeviceTelemetry {
	d := gpu.DeviceTelemetry{Index: i}
	dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) {
		return b.lib.DeviceGetHandleByIndex(i)
	})
	if err == nil && dev == nil {
		err = errors.New("nvmlDeviceGetHandleByIndex: no handle returned")
	}
	if err != nil {
		err = fmt.Errorf("opening GPU %d: %w", i, err)
		for _, f := range telemetryValues {
			d.SetErr(f, err)
		}
		return d
	}
	// The reader's own Device is scratch: errors are recorded on d.
	r := &reader{b: b, dev: dev, d: &gpu.Device{}}
	if v, err := val(r, "nvmlDeviceGetUUID", dev.GetUUID); err == nil {
		d.UUID = v
	} else {
		d.SetErr(gpu.FieldUUID, err)
	}
	r.clocks(&d)
	if v, err := r.gpuTemperature(); err == nil {
		d.GPUTempC = v
	} else {
		d.SetErr(gpu.FieldTemperature, err)
	}
	if mw, err := val(r, "nvmlDeviceGetPowerUsage", dev.GetPowerUsage); err == nil {
		d.PowerW = float64(mw) / 1000
	} else {
		d.SetErr(gpu.FieldPower, err)
	}
	r.utilization(&d)
	r.framebuffer(&d)
	r.telemetryFields(&d, energy)
	return d
}

func (r *reader) clocks(d *gpu.DeviceTelemetry) {
	clock := func(c gonvml.ClockType) (uint32, error) {
		return val(r, "nvmlDeviceGetClockInfo", func() (uint32, gonvml.Return) { return r.dev.GetClockInfo(c) })
	}
	sm, errSM := clock(gonvml.CLOCK_SM)
	mem, errMem := clock(gonvml.CLOCK_MEM)
	if err := first(errSM, errMem); err != nil {
		d.SetErr(gpu.FieldClocks, err)
		return
	}
	d.SMClockMHz, d.MemClockMHz = sm, mem
}

func (r *reader) utilization(d *gpu.DeviceTelemetry) {
	if u, err := val(r, "nvmlDeviceGetUtilizationRates", r.dev.GetUtilizationRates); err == nil {
		d.GPUUtil, d.MemCopyUtil = u.Gpu, u.Memory
	} else {
		d.SetErr(gpu.FieldUtilization, err)
	}
	if u, _, err := val2(r, "nvmlDeviceGetEncoderUtilization", r.dev.GetEncoderUtilization); err == nil {
		d.EncUtil = u
	} else {
		d.SetErr(gpu.FieldEncoder, err)
	}
	if u, _, err := val2(r, "nvmlDeviceGetDecoderUtilization", r.dev.GetDecoderUtilization); err == nil {
		d.DecUtil = u
	} else {
		d.SetErr(gpu.FieldDecoder, err)
	}
}

// framebuffer prefers nvmlDeviceGetMemoryInfo_v2 (free, used and the driver's reserve); the
// older call has no reserve, which is then reported as not supported.
func (r *reader) framebuffer(d *gpu.DeviceTelemetry) {
	const mib = 1 << 20
	m2, err := val(r, "nvmlDeviceGetMemoryInfo_v2", r.dev.GetMemoryInfo_v2)
	if err == nil {
		d.FBFreeMiB, d.FBUsedMiB, d.FBReservedMiB = m2.Free/mib, m2.Used/mib, m2.Reserved/mib
		return
	}
	if !errors.Is(err, gpu.ErrNotSupported) {
		d.SetErr(gpu.FieldMemory, err)
		d.SetErr(gpu.FieldMemoryReserved, err)
		return
	}
	d.SetErr(gpu.FieldMemoryReserved, err)
	if m, err := val(r, "nvmlDeviceGetMemoryInfo", r.dev.GetMemoryInfo); err == nil {
		d.FBFreeMiB, d.FBUsedMiB = m.Free/mib, m.Used/mib
	} else {
		d.SetErr(gpu.FieldMemory, err)
	}
}

// telemetryFields reads the field values (the energy counter only when energy is set) and
// decodes each into its place; a value the driver does not have is recorded as not
// supported, on its own.
func (r *reader) telemetryFields(d *gpu.DeviceTelemetry, energy bool) {
	n := len(telemetryFields)
	if !energy {
		n = tfEnergy
	}
	vals := make([]gonvml.FieldValue, n)
	copy(vals, telemetryFields)
	callErr := r.call("nvmlDeviceGetFieldValues", func() gonvml.Return { return r.dev.GetFieldValues(vals) })
	v := func(i int) (uint64, error) { return fieldValue(vals[i], callErr) }

	memC, err := v(tfMemTemp)
	if err == nil && memC == 0 {
		err = fmt.Errorf("field %d: %w: the GPU reports no memory temperature", gonvml.FI_DEV_MEMORY_TEMP, gpu.ErrNotSupported)
	}
	if err == nil {
		d.MemTempC = int(memC)
	} else {
		d.SetErr(gpu.FieldMemoryTemperature, err)
	}
	set := func(f gpu.Field, dst *uint64, i int) {
		if x, err := v(i); err == nil {
			*dst = x
		} else {
			d.SetErr(f, err)
		}
	}
	if energy {
		set(gpu.FieldEnergy, &d.EnergyMJ, tfEnergy)
	}
	set(gpu.FieldPCIeReplay, &d.PCIeReplays, tfPCIeReplay)

	sbe, errS := v(tfECCSingle)
	dbe, errD := v(tfECCDouble)
	if err := first(errS, errD); err == nil {
		d.ECCSingleBit, d.ECCDoubleBit = sbe, dbe
	} else {
		d.SetErr(gpu.FieldECCErrors, err)
	}
	cor, errC := v(tfRowsCor)
	unc, errU := v(tfRowsUnc)
	failed, errF := v(tfRowsFailure)
	if err := first(errC, errU, errF); err == nil {
		d.RowsCorrectable, d.RowsUncorrectable, d.RowRemapFailure = clampInt(cor), clampInt(unc), failed != 0
	} else {
		d.SetErr(gpu.FieldRowRemap, err)
	}
	tx, errTX := v(tfNVLinkTX)
	rx, errRX := v(tfNVLinkRX)
	if err := first(errTX, errRX); err == nil {
		d.NVLinkBytes = (tx + rx) * 1024 // KiB
	} else {
		d.SetErr(gpu.FieldNVLinkThroughput, err)
	}
	if a, err := v(tfRecoveryAction); err == nil {
		d.RecoveryAction = recoveryAction(a)
	} else {
		d.SetErr(gpu.FieldRecoveryAction, err)
	}
}

// clampInt converts a count to int, saturating (a row count never comes near it).
func clampInt(v uint64) int {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}
