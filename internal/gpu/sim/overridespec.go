package sim

// gpuSpec overrides facts of one GPU; a field left out keeps the preset's value. The keys
// are gpu.Device's JSON names.
type gpuSpec struct {
	Index             *int                      `yaml:"index"`
	UUID              *string                   `yaml:"uuid"`
	Name              *string                   `yaml:"name"`
	Serial            *string                   `yaml:"serial"`
	Brand             *string                   `yaml:"brand"`
	Architecture      *string                   `yaml:"architecture"`
	ComputeCapability *ccSpec                   `yaml:"computeCapability"`
	VBIOS             *string                   `yaml:"vbios"`
	Memory            *memorySpec               `yaml:"memory"`
	PCIe              *pcieSpec                 `yaml:"pcie"`
	ECC               *eccSpec                  `yaml:"ecc"`
	RetiredPages      *retiredSpec              `yaml:"retiredPages"`
	RowRemap          *rowRemapSpec             `yaml:"rowRemap"`
	Thermal           *thermalSpec              `yaml:"thermal"`
	Power             *powerSpec                `yaml:"power"`
	ClockEvents       *[]string                 `yaml:"clockEvents"`
	PersistenceMode   *bool                     `yaml:"persistenceMode"`
	MIG               *migSpec                  `yaml:"mig"`
	NVLinks           *nvlinkSpec               `yaml:"nvlinks"`
	Fabric            *fabricSpec               `yaml:"fabric"`
	RecoveryAction    *string                   `yaml:"recoveryAction"`
	NUMANode          *int                      `yaml:"numaNode"`
	Errors            map[string]fieldErrorSpec `yaml:"errors"`
}

type ccSpec struct {
	Major *int `yaml:"major"`
	Minor *int `yaml:"minor"`
}

type memorySpec struct {
	TotalMiB *uint64 `yaml:"totalMiB"`
	UsedMiB  *uint64 `yaml:"usedMiB"`
}

type pcieSpec struct {
	BusID            *string `yaml:"busId"`
	DeviceID         *uint32 `yaml:"deviceId"`
	SubsystemID      *uint32 `yaml:"subsystemId"`
	LinkGen          *int    `yaml:"linkGen"`
	LinkGenMax       *int    `yaml:"linkGenMax"`
	LinkGenMaxDevice *int    `yaml:"linkGenMaxDevice"`
	LinkWidth        *int    `yaml:"linkWidth"`
	LinkWidthMax     *int    `yaml:"linkWidthMax"`
	ReplayCounter    *uint64 `yaml:"replayCounter"`
}

type eccSpec struct {
	Enabled              *bool   `yaml:"enabled"`
	PendingEnabled       *bool   `yaml:"pendingEnabled"`
	VolatileCorrected    *uint64 `yaml:"volatileCorrected"`
	VolatileUncorrected  *uint64 `yaml:"volatileUncorrected"`
	AggregateCorrected   *uint64 `yaml:"aggregateCorrected"`
	AggregateUncorrected *uint64 `yaml:"aggregateUncorrected"`
}

type retiredSpec struct {
	SingleBit *int  `yaml:"singleBit"`
	DoubleBit *int  `yaml:"doubleBit"`
	Pending   *bool `yaml:"pending"`
}

type rowRemapSpec struct {
	Correctable   *int  `yaml:"correctable"`
	Uncorrectable *int  `yaml:"uncorrectable"`
	Pending       *bool `yaml:"pending"`
	Failure       *bool `yaml:"failure"`
}

type thermalSpec struct {
	GPUC      *int `yaml:"gpuC"`
	MemoryC   *int `yaml:"memoryC"`
	SlowdownC *int `yaml:"slowdownC"`
	ShutdownC *int `yaml:"shutdownC"`
	MaxOpC    *int `yaml:"maxOperatingC"`
}

type powerSpec struct {
	DrawW         *float64 `yaml:"drawW"`
	LimitW        *float64 `yaml:"limitW"`
	DefaultLimitW *float64 `yaml:"defaultLimitW"`
}

type migSpec struct {
	Capable        *bool `yaml:"capable"`
	Enabled        *bool `yaml:"enabled"`
	PendingEnabled *bool `yaml:"pendingEnabled"`
	// Devices are the MIG devices' profile names, e.g. [3g.40gb, 2g.20gb, 1g.10gb].
	Devices []string `yaml:"devices"`
}

// nvlinkSpec sets the number of links (0: the GPU has no NVLink) and which are down.
type nvlinkSpec struct {
	Count    *int  `yaml:"count"`
	Inactive []int `yaml:"inactive"`
}

type fabricSpec struct {
	State       *string `yaml:"state"`
	Status      *string `yaml:"status"`
	ClusterUUID *string `yaml:"clusterUuid"`
	CliqueID    *uint32 `yaml:"cliqueId"`
}

// fieldErrorSpec makes a fact unreadable.
type fieldErrorSpec struct {
	NotSupported bool   `yaml:"notSupported"`
	Message      string `yaml:"message"`
}
