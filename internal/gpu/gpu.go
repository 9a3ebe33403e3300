// Package gpu is the hardware port: the vendor-neutral view of the accelerators on a node.
//
// A Backend reads every fact of every device into a Snapshot. A fact that cannot be read
// does not fail the snapshot: it is recorded in Device.Errors under its Field, with the
// backend's error text, so that each check can fail or skip with that text. Backends:
// internal/gpu/nvml (the real hardware) and internal/gpu/sim (simulated GPUs).
package gpu

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors shared by every backend. Backends wrap them with %w.
var (
	// ErrDriverNotFound: the vendor's management library is not installed on this host.
	ErrDriverNotFound = errors.New("NVIDIA driver not found (libnvidia-ml.so.1)")
	// ErrNotSupported: the device or driver does not support the requested fact.
	ErrNotSupported = errors.New("not supported")
	// ErrGPULost: the device stopped answering (fallen off the bus).
	ErrGPULost = errors.New("GPU is lost")
)

// Backend reads the GPUs of one node. It is safe for concurrent use (the monitor, the
// exporter and an acceptance run read one backend at once), and every Snapshot is its
// caller's own: changing one changes nothing the backend returns later. A new backend
// proves this contract, and its optional interfaces', with internal/gpu/gputest.Conformance.
type Backend interface {
	// Name is the backend's kind: "nvml" or "sim".
	Name() string
	// Snapshot reads every fact of every device once. It returns an error only when the
	// backend as a whole cannot answer (no driver, library not initialised); per-device and
	// per-field failures are recorded inside the snapshot.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Close releases the backend (NVML shutdown). It is safe to call more than once.
	Close() error
}

// Snapshot is every fact of every GPU at one instant.
type Snapshot struct {
	Backend string    `json:"backend"`
	Time    time.Time `json:"time"`
	Driver  Driver    `json:"driver"`
	// Devices are ordered by index.
	Devices []Device `json:"devices"`
	// Errors holds system-level facts that could not be read (Field -> error).
	Errors map[Field]FieldError `json:"errors,omitempty"`
}

// Driver is the software the devices run on.
type Driver struct {
	// Vendor is "nvidia" for both backends today.
	Vendor string `json:"vendor"`
	// Version is the kernel driver version, e.g. "580.159.04".
	Version string `json:"version"`
	// LibraryVersion is the management library version (NVML), e.g. "13.580.159.04".
	LibraryVersion string `json:"libraryVersion,omitempty"`
	// CUDAVersion is the highest CUDA version the driver supports, "major.minor", e.g. "13.0".
	CUDAVersion string `json:"cudaVersion,omitempty"`
}

// Field names one fact of a device, for Device.Errors.
type Field string

// The facts a backend reads. Each check names the fields it depends on.
const (
	FieldUUID           Field = "uuid"
	FieldName           Field = "name"
	FieldSerial         Field = "serial"
	FieldArchitecture   Field = "architecture"
	FieldComputeCap     Field = "computeCapability"
	FieldMemory         Field = "memory"
	FieldPCI            Field = "pci"
	FieldPCIeLink       Field = "pcieLink"
	FieldPCIeReplay     Field = "pcieReplay"
	FieldVBIOS          Field = "vbios"
	FieldECCMode        Field = "eccMode"
	FieldECCErrors      Field = "eccErrors"
	FieldRetiredPages   Field = "retiredPages"
	FieldRowRemap       Field = "rowRemap"
	FieldTemperature    Field = "temperature"
	FieldTempThresholds Field = "temperatureThresholds"
	FieldPower          Field = "power"
	FieldClockEvents    Field = "clockEvents"
	FieldPersistence    Field = "persistenceMode"
	FieldMIG            Field = "mig"
	FieldNVLink         Field = "nvlink"
	FieldFabric         Field = "fabric"
	FieldRecoveryAction Field = "recoveryAction"
	FieldNUMA           Field = "numa"
	FieldTopology       Field = "topology"
	FieldDriverVersion  Field = "driverVersion"
	FieldCUDAVersion    Field = "cudaVersion"
	FieldDevice         Field = "device" // the whole device: it could not be opened
)

// FieldError explains why a fact is missing.
type FieldError struct {
	// NotSupported is true when the hardware or driver does not have the fact at all
	// (a check then skips); false when reading it failed (a check then fails).
	NotSupported bool `json:"notSupported,omitempty"`
	// Lost is true when the GPU stopped answering while the fact was read.
	Lost    bool   `json:"lost,omitempty"`
	Message string `json:"message"`
}

// Error implements error.
func (e FieldError) Error() string { return e.Message }

// NewFieldError converts a backend error into a FieldError.
func NewFieldError(err error) FieldError {
	return FieldError{NotSupported: errors.Is(err, ErrNotSupported), Lost: errors.Is(err, ErrGPULost), Message: err.Error()}
}
