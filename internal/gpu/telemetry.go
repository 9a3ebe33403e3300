package gpu

import (
	"context"
	"time"
)

// Telemetry is what a metrics scrape reads of every GPU: the fast-changing values
// (clocks, temperatures, power, energy, utilisation, memory use, throughput counters),
// separate from Snapshot so a scrape reads only these. Fields a device cannot report are
// listed in Errors, as in Device.
type Telemetry struct {
	Time    time.Time         `json:"time"`
	Devices []DeviceTelemetry `json:"devices"`
}

// DeviceTelemetry is one GPU's telemetry.
type DeviceTelemetry struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// SMClockMHz and MemClockMHz are the current clocks.
	SMClockMHz  uint32  `json:"smClockMHz"`
	MemClockMHz uint32  `json:"memClockMHz"`
	GPUTempC    int     `json:"gpuTempC"`
	MemTempC    int     `json:"memTempC"`
	PowerW      float64 `json:"powerW"`
	// EnergyMJ is the energy consumed since the driver loaded, in millijoules.
	EnergyMJ uint64 `json:"energyMJ"`
	// Utilisation in percent over the driver's last sample period.
	GPUUtil     uint32 `json:"gpuUtil"`
	MemCopyUtil uint32 `json:"memCopyUtil"`
	EncUtil     uint32 `json:"encUtil"`
	DecUtil     uint32 `json:"decUtil"`
	// Framebuffer memory in MiB.
	FBFreeMiB     uint64 `json:"fbFreeMiB"`
	FBUsedMiB     uint64 `json:"fbUsedMiB"`
	FBReservedMiB uint64 `json:"fbReservedMiB"`
	PCIeReplays   uint64 `json:"pcieReplays"`
	// NVLinkBytes is the total NVLink traffic (rx + tx, every link) since the driver loaded.
	NVLinkBytes uint64 `json:"nvlinkBytes"`
	// ECC error totals since the driver loaded (volatile), single- and double-bit.
	ECCSingleBit uint64 `json:"eccSingleBit"`
	ECCDoubleBit uint64 `json:"eccDoubleBit"`
	// Remapped rows and the remap-failure flag.
	RowsCorrectable   int            `json:"rowsCorrectable"`
	RowsUncorrectable int            `json:"rowsUncorrectable"`
	RowRemapFailure   bool           `json:"rowRemapFailure"`
	RecoveryAction    RecoveryAction `json:"recoveryAction"`
	// Errors lists the values that could not be read (Field names of telemetry: "smClock",
	// "energy", "utilization", "encoder", "decoder", "nvlinkThroughput", ...).
	Errors map[Field]FieldError `json:"errors,omitempty"`
}

// SetErr records that a telemetry value could not be read.
func (d *DeviceTelemetry) SetErr(f Field, err error) {
	if err == nil {
		return
	}
	if d.Errors == nil {
		d.Errors = map[Field]FieldError{}
	}
	d.Errors[f] = NewFieldError(err)
}

// Telemetry fields, for DeviceTelemetry.Errors (facts shared with Device use its Fields).
const (
	FieldClocks           Field = "clocks"
	FieldEnergy           Field = "energy"
	FieldUtilization      Field = "utilization"
	FieldEncoder          Field = "encoder"
	FieldDecoder          Field = "decoder"
	FieldNVLinkThroughput Field = "nvlinkThroughput"
	// FieldMemoryTemperature: the memory (HBM) temperature, which GDDR parts do not report
	// while they do report the GPU's (FieldTemperature).
	FieldMemoryTemperature Field = "memoryTemperature"
	// FieldMemoryReserved: the driver's reserved framebuffer, known only to drivers with
	// nvmlDeviceGetMemoryInfo_v2 (free and used come from FieldMemory).
	FieldMemoryReserved Field = "memoryReserved"
)

// TelemetrySource is implemented by backends that can read telemetry.
type TelemetrySource interface {
	// Telemetry reads every GPU's telemetry once; like Snapshot it fails only when the
	// backend as a whole cannot answer.
	Telemetry(ctx context.Context) (*Telemetry, error)
}
