package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// preset is one simulated machine model: what NVML reports for it.
type preset struct {
	gpuName      string
	memoryMiB    uint64
	arch         string
	cc           gpu.ComputeCapability
	deviceID     uint32
	subsystemID  uint32
	linkGen      int // current and max generation of the slot
	linkGenGPU   int // generation the GPU itself supports
	nvlinks      int // 0: the device has no NVLink (FieldNVLink not supported)
	vbios        string
	serialPrefix string
	powerLimitW  float64
	thermal      gpu.Thermal // limits only
	fabric       bool        // NVSwitch fabric registration reported
	busIDs       []string
	numa         []int
	driver       gpu.Driver
}

// DGX/HGX 8-GPU bus ids and NUMA nodes.
var (
	dgxBusIDs = []string{
		"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
		"00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0",
	}
	dgxNUMA   = []int{0, 0, 0, 0, 1, 1, 1, 1}
	driver580 = gpu.Driver{Vendor: "nvidia", Version: "580.95.05", LibraryVersion: "13.580.95.05", CUDAVersion: "13.0"}
)

var presets = map[string]preset{
	"a100x8": {
		gpuName: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920, arch: "ampere",
		cc: gpu.ComputeCapability{Major: 8, Minor: 0}, deviceID: 0x20B210DE, subsystemID: 0x147F10DE,
		linkGen: 4, linkGenGPU: 4, nvlinks: 12, vbios: "92.00.45.00.03", serialPrefix: "1564",
		powerLimitW: 400, thermal: gpu.Thermal{SlowdownC: 89, ShutdownC: 92, MaxOpC: 85},
		busIDs: dgxBusIDs, numa: dgxNUMA, driver: driver580,
	},
	"h100x8": {
		gpuName: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, arch: "hopper",
		cc: gpu.ComputeCapability{Major: 9, Minor: 0}, deviceID: 0x233010DE, subsystemID: 0x16C110DE,
		linkGen: 5, linkGenGPU: 5, nvlinks: 18, vbios: "96.00.99.00.01", serialPrefix: "1654",
		powerLimitW: 700, thermal: gpu.Thermal{SlowdownC: 89, ShutdownC: 92, MaxOpC: 87},
		fabric: true, busIDs: dgxBusIDs, numa: dgxNUMA, driver: driver580,
	},
	"h200x8": {
		gpuName: "NVIDIA H200", memoryMiB: 143771, arch: "hopper",
		cc: gpu.ComputeCapability{Major: 9, Minor: 0}, deviceID: 0x233510DE, subsystemID: 0x18BF10DE,
		linkGen: 5, linkGenGPU: 5, nvlinks: 18, vbios: "96.00.A5.00.1A", serialPrefix: "1653",
		powerLimitW: 700, thermal: gpu.Thermal{SlowdownC: 89, ShutdownC: 92, MaxOpC: 87},
		fabric: true, busIDs: dgxBusIDs, numa: dgxNUMA, driver: driver580,
	},
	"b200x8": {
		gpuName: "NVIDIA B200", memoryMiB: 183359, arch: "blackwell",
		cc: gpu.ComputeCapability{Major: 10, Minor: 0}, deviceID: 0x290110DE,
		linkGen: 5, linkGenGPU: 6, nvlinks: 18, vbios: "97.00.B9.00.0F", serialPrefix: "1792",
		powerLimitW: 1000, thermal: gpu.Thermal{SlowdownC: 87, ShutdownC: 92, MaxOpC: 85},
		fabric: true, busIDs: dgxBusIDs, numa: dgxNUMA, driver: driver580,
	},
	// h200x1 mirrors the H200 lent through the device tool: one PCIe-passthrough GPU in a
	// VM, no NVLink, no fabric, no NUMA information, driver 580.159.04.
	"h200x1": {
		gpuName: "NVIDIA H200", memoryMiB: 143771, arch: "hopper",
		cc: gpu.ComputeCapability{Major: 9, Minor: 0}, deviceID: 0x233510DE, subsystemID: 0x18BF10DE,
		linkGen: 5, linkGenGPU: 5, vbios: "96.00.A5.00.1A", serialPrefix: "1653",
		powerLimitW: 700, thermal: gpu.Thermal{SlowdownC: 89, ShutdownC: 92, MaxOpC: 87},
		busIDs: []string{"00000000:00:06.0"}, numa: []int{-1},
		driver: gpu.Driver{Vendor: "nvidia", Version: "580.159.04", LibraryVersion: "13.580.159.04", CUDAVersion: "13.0"},
	},
}

// Presets lists the preset names, sorted.
func Presets() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// PresetScenario returns the scenario of a preset: its GPUs and driver, no faults.
func PresetScenario(name string) (*Scenario, error) {
	p, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown sim preset %q (known presets: %s)",
			ErrInvalidScenario, name, strings.Join(Presets(), ", "))
	}
	s := &Scenario{Name: name, Preset: name, Driver: p.driver}
	for i := range p.busIDs {
		s.Devices = append(s.Devices, p.device(name, i))
	}
	wire(s.Devices)
	return s, nil
}

// device builds GPU i of the preset; i may exceed the preset's own count (see Scenario count).
func (p preset) device(name string, i int) gpu.Device {
	n := len(p.busIDs)
	h := identityHash(name, i)
	d := gpu.Device{
		Index:             i,
		UUID:              formatUUID("GPU-", h[:16]),
		Name:              p.gpuName,
		Serial:            serial(p.serialPrefix, h),
		Brand:             "NVIDIA",
		Architecture:      p.arch,
		ComputeCapability: p.cc,
		VBIOS:             p.vbios,
		Memory:            gpu.Memory{TotalMiB: p.memoryMiB},
		PCI: gpu.PCI{
			BusID:    busID(p.busIDs, i),
			DeviceID: p.deviceID, SubsystemID: p.subsystemID,
			LinkGen: p.linkGen, LinkGenMax: p.linkGen, LinkGenMaxDevice: p.linkGenGPU,
			LinkWidth: 16, LinkWidthMax: 16,
		},
		ECC:             gpu.ECC{Enabled: true, PendingEnabled: true},
		Thermal:         p.thermal,
		Power:           gpu.Power{DrawW: drawW(h), LimitW: p.powerLimitW, DefaultLimitW: p.powerLimitW},
		ClockEvents:     []gpu.ClockEvent{gpu.ClockEventIdle},
		PersistenceMode: true,
		MIG:             gpu.MIG{Capable: true},
		Fabric:          gpu.Fabric{State: "not-supported"},
		RecoveryAction:  gpu.RecoveryNone,
		NUMANode:        p.numa[i%n],
	}
	d.Thermal.GPUC = 33 + int(h[26]%5)
	d.Thermal.MemoryC = d.Thermal.GPUC + 2
	// Ampere and later remap rows instead of retiring pages: NVML says not supported.
	d.SetErr(gpu.FieldRetiredPages, fmt.Errorf("retired pages: %w", gpu.ErrNotSupported))
	if p.nvlinks == 0 {
		d.SetErr(gpu.FieldNVLink, fmt.Errorf("NVLink: %w", gpu.ErrNotSupported))
	}
	for l := range p.nvlinks {
		d.NVLinks = append(d.NVLinks, gpu.NVLink{Link: l, Active: true})
	}
	if p.fabric {
		fh := sha256.Sum256([]byte("gpunode-sim\x00fabric\x00" + name))
		d.Fabric = gpu.Fabric{State: "completed", Status: "success", ClusterUUID: formatUUID("", fh[:16]), CliqueID: 1}
	}
	return d
}

// identityHash makes UUIDs and serials that are stable per (preset or seed, index) and
// differ between presets.
func identityHash(key string, i int) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "gpunode-sim\x00%s\x00%d", key, i))
}

func formatUUID(prefix string, b []byte) string {
	return fmt.Sprintf("%s%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// serial is a 13-digit board serial: the preset's 4-digit prefix and 9 digits from h.
func serial(prefix string, h [32]byte) string {
	return fmt.Sprintf("%s%09d", prefix, binary.BigEndian.Uint64(h[16:24])%1_000_000_000)
}

// drawW is an idle power draw between 70 and 120 W.
func drawW(h [32]byte) float64 {
	return 70 + float64(binary.BigEndian.Uint16(h[24:26])%5001)/100
}

// busID of GPU i: the preset's list, repeated in the next PCI domains past its end.
func busID(ids []string, i int) string {
	n := len(ids)
	id := ids[i%n]
	if i < n {
		return id
	}
	return fmt.Sprintf("%08X%s", i/n, id[8:])
}

// Reseed gives every GPU a new UUID and serial derived from seed (for example a node
// name), so that many simulated nodes built from one preset have distinct GPUs. It
// replaces UUIDs and serials set by overrides too.
func (s *Scenario) Reseed(seed string) {
	prefix := "1000"
	if p, ok := presets[s.Preset]; ok {
		prefix = p.serialPrefix
	}
	for i := range s.Devices {
		h := identityHash(s.Preset+"\x00"+seed, i)
		s.Devices[i].UUID = formatUUID("GPU-", h[:16])
		s.Devices[i].Serial = serial(prefix, h)
	}
}
