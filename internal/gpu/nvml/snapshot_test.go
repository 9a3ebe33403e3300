package nvml

import (
	"context"
	"regexp"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
)

var uuidRE = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// snapshot takes one snapshot of srv through the backend.
func snapshot(t *testing.T, srv *server.Server) *gpu.Snapshot {
	t.Helper()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.now = func() time.Time { return at }
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if !s.Time.Equal(at) || s.Backend != "nvml" {
		t.Errorf("snapshot stamped %v by %q, want %v by nvml", s.Time, s.Backend, at)
	}
	return s
}

func TestSnapshotOfGoNVMLMockServers(t *testing.T) {
	tests := []struct {
		name     string
		srv      *server.Server
		gpuName  string
		totalMiB uint64
		deviceID uint32
	}{
		{name: "a DGX H100 has eight hopper GPUs of 80 GB", srv: dgxh100.New(), gpuName: "NVIDIA H100 80GB HBM3", totalMiB: 81920, deviceID: 0x233010DE},
		{name: "a DGX H200 has eight hopper GPUs of 141 GB", srv: dgxh200.New(), gpuName: "NVIDIA H200 141GB HBM3e", totalMiB: 144384, deviceID: 0x233310DE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot(t, tt.srv)
			want := gpu.Driver{Vendor: "nvidia", Version: "550.54.15", LibraryVersion: "12.550.54.15", CUDAVersion: "12.4"}
			if s.Driver != want {
				t.Errorf("driver %+v, want %+v", s.Driver, want)
			}
			if len(s.Errors) != 0 {
				t.Errorf("system errors %v, want none", s.Errors)
			}
			if len(s.Devices) != 8 {
				t.Fatalf("%d devices, want 8", len(s.Devices))
			}
			seen := map[string]bool{}
			for i, d := range s.Devices {
				if d.Index != i {
					t.Errorf("device %d has index %d", i, d.Index)
				}
				if !uuidRE.MatchString(d.UUID) || seen[d.UUID] {
					t.Errorf("device %d UUID %q is malformed or repeated", i, d.UUID)
				}
				seen[d.UUID] = true
				if d.Name != tt.gpuName || d.Architecture != "hopper" || d.Brand != "NVIDIA" {
					t.Errorf("device %d is %q %q %q, want %q hopper NVIDIA", i, d.Name, d.Architecture, d.Brand, tt.gpuName)
				}
				if d.ComputeCapability != (gpu.ComputeCapability{Major: 9, Minor: 0}) {
					t.Errorf("device %d compute capability %+v, want 9.0", i, d.ComputeCapability)
				}
				if d.Memory.TotalMiB != tt.totalMiB || d.PCI.DeviceID != tt.deviceID {
					t.Errorf("device %d memory %d MiB id %#x, want %d MiB id %#x", i, d.Memory.TotalMiB, d.PCI.DeviceID, tt.totalMiB, tt.deviceID)
				}
				if d.MIG != (gpu.MIG{Capable: true}) {
					t.Errorf("device %d MIG %+v, want capable and off", i, d.MIG)
				}
				for _, f := range []gpu.Field{gpu.FieldUUID, gpu.FieldName, gpu.FieldArchitecture, gpu.FieldComputeCap, gpu.FieldMemory, gpu.FieldPCI, gpu.FieldMIG, gpu.FieldDevice} {
					if e := d.Err(f); e != nil {
						t.Errorf("device %d field %s failed: %s", i, f, e.Message)
					}
				}
				// The mock does not implement these: each is recorded, as not supported.
				for _, f := range []gpu.Field{gpu.FieldSerial, gpu.FieldVBIOS, gpu.FieldECCErrors, gpu.FieldRowRemap, gpu.FieldTemperature, gpu.FieldPower, gpu.FieldClockEvents, gpu.FieldNVLink, gpu.FieldFabric, gpu.FieldRecoveryAction, gpu.FieldNUMA} {
					e := d.Err(f)
					if e == nil || !e.NotSupported {
						t.Errorf("device %d field %s = %+v, want a not-supported error", i, f, e)
					}
				}
				if d.NUMANode != -1 || d.Fabric.State != "not-supported" || len(d.NVLinks) != 0 {
					t.Errorf("device %d numa %d fabric %q nvlinks %v, want -1, not-supported, none", i, d.NUMANode, d.Fabric.State, d.NVLinks)
				}
			}
		})
	}
}

func TestSnapshotOfAFullyImplementedDeviceHasNoErrors(t *testing.T) {
	srv := dgxh200.New()
	dev := srv.Devices[0].(*server.Device)
	healthy(dev)
	d := snapshot(t, srv).Devices[0]
	if len(d.Errors) != 0 {
		t.Fatalf("errors %v, want none", d.Errors)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"serial and VBIOS are read", d.Serial == "1654123456789" && d.VBIOS == "96.00.99.00.01"},
		{"memory used is in MiB", d.Memory.UsedMiB == 512},
		{"the bus id is read", d.PCI.BusID == "00000000:18:00.0" && d.PCI.SubsystemID == 0x16ef10de},
		{"the PCIe link is gen5 x16", d.PCI.LinkGen == 5 && d.PCI.LinkGenMax == 5 && d.PCI.LinkGenMaxDevice == 5 && d.PCI.LinkWidth == 16 && d.PCI.LinkWidthMax == 16},
		{"ECC is on with no errors", d.ECC == gpu.ECC{Enabled: true, PendingEnabled: true}},
		{"temperatures and limits are in °C", d.Thermal == gpu.Thermal{GPUC: 33, MemoryC: 41, SlowdownC: 87, ShutdownC: 92, MaxOpC: 85}},
		{"power is in watts", d.Power == gpu.Power{DrawW: 75.5, LimitW: 700, DefaultLimitW: 700}},
		{"an idle GPU reports idle", len(d.ClockEvents) == 1 && d.ClockEvents[0] == gpu.ClockEventIdle},
		{"persistence mode is on", d.PersistenceMode},
		{"18 NVLinks are up", len(d.NVLinks) == 18 && d.NVLinks[17] == gpu.NVLink{Link: 17, Active: true}},
		{"the fabric registration completed", d.Fabric == gpu.Fabric{State: "completed", Status: "success", ClusterUUID: "00112233-4455-6677-8899-aabbccddeeff", CliqueID: 32766}},
		{"the driver needs nothing", d.RecoveryAction == gpu.RecoveryNone},
		{"the GPU sits on NUMA node 1", d.NUMANode == 1},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: device %+v", c.name, d)
		}
	}
}

func TestSnapshotCarriesFaults(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*server.Device)
		check  func(*testing.T, gpu.Device)
	}{
		{
			name: "ECC error counts are read per counter",
			inject: func(d *server.Device) {
				d.GetTotalEccErrorsFunc = func(e gonvml.MemoryErrorType, c gonvml.EccCounterType) (uint64, gonvml.Return) {
					return uint64(10*int(c) + int(e) + 1), gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				want := gpu.ECC{Enabled: true, PendingEnabled: true, VolatileCorrected: 1, VolatileUncorrected: 2, AggregateCorrected: 11, AggregateUncorrected: 12}
				if d.ECC != want {
					t.Errorf("ECC %+v, want %+v", d.ECC, want)
				}
			},
		},
		{
			name: "a pending row remap and a remap failure are read",
			inject: func(d *server.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 3, 1, true, true, gonvml.SUCCESS }
			},
			check: func(t *testing.T, d gpu.Device) {
				if want := (gpu.RowRemap{Correctable: 3, Uncorrectable: 1, Pending: true, Failure: true}); d.RowRemap != want {
					t.Errorf("row remap %+v, want %+v", d.RowRemap, want)
				}
			},
		},
		{
			name: "a PCIe link below its maximum is read as is",
			inject: func(d *server.Device) {
				d.GetCurrPcieLinkGenerationFunc = func() (int, gonvml.Return) { return 3, gonvml.SUCCESS }
				d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { return 8, gonvml.SUCCESS }
				d.GetPcieReplayCounterFunc = func() (int, gonvml.Return) { return 120, gonvml.SUCCESS }
			},
			check: func(t *testing.T, d gpu.Device) {
				p := d.PCI
				if p.LinkGen != 3 || p.LinkGenMax != 5 || p.LinkWidth != 8 || p.LinkWidthMax != 16 || p.ReplayCounter != 120 {
					t.Errorf("PCIe %+v, want gen 3 of 5, x8 of x16, 120 replays", p)
				}
			},
		},
		{
			name:   "recovery action 1 is a GPU reset",
			inject: func(d *server.Device) { d.GetFieldValuesFunc = fieldValues(1, 41) },
			check: func(t *testing.T, d gpu.Device) {
				if d.RecoveryAction != gpu.RecoveryGPUReset {
					t.Errorf("recovery action %q, want gpu-reset", d.RecoveryAction)
				}
			},
		},
		{
			name: "a field that the driver does not know is not supported",
			inject: func(d *server.Device) {
				d.GetFieldValuesFunc = func(v []gonvml.FieldValue) gonvml.Return {
					_ = fieldValues(0, 41)(v)
					v[0].NvmlReturn = uint32(gonvml.ERROR_INVALID_ARGUMENT)
					return gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				if e := d.Err(gpu.FieldRecoveryAction); e == nil || !e.NotSupported {
					t.Errorf("recovery action error %+v, want not supported", e)
				}
				if d.Thermal.MemoryC != 41 {
					t.Errorf("memory temperature %d, want 41", d.Thermal.MemoryC)
				}
			},
		},
		{
			name: "a hardware slowdown is a clock event",
			inject: func(d *server.Device) {
				d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
					return gonvml.ClocksThrottleReasonHwSlowdown | gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				if len(d.ClockEvents) != 2 || d.ClockEvents[0] != gpu.ClockEventHWSlowdown || d.ClockEvents[1] != gpu.ClockEventHWPowerBrake {
					t.Errorf("clock events %v, want hw-slowdown and hw-power-brake-slowdown", d.ClockEvents)
				}
			},
		},
		{
			name: "a driver without the clock-event call falls back to throttle reasons",
			inject: func(d *server.Device) {
				d.GetCurrentClocksEventReasonsFunc = nil
				d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, gonvml.Return) { return gonvml.ClocksThrottleReasonHwThermalSlowdown, gonvml.SUCCESS }
			},
			check: func(t *testing.T, d gpu.Device) {
				if len(d.ClockEvents) != 1 || d.ClockEvents[0] != gpu.ClockEventHWThermal {
					t.Errorf("clock events %v, want hw-thermal-slowdown", d.ClockEvents)
				}
			},
		},
		{
			name: "NVLink states are read up to the first missing link",
			inject: func(d *server.Device) {
				d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
					switch {
					case l >= 4:
						return 0, gonvml.ERROR_INVALID_ARGUMENT
					case l == 2:
						return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
					}
					return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				want := []gpu.NVLink{{Link: 0, Active: true}, {Link: 1, Active: true}, {Link: 2}, {Link: 3, Active: true}}
				if len(d.NVLinks) != len(want) {
					t.Fatalf("links %v, want %v", d.NVLinks, want)
				}
				for i := range want {
					if d.NVLinks[i] != want[i] {
						t.Errorf("link %d = %+v, want %+v", i, d.NVLinks[i], want[i])
					}
				}
				if e := d.Err(gpu.FieldNVLink); e != nil {
					t.Errorf("NVLink error %s, want none", e.Message)
				}
			},
		},
		{
			name: "a GPU without NVLink has no links and a not-supported error",
			inject: func(d *server.Device) {
				d.GetNvLinkStateFunc = func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
			},
			check: func(t *testing.T, d gpu.Device) {
				if e := d.Err(gpu.FieldNVLink); len(d.NVLinks) != 0 || e == nil || !e.NotSupported {
					t.Errorf("links %v error %+v, want none and not supported", d.NVLinks, e)
				}
			},
		},
		{
			name: "a fabric registration in progress is read",
			inject: func(d *server.Device) {
				d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
					return gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_IN_PROGRESS, CliqueId: 7}, gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				if want := (gpu.Fabric{State: "in-progress", CliqueID: 7}); d.Fabric != want {
					t.Errorf("fabric %+v, want %+v", d.Fabric, want)
				}
			},
		},
		{
			name: "a failed fabric registration carries NVML's error text",
			inject: func(d *server.Device) {
				d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
					return gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.ERROR_TIMEOUT)}, gonvml.SUCCESS
				}
			},
			check: func(t *testing.T, d gpu.Device) {
				if d.Fabric.State != "completed" || d.Fabric.Status != "ERROR_TIMEOUT" {
					t.Errorf("fabric %+v, want completed with ERROR_TIMEOUT", d.Fabric)
				}
			},
		},
		{
			name: "a GPU without MIG is not capable and not in error",
			inject: func(d *server.Device) {
				d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED }
			},
			check: func(t *testing.T, d gpu.Device) {
				if d.MIG.Capable || d.Err(gpu.FieldMIG) != nil {
					t.Errorf("MIG %+v error %+v, want not capable and no error", d.MIG, d.Err(gpu.FieldMIG))
				}
			},
		},
		{
			name: "a lost GPU fails every fact with the lost error and is still listed",
			inject: func(d *server.Device) {
				d.GetUUIDFunc = func() (string, gonvml.Return) { return "", gonvml.ERROR_GPU_IS_LOST }
			},
			check: func(t *testing.T, d gpu.Device) {
				for _, f := range []gpu.Field{gpu.FieldUUID, gpu.FieldName, gpu.FieldMemory, gpu.FieldECCErrors, gpu.FieldRowRemap, gpu.FieldNVLink, gpu.FieldRecoveryAction, gpu.FieldNUMA} {
					e := d.Err(f)
					if e == nil || e.NotSupported {
						t.Errorf("field %s error %+v, want a failure", f, e)
					}
				}
				if want := "nvmlDeviceGetUUID: ERROR_GPU_IS_LOST"; d.Errors[gpu.FieldUUID].Message != want {
					t.Errorf("UUID error %q, want %q", d.Errors[gpu.FieldUUID].Message, want)
				}
				if want := "nvmlDeviceGetName: not called after nvmlDeviceGetUUID: ERROR_GPU_IS_LOST"; d.Errors[gpu.FieldName].Message != want {
					t.Errorf("name error %q, want %q", d.Errors[gpu.FieldName].Message, want)
				}
			},
		},
		{
			name: "a memory read that fails is recorded with NVML's text",
			inject: func(d *server.Device) {
				d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) { return gonvml.Memory_v2{}, gonvml.ERROR_UNKNOWN }
			},
			check: func(t *testing.T, d gpu.Device) {
				e := d.Err(gpu.FieldMemory)
				if e == nil || e.NotSupported || e.Message != "nvmlDeviceGetMemoryInfo_v2: ERROR_UNKNOWN" {
					t.Errorf("memory error %+v, want the ERROR_UNKNOWN failure", e)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := dgxh100.New()
			dev := srv.Devices[3].(*server.Device)
			healthy(dev)
			tt.inject(dev)
			s := snapshot(t, srv)
			if len(s.Devices) != 8 {
				t.Fatalf("%d devices, want 8", len(s.Devices))
			}
			tt.check(t, s.Devices[3])
			if other := s.Devices[4]; other.Err(gpu.FieldUUID) != nil || other.Err(gpu.FieldMemory) != nil {
				t.Errorf("the fault leaked to GPU 4: %v", other.Errors)
			}
		})
	}
}

func TestADeviceThatCannotBeOpenedIsStillListed(t *testing.T) {
	srv := dgxh100.New()
	open := srv.DeviceGetHandleByIndexFunc
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 5 {
			return nil, gonvml.ERROR_NO_PERMISSION
		}
		return open(i)
	}
	s := snapshot(t, srv)
	if len(s.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(s.Devices))
	}
	d := s.Devices[5]
	if d.Index != 5 {
		t.Errorf("index %d, want 5", d.Index)
	}
	want := "opening GPU 5: nvmlDeviceGetHandleByIndex: ERROR_NO_PERMISSION"
	for _, f := range []gpu.Field{gpu.FieldDevice, gpu.FieldUUID, gpu.FieldECCErrors} {
		if e := d.Err(f); e == nil || e.Message != want {
			t.Errorf("field %s error %+v, want %q", f, e, want)
		}
	}
	if s.Devices[6].UUID == "" {
		t.Error("GPU 6 was not read after GPU 5 failed")
	}
}
