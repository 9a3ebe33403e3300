package nvml

import (
	"encoding/binary"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// healthy completes a go-nvml mock device with every call this backend makes, answering as a
// healthy, idle H200 SXM in an NVSwitch system would.
func healthy(d *server.Device) {
	ok := gonvml.SUCCESS
	d.GetSerialFunc = func() (string, gonvml.Return) { return "1654123456789", ok }
	d.GetVbiosVersionFunc = func() (string, gonvml.Return) { return "96.00.99.00.01", ok }
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_ENABLED, ok }
	d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		return gonvml.Memory_v2{Total: d.MemoryInfo.Total, Reserved: 300 << 20, Used: 512 << 20}, ok
	}
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		p := gonvml.PciInfo{PciDeviceId: d.Config.PciDeviceId, PciSubSystemId: 0x16ef10de}
		for i, c := range "00000000:18:00.0" {
			p.BusId[i] = int8(c)
		}
		return p, ok
	}
	five := func() (int, gonvml.Return) { return 5, ok }
	sixteen := func() (int, gonvml.Return) { return 16, ok }
	d.GetCurrPcieLinkGenerationFunc, d.GetMaxPcieLinkGenerationFunc, d.GetGpuMaxPcieLinkGenerationFunc = five, five, five
	d.GetCurrPcieLinkWidthFunc, d.GetMaxPcieLinkWidthFunc = sixteen, sixteen
	d.GetPcieReplayCounterFunc = func() (int, gonvml.Return) { return 0, ok }
	d.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_ENABLED, gonvml.FEATURE_ENABLED, ok
	}
	d.GetTotalEccErrorsFunc = func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) { return 0, ok }
	d.GetRetiredPagesFunc = func(gonvml.PageRetirementCause) ([]uint64, gonvml.Return) { return nil, ok }
	d.GetRetiredPagesPendingStatusFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_DISABLED, ok }
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 0, false, false, ok }
	d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 33, ok }
	d.GetTemperatureThresholdFunc = func(t gonvml.TemperatureThresholds) (uint32, gonvml.Return) {
		switch t {
		case gonvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
			return 87, ok
		case gonvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
			return 92, ok
		case gonvml.TEMPERATURE_THRESHOLD_GPU_MAX:
			return 85, ok
		}
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 75500, ok }
	d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return 700000, ok }
	d.GetPowerManagementDefaultLimitFunc = func() (uint32, gonvml.Return) { return 700000, ok }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return gonvml.ClocksEventReasonGpuIdle, ok }
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l >= 18 {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return gonvml.FEATURE_ENABLED, ok
	}
	d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{
			State:       gonvml.GPU_FABRIC_STATE_COMPLETED,
			ClusterUuid: [16]uint8{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
			CliqueId:    32766,
		}, ok
	}
	d.GetFieldValuesFunc = fieldValues(0, 41)
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 1, ok }
}

// fieldValues answers nvmlDeviceGetFieldValues with a recovery action and a memory
// temperature, typed the way the driver types them.
func fieldValues(action uint32, memC uint32) func([]gonvml.FieldValue) gonvml.Return {
	return func(vals []gonvml.FieldValue) gonvml.Return {
		for i := range vals {
			v := &vals[i]
			v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
			switch v.FieldId {
			case gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION:
				binary.LittleEndian.PutUint32(v.Value[:], action)
			case gonvml.FI_DEV_MEMORY_TEMP:
				binary.LittleEndian.PutUint32(v.Value[:], memC)
			default:
				v.NvmlReturn = uint32(gonvml.ERROR_INVALID_ARGUMENT)
			}
		}
		return gonvml.SUCCESS
	}
}
