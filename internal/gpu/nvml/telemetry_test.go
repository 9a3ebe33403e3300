package nvml

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
)

// busyFields are the field values of a busy H200 SXM, as the driver types them.
func busyFields() map[uint32]uint64 {
	return map[uint32]uint64{
		gonvml.FI_DEV_MEMORY_TEMP:              52,
		gonvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION: 123_456_789,
		gonvml.FI_DEV_PCIE_REPLAY_COUNTER:      7,
		gonvml.FI_DEV_ECC_SBE_VOL_TOTAL:        3,
		gonvml.FI_DEV_ECC_DBE_VOL_TOTAL:        1,
		gonvml.FI_DEV_REMAPPED_COR:             2,
		gonvml.FI_DEV_REMAPPED_UNC:             1,
		gonvml.FI_DEV_REMAPPED_FAILURE:         0,
		gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_TX: 1000,
		gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_RX: 24,
		gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION:  0,
	}
}

// telemetryDevice completes a mock device with every call Telemetry makes. fields answers
// nvmlDeviceGetFieldValues (a field id it lacks is unknown to the driver); calls counts
// the field-value calls.
func telemetryDevice(d *server.Device, fields map[uint32]uint64, calls *atomic.Int32) {
	ok := gonvml.SUCCESS
	d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
		if c == gonvml.CLOCK_SM {
			return 1980, ok
		}
		return 3201, ok
	}
	d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 61, ok }
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 612_345, ok }
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{Gpu: 97, Memory: 64}, ok }
	d.GetEncoderUtilizationFunc = func() (uint32, uint32, gonvml.Return) { return 5, 167000, ok }
	d.GetDecoderUtilizationFunc = func() (uint32, uint32, gonvml.Return) { return 9, 167000, ok }
	d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		return gonvml.Memory_v2{Total: 143771 << 20, Reserved: 562 << 20, Used: 100_000 << 20, Free: 43209 << 20}, ok
	}
	d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
		if calls != nil {
			calls.Add(1)
		}
		for i := range vals {
			v := &vals[i]
			isThroughput := v.FieldId == gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_TX || v.FieldId == gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_RX
			x, known := fields[v.FieldId]
			switch {
			case !known:
				v.NvmlReturn = uint32(gonvml.ERROR_INVALID_ARGUMENT)
			case isThroughput && v.ScopeId != math.MaxUint32:
				v.NvmlReturn = uint32(gonvml.ERROR_INVALID_ARGUMENT) // only the all-links sum is set up
			case v.FieldId == gonvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION || isThroughput:
				v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				binary.LittleEndian.PutUint64(v.Value[:], x)
			default:
				v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				binary.LittleEndian.PutUint32(v.Value[:], uint32(x))
			}
		}
		return ok
	}
}

// telemetry reads srv's telemetry once through the backend.
func telemetry(t *testing.T, srv *server.Server) *gpu.Telemetry {
	t.Helper()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.now = func() time.Time { return at }
	t.Cleanup(func() { _ = b.Close() })
	tel, err := b.Telemetry(context.Background())
	if err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	if !tel.Time.Equal(at) {
		t.Errorf("telemetry stamped %v, want %v", tel.Time, at)
	}
	return tel
}

func TestTelemetryOfABusyGPUReadsEveryValueWithOneFieldCall(t *testing.T) {
	srv := dgxh200.New()
	var calls atomic.Int32
	for _, d := range srv.Devices {
		telemetryDevice(d.(*server.Device), busyFields(), &calls)
	}
	tel := telemetry(t, srv)
	if len(tel.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(tel.Devices))
	}
	if got := calls.Load(); got != 8 {
		t.Errorf("%d field-value calls for 8 GPUs, want one per GPU", got)
	}
	d := tel.Devices[3]
	if len(d.Errors) != 0 {
		t.Fatalf("errors %v, want none", d.Errors)
	}
	want := gpu.DeviceTelemetry{
		Index: 3, UUID: d.UUID, SMClockMHz: 1980, MemClockMHz: 3201, GPUTempC: 61, MemTempC: 52,
		PowerW: 612.345, EnergyMJ: 123_456_789, GPUUtil: 97, MemCopyUtil: 64, EncUtil: 5, DecUtil: 9,
		FBFreeMiB: 43209, FBUsedMiB: 100_000, FBReservedMiB: 562, PCIeReplays: 7, NVLinkBytes: 1024 * 1024,
		ECCSingleBit: 3, ECCDoubleBit: 1, RowsCorrectable: 2, RowsUncorrectable: 1, RecoveryAction: gpu.RecoveryNone,
	}
	if !uuidRE.MatchString(d.UUID) {
		t.Errorf("UUID %q is malformed", d.UUID)
	}
	if d.Index != want.Index || d.SMClockMHz != want.SMClockMHz || d.MemClockMHz != want.MemClockMHz ||
		d.GPUTempC != want.GPUTempC || d.MemTempC != want.MemTempC || d.PowerW != want.PowerW ||
		d.EnergyMJ != want.EnergyMJ || d.GPUUtil != want.GPUUtil || d.MemCopyUtil != want.MemCopyUtil ||
		d.EncUtil != want.EncUtil || d.DecUtil != want.DecUtil || d.FBFreeMiB != want.FBFreeMiB ||
		d.FBUsedMiB != want.FBUsedMiB || d.FBReservedMiB != want.FBReservedMiB || d.PCIeReplays != want.PCIeReplays ||
		d.NVLinkBytes != want.NVLinkBytes || d.ECCSingleBit != want.ECCSingleBit || d.ECCDoubleBit != want.ECCDoubleBit ||
		d.RowsCorrectable != want.RowsCorrectable || d.RowsUncorrectable != want.RowsUncorrectable ||
		d.RowRemapFailure || d.RecoveryAction != want.RecoveryAction {
		t.Errorf("telemetry\n got %+v\nwant %+v", d, want)
	}
}

func TestTelemetryOmitsWhatTheDeviceCannotReport(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*server.Device)
		failed  []gpu.Field // each must be recorded as not supported
		healthy []gpu.Field // each must be read
	}{
		{
			name:  "a mock that implements no telemetry call reports every value as not supported",
			setup: func(*server.Device) {},
			failed: []gpu.Field{gpu.FieldClocks, gpu.FieldTemperature, gpu.FieldMemoryTemperature, gpu.FieldPower,
				gpu.FieldEnergy, gpu.FieldUtilization, gpu.FieldEncoder, gpu.FieldDecoder, gpu.FieldMemoryReserved,
				gpu.FieldPCIeReplay, gpu.FieldNVLinkThroughput, gpu.FieldECCErrors, gpu.FieldRowRemap, gpu.FieldRecoveryAction},
			healthy: []gpu.Field{gpu.FieldUUID, gpu.FieldMemory},
		},
		{
			name: "a PCIe GPU without NVLink and a driver before R565 lose only those fields",
			setup: func(d *server.Device) {
				f := busyFields()
				delete(f, gonvml.FI_DEV_NVLINK_THROUGHPUT_RAW_TX)
				delete(f, gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION)
				telemetryDevice(d, f, nil)
			},
			failed:  []gpu.Field{gpu.FieldNVLinkThroughput, gpu.FieldRecoveryAction},
			healthy: []gpu.Field{gpu.FieldEnergy, gpu.FieldECCErrors, gpu.FieldRowRemap, gpu.FieldMemoryTemperature, gpu.FieldClocks},
		},
		{
			name: "a memory temperature of 0 is a GPU that has no memory sensor",
			setup: func(d *server.Device) {
				f := busyFields()
				f[gonvml.FI_DEV_MEMORY_TEMP] = 0
				telemetryDevice(d, f, nil)
			},
			failed:  []gpu.Field{gpu.FieldMemoryTemperature},
			healthy: []gpu.Field{gpu.FieldTemperature},
		},
		{
			name: "a driver without the v2 memory call has free and used but no reserve",
			setup: func(d *server.Device) {
				telemetryDevice(d, busyFields(), nil)
				d.GetMemoryInfo_v2Func = nil
			},
			failed:  []gpu.Field{gpu.FieldMemoryReserved},
			healthy: []gpu.Field{gpu.FieldMemory},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := dgxh200.New()
			tt.setup(srv.Devices[0].(*server.Device))
			d := telemetry(t, srv).Devices[0]
			for _, f := range tt.failed {
				if e, ok := d.Errors[f]; !ok || !e.NotSupported {
					t.Errorf("%s: error %+v, want not supported", f, e)
				}
			}
			for _, f := range tt.healthy {
				if e, ok := d.Errors[f]; ok {
					t.Errorf("%s failed: %s", f, e.Message)
				}
			}
		})
	}
}

func TestTelemetryOfALostGPUStopsAtTheFirstLostCall(t *testing.T) {
	srv := dgxh200.New()
	dev := srv.Devices[1].(*server.Device)
	telemetryDevice(dev, busyFields(), nil)
	var after atomic.Int32
	dev.GetClockInfoFunc = func(gonvml.ClockType) (uint32, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST }
	dev.GetPowerUsageFunc = func() (uint32, gonvml.Return) { after.Add(1); return 0, gonvml.SUCCESS }
	d := telemetry(t, srv).Devices[1]
	if after.Load() != 0 {
		t.Error("a call was made after the GPU was reported lost")
	}
	for _, f := range []gpu.Field{gpu.FieldClocks, gpu.FieldPower, gpu.FieldEnergy, gpu.FieldRecoveryAction} {
		if e, ok := d.Errors[f]; !ok || !e.Lost {
			t.Errorf("%s: error %+v, want lost", f, e)
		}
	}
	if d.UUID == "" {
		t.Error("the UUID read before the loss is missing")
	}
}

func TestTelemetryFailsAsAWholeOnlyWhenNVMLCannotAnswer(t *testing.T) {
	srv := dgxh200.New()
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Telemetry(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v, want context.Canceled", err)
	}
	srv.Devices[2].(*server.Device).GetUUIDFunc = nil
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 5 {
			return nil, gonvml.ERROR_UNKNOWN
		}
		return srv.Devices[i], gonvml.SUCCESS
	}
	tel, err := b.Telemetry(context.Background())
	if err != nil {
		t.Fatalf("Telemetry with one unopenable GPU: %v", err)
	}
	if e, ok := tel.Devices[5].Errors[gpu.FieldDevice]; !ok || e.NotSupported {
		t.Errorf("GPU 5 device error %+v, want a failure", e)
	}
	if e, ok := tel.Devices[2].Errors[gpu.FieldUUID]; !ok || !e.NotSupported {
		t.Errorf("GPU 2 UUID error %+v, want not supported", e)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := b.Telemetry(context.Background()); err == nil {
		t.Error("Telemetry after Close succeeded")
	}
}

func BenchmarkTelemetryOfAMockDGXH200(b *testing.B) {
	srv := dgxh200.New()
	for _, d := range srv.Devices {
		telemetryDevice(d.(*server.Device), busyFields(), nil)
	}
	be, err := New(WithLibrary(srv))
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	defer func() { _ = be.Close() }()
	ctx := context.Background()
	for b.Loop() {
		if _, err := be.Telemetry(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTelemetryOnThisHost reads the real GPUs' telemetry where the driver is installed and
// prints it, with what could not be read; without the driver it has nothing to read.
func TestTelemetryOnThisHost(t *testing.T) {
	t.Setenv(EnvLibraryPath, "")
	b, err := New()
	if err != nil {
		t.Skipf("needs the NVIDIA driver: %v", err)
	}
	defer closeBackend(t, b)
	tel, err := b.Telemetry(context.Background())
	if err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	if len(tel.Devices) == 0 {
		t.Fatal("the driver is loaded but the telemetry has no device")
	}
	for _, d := range tel.Devices {
		if !uuidRE.MatchString(d.UUID) || d.Errors[gpu.FieldDevice].Message != "" {
			t.Errorf("GPU %d: UUID %q, device error %v", d.Index, d.UUID, d.Errors[gpu.FieldDevice])
		}
		t.Logf("GPU %d: %+v", d.Index, d)
	}
}

// BenchmarkTelemetryOnThisHost measures one telemetry read of the real GPUs of this host.
func BenchmarkTelemetryOnThisHost(b *testing.B) {
	b.Setenv(EnvLibraryPath, "")
	be, err := New()
	if err != nil {
		b.Skipf("needs the NVIDIA driver: %v", err)
	}
	defer closeBackend(b, be)
	for b.Loop() {
		if _, err := be.Telemetry(context.Background()); err != nil {
			b.Fatalf("Telemetry: %v", err)
		}
	}
}

// BenchmarkTelemetryCallsOnThisHost times each NVML call Telemetry makes, and each of its
// field values read alone, on GPU 0 of this host: the data behind the choice of calls.
func BenchmarkTelemetryCallsOnThisHost(b *testing.B) {
	b.Setenv(EnvLibraryPath, "")
	be, err := New()
	if err != nil {
		b.Skipf("needs the NVIDIA driver: %v", err)
	}
	defer closeBackend(b, be)
	dev, ret := be.lib.DeviceGetHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		b.Fatalf("DeviceGetHandleByIndex(0): %v", ret)
	}
	calls := []struct {
		name string
		call func() gonvml.Return
	}{
		{"GetUUID", func() gonvml.Return { _, r := dev.GetUUID(); return r }},
		{"GetClockInfo-SM", func() gonvml.Return { _, r := dev.GetClockInfo(gonvml.CLOCK_SM); return r }},
		{"GetTemperature", func() gonvml.Return { _, r := dev.GetTemperature(gonvml.TEMPERATURE_GPU); return r }},
		{"GetTemperatureV", func() gonvml.Return { _, r := dev.GetTemperatureV().V1(); return r }},
		{"GetPowerUsage", func() gonvml.Return { _, r := dev.GetPowerUsage(); return r }},
		{"GetUtilizationRates", func() gonvml.Return { _, r := dev.GetUtilizationRates(); return r }},
		{"GetEncoderUtilization", func() gonvml.Return { _, _, r := dev.GetEncoderUtilization(); return r }},
		{"GetDecoderUtilization", func() gonvml.Return { _, _, r := dev.GetDecoderUtilization(); return r }},
		{"GetMemoryInfo_v2", func() gonvml.Return { _, r := dev.GetMemoryInfo_v2(); return r }},
		{"GetTotalEnergyConsumption", func() gonvml.Return { _, r := dev.GetTotalEnergyConsumption(); return r }},
		{"GetPcieReplayCounter", func() gonvml.Return { _, r := dev.GetPcieReplayCounter(); return r }},
		{"GetFieldValues-energy-191-gpu-scope", func() gonvml.Return {
			return dev.GetFieldValues([]gonvml.FieldValue{{FieldId: gonvml.FI_DEV_ENERGY}})
		}},
		{"GetFieldValues-power-average-185", func() gonvml.Return {
			return dev.GetFieldValues([]gonvml.FieldValue{{FieldId: gonvml.FI_DEV_POWER_AVERAGE}})
		}},
		{"GetFieldValues-power-instant-186", func() gonvml.Return {
			return dev.GetFieldValues([]gonvml.FieldValue{{FieldId: gonvml.FI_DEV_POWER_INSTANT}})
		}},
		{"GetFieldValues-all", func() gonvml.Return {
			v := make([]gonvml.FieldValue, len(telemetryFields))
			copy(v, telemetryFields)
			return dev.GetFieldValues(v)
		}},
	}
	for i, f := range telemetryFields {
		calls = append(calls, struct {
			name string
			call func() gonvml.Return
		}{fmt.Sprintf("GetFieldValues-%d-field-%d", i, f.FieldId), func() gonvml.Return {
			v := []gonvml.FieldValue{f}
			return dev.GetFieldValues(v)
		}})
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				_ = c.call()
			}
		})
	}
}
