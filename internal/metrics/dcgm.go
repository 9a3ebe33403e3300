package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/gpu"
)

// dcgmLabels are dcgm-exporter's labels, in its order.
var dcgmLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod"}

// dcgmMetric is one DCGM_FI_* metric read from telemetry: its name, dcgm-exporter's HELP
// text and type, the telemetry value that omits it when it failed, and its value.
type dcgmMetric struct {
	name  string
	help  string
	typ   prometheus.ValueType
	field gpu.Field
	value func(d *gpu.DeviceTelemetry) float64
	desc  *prometheus.Desc
}

const (
	gauge   = prometheus.GaugeValue
	counter = prometheus.CounterValue
)

// dcgmMetrics are the telemetry metrics, in dcgm-exporter's default-counters.csv order.
// DCGM_FI_DEV_XID_ERRORS is not here: its value comes from the monitor (xidLastDesc).
var dcgmMetrics = []dcgmMetric{
	{name: "DCGM_FI_DEV_SM_CLOCK", help: "SM clock frequency (in MHz).", typ: gauge, field: gpu.FieldClocks,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.SMClockMHz) }},
	{name: "DCGM_FI_DEV_MEM_CLOCK", help: "Memory clock frequency (in MHz).", typ: gauge, field: gpu.FieldClocks,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.MemClockMHz) }},
	{name: "DCGM_FI_DEV_MEMORY_TEMP", help: "Memory temperature (in C).", typ: gauge, field: gpu.FieldMemoryTemperature,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.MemTempC) }},
	{name: "DCGM_FI_DEV_GPU_TEMP", help: "GPU temperature (in C).", typ: gauge, field: gpu.FieldTemperature,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.GPUTempC) }},
	{name: "DCGM_FI_DEV_POWER_USAGE", help: "Power draw (in W).", typ: gauge, field: gpu.FieldPower,
		value: func(d *gpu.DeviceTelemetry) float64 { return d.PowerW }},
	{name: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", help: "Total energy consumption since boot (in mJ).", typ: counter, field: gpu.FieldEnergy,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.EnergyMJ) }},
	{name: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", help: "Total number of PCIe retries.", typ: counter, field: gpu.FieldPCIeReplay,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.PCIeReplays) }},
	{name: "DCGM_FI_DEV_GPU_UTIL", help: "GPU utilization (in %).", typ: gauge, field: gpu.FieldUtilization,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.GPUUtil) }},
	{name: "DCGM_FI_DEV_MEM_COPY_UTIL", help: "Memory utilization (in %).", typ: gauge, field: gpu.FieldUtilization,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.MemCopyUtil) }},
	{name: "DCGM_FI_DEV_ENC_UTIL", help: "Encoder utilization (in %).", typ: gauge, field: gpu.FieldEncoder,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.EncUtil) }},
	{name: "DCGM_FI_DEV_DEC_UTIL", help: "Decoder utilization (in %).", typ: gauge, field: gpu.FieldDecoder,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.DecUtil) }},
	{name: "DCGM_FI_DEV_FB_FREE", help: "Framebuffer memory free (in MiB).", typ: gauge, field: gpu.FieldMemory,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.FBFreeMiB) }},
	{name: "DCGM_FI_DEV_FB_USED", help: "Framebuffer memory used (in MiB).", typ: gauge, field: gpu.FieldMemory,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.FBUsedMiB) }},
	{name: "DCGM_FI_DEV_FB_RESERVED", help: "Framebuffer memory reserved (in MiB).", typ: gauge, field: gpu.FieldMemoryReserved,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.FBReservedMiB) }},
	{name: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", help: "Total number of single-bit volatile ECC errors.", typ: counter, field: gpu.FieldECCErrors,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.ECCSingleBit) }},
	{name: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", help: "Total number of double-bit volatile ECC errors.", typ: counter, field: gpu.FieldECCErrors,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.ECCDoubleBit) }},
	{name: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", help: "Total number of NVLink bandwidth counters for all lanes.", typ: counter, field: gpu.FieldNVLinkThroughput,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.NVLinkBytes) }},
	{name: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", help: "Number of remapped rows for uncorrectable errors", typ: counter, field: gpu.FieldRowRemap,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.RowsUncorrectable) }},
	{name: "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", help: "Number of remapped rows for correctable errors", typ: counter, field: gpu.FieldRowRemap,
		value: func(d *gpu.DeviceTelemetry) float64 { return float64(d.RowsCorrectable) }},
	{name: "DCGM_FI_DEV_ROW_REMAP_FAILURE", help: "Whether remapping of rows has failed", typ: gauge, field: gpu.FieldRowRemap,
		value: func(d *gpu.DeviceTelemetry) float64 {
			if d.RowRemapFailure {
				return 1
			}
			return 0
		}},
}

func init() {
	for i := range dcgmMetrics {
		m := &dcgmMetrics[i]
		m.desc = prometheus.NewDesc(m.name, m.help, dcgmLabels, nil)
	}
}

// xidLastDesc is dcgm-exporter's "last XID" gauge.
var xidLastDesc = prometheus.NewDesc("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", dcgmLabels, nil)
