package gpu

// Device is every fact of one GPU. A fact listed in Errors is not valid in the struct.
type Device struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Name as the vendor library reports it, e.g. "NVIDIA H100 80GB HBM3".
	Name   string `json:"name"`
	Serial string `json:"serial,omitempty"`
	Brand  string `json:"brand,omitempty"`
	// Architecture in lower case: "ampere", "hopper", "blackwell", ...
	Architecture      string            `json:"architecture,omitempty"`
	ComputeCapability ComputeCapability `json:"computeCapability"`
	VBIOS             string            `json:"vbios,omitempty"`
	Memory            Memory            `json:"memory"`
	PCI               PCI               `json:"pci"`
	ECC               ECC               `json:"ecc"`
	RetiredPages      RetiredPages      `json:"retiredPages"`
	RowRemap          RowRemap          `json:"rowRemap"`
	Thermal           Thermal           `json:"thermal"`
	Power             Power             `json:"power"`
	// ClockEvents are the active clock-event (throttle) reasons; empty when none.
	ClockEvents     []ClockEvent `json:"clockEvents,omitempty"`
	PersistenceMode bool         `json:"persistenceMode"`
	MIG             MIG          `json:"mig"`
	NVLinks         []NVLink     `json:"nvlinks,omitempty"`
	Fabric          Fabric       `json:"fabric"`
	// RecoveryAction is the driver's own verdict on what the GPU needs.
	RecoveryAction RecoveryAction `json:"recoveryAction"`
	// NUMANode is the device's NUMA node, -1 when the platform has none.
	NUMANode int `json:"numaNode"`
	// Peers is how this GPU reaches each other GPU of the node; empty when unknown.
	Peers []Peer `json:"peers,omitempty"`
	// MIGDevices are the MIG devices while MIG is enabled, by index; errors go to FieldMIG.
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
	// Errors lists the facts that could not be read.
	Errors map[Field]FieldError `json:"errors,omitempty"`
}

// Err returns the error recorded for a field, or nil when the field is valid.
func (d *Device) Err(f Field) *FieldError {
	if e, ok := d.Errors[f]; ok {
		return &e
	}
	return nil
}

// Unreachable returns why the device does not answer at all, or nil: it could not be
// opened (FieldDevice), or a fact read failed because the GPU is lost. With several lost
// reads the reason is the first field in name order, so every caller gives the same one.
func (d *Device) Unreachable() *FieldError {
	if e := d.Err(FieldDevice); e != nil {
		return e
	}
	var first Field
	var lost *FieldError
	for f, e := range d.Errors { // no sorting, no allocation: this runs for every GPU at every poll
		if e.Lost && (lost == nil || f < first) {
			first, lost = f, &e
		}
	}
	return lost
}

// SetErr records that a field could not be read.
func (d *Device) SetErr(f Field, err error) {
	if err == nil {
		return
	}
	if d.Errors == nil {
		d.Errors = map[Field]FieldError{}
	}
	d.Errors[f] = NewFieldError(err)
}

// ComputeCapability is the CUDA compute capability, e.g. 9.0 for Hopper.
type ComputeCapability struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

// Memory sizes in MiB.
type Memory struct {
	TotalMiB uint64 `json:"totalMiB"`
	UsedMiB  uint64 `json:"usedMiB"`
}

// PCI is the device's PCI identity and PCIe link.
type PCI struct {
	// BusID in the vendor's form, e.g. "00000000:18:00.0".
	BusID string `json:"busId"`
	// DeviceID is the combined device/vendor id, e.g. 0x233010DE.
	DeviceID    uint32 `json:"deviceId"`
	SubsystemID uint32 `json:"subsystemId,omitempty"`
	LinkGen     int    `json:"linkGen"`
	LinkGenMax  int    `json:"linkGenMax"`
	// LinkGenMaxDevice is the generation the GPU itself supports (the max above is the
	// lower of GPU and slot), 0 when unknown.
	LinkGenMaxDevice int `json:"linkGenMaxDevice,omitempty"`
	LinkWidth        int `json:"linkWidth"`
	LinkWidthMax     int `json:"linkWidthMax"`
	// ReplayCounter counts PCIe replays since the driver loaded.
	ReplayCounter uint64 `json:"replayCounter"`
}

// ECC mode and error counts.
type ECC struct {
	Enabled bool `json:"enabled"`
	// PendingEnabled is the mode after the next reset.
	PendingEnabled       bool   `json:"pendingEnabled"`
	VolatileCorrected    uint64 `json:"volatileCorrected"`
	VolatileUncorrected  uint64 `json:"volatileUncorrected"`
	AggregateCorrected   uint64 `json:"aggregateCorrected"`
	AggregateUncorrected uint64 `json:"aggregateUncorrected"`
}

// RetiredPages (pre-Ampere page retirement; Ampere and later remap rows instead).
type RetiredPages struct {
	SingleBit int  `json:"singleBit"`
	DoubleBit int  `json:"doubleBit"`
	Pending   bool `json:"pending"`
}

// RowRemap is the HBM row-remapping state (Ampere and later).
type RowRemap struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failure       bool `json:"failure"`
}

// Thermal readings and limits in °C (0 = unknown).
type Thermal struct {
	GPUC      int `json:"gpuC"`
	MemoryC   int `json:"memoryC,omitempty"`
	SlowdownC int `json:"slowdownC,omitempty"`
	ShutdownC int `json:"shutdownC,omitempty"`
	MaxOpC    int `json:"maxOperatingC,omitempty"`
}

// Power draw and limits in watts.
type Power struct {
	DrawW  float64 `json:"drawW"`
	LimitW float64 `json:"limitW"`
	// DefaultLimitW is the board's default limit (a lower enforced limit is reported).
	DefaultLimitW float64 `json:"defaultLimitW,omitempty"`
}

// ClockEvent is one active reason for reduced clocks.
type ClockEvent string

// Clock-event reasons. The first two are benign.
const (
	ClockEventIdle         ClockEvent = "gpu-idle"
	ClockEventAppSetting   ClockEvent = "applications-clocks-setting"
	ClockEventSWPowerCap   ClockEvent = "sw-power-cap"
	ClockEventHWSlowdown   ClockEvent = "hw-slowdown"
	ClockEventSyncBoost    ClockEvent = "sync-boost"
	ClockEventSWThermal    ClockEvent = "sw-thermal-slowdown"
	ClockEventHWThermal    ClockEvent = "hw-thermal-slowdown"
	ClockEventHWPowerBrake ClockEvent = "hw-power-brake-slowdown"
	ClockEventDisplayClock ClockEvent = "display-clock-setting"
)

// Benign reports whether the reason is expected on a healthy GPU.
func (c ClockEvent) Benign() bool {
	switch c {
	case ClockEventIdle, ClockEventAppSetting, ClockEventSWPowerCap, ClockEventSyncBoost, ClockEventDisplayClock:
		return true
	}
	return false
}

// MIG mode.
type MIG struct {
	Capable bool `json:"capable"`
	Enabled bool `json:"enabled"`
	// PendingEnabled is the mode after the next reset.
	PendingEnabled bool `json:"pendingEnabled"`
}

// NVLink is one link's state.
type NVLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"`
}

// Fabric is the NVSwitch fabric registration (GPUs in an NVLink domain); State "" when
// the GPU has no fabric.
type Fabric struct {
	// State: "not-supported", "not-started", "in-progress", "completed".
	State string `json:"state,omitempty"`
	// Status is the result of registration when completed: "success" or the error text.
	Status      string `json:"status,omitempty"`
	ClusterUUID string `json:"clusterUuid,omitempty"`
	CliqueID    uint32 `json:"cliqueId,omitempty"`
}

// RecoveryAction is the driver's GPU recovery action field.
type RecoveryAction string

// Recovery actions as the driver reports them.
const (
	RecoveryNone          RecoveryAction = "none"
	RecoveryGPUReset      RecoveryAction = "gpu-reset"
	RecoveryNodeReboot    RecoveryAction = "node-reboot"
	RecoveryDrainP2P      RecoveryAction = "drain-p2p"
	RecoveryDrainAndReset RecoveryAction = "drain-and-reset"
)

// Peer is how this GPU reaches another GPU of the node.
type Peer struct {
	// Index is the other GPU's index.
	Index int `json:"index"`
	// PCIe is the closest PCIe ancestor the two GPUs share (NVML's topology common ancestor).
	PCIe PCIePath `json:"pcie"`
	// NVLinks is the number of this GPU's active NVLinks that reach the other one, directly
	// or through an NVSwitch; 0 when they are not linked.
	NVLinks int `json:"nvlinks,omitempty"`
}

// PCIePath is the closest PCIe ancestor two GPUs share, nearest first (NVML
// nvmlGpuTopologyLevel_t: INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM).
type PCIePath string

// PCIe paths between two GPUs, nearest first.
const (
	PCIeSameBoard      PCIePath = "same-board"      // on one board (multi-GPU card)
	PCIeSingleSwitch   PCIePath = "single-switch"   // one PCIe switch between them
	PCIeMultipleSwitch PCIePath = "multiple-switch" // several switches, no host bridge
	PCIeHostBridge     PCIePath = "host-bridge"     // the same host bridge
	PCIeNUMANode       PCIePath = "numa-node"       // host bridges of one NUMA node
	PCIeSystem         PCIePath = "system"          // across NUMA nodes (SMP interconnect)
)

// PCIePaths lists the paths nearest first.
func PCIePaths() []PCIePath {
	return []PCIePath{PCIeSameBoard, PCIeSingleSwitch, PCIeMultipleSwitch, PCIeHostBridge, PCIeNUMANode, PCIeSystem}
}

// MIGDevice is one MIG device (a GPU instance with a compute instance) of a GPU in MIG mode.
type MIGDevice struct {
	// Index is the MIG device's index within its GPU.
	Index int `json:"index"`
	// UUID is the MIG device's own UUID, "MIG-…".
	UUID string `json:"uuid"`
	// GPUInstance and ComputeInstance are the instance ids.
	GPUInstance     int `json:"gpuInstance"`
	ComputeInstance int `json:"computeInstance"`
	// Profile is the canonical profile name, e.g. "1g.10gb" or "1c.3g.40gb".
	Profile   string `json:"profile"`
	MemoryMiB uint64 `json:"memoryMiB"`
}
