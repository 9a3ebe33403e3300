package accept

import "github.com/gpunode/gpunode/internal/rules"

// Policy is what a node is expected to be, as the acceptance engine runs it. Every field has
// a sensible default (DefaultPolicy); a GPUNodePolicy (the cluster's object, or the same YAML
// in a file) overrides only what it names, through internal/nodepolicy.AcceptPolicy.
type Policy struct {
	// Name identifies the policy in the record.
	Name string `json:"name"`
	// Layers to run; empty means every node-local layer.
	Layers []Layer `json:"layers,omitempty"`

	Expect     Expect     `json:"expect"`
	Versions   Versions   `json:"versions"`
	Thresholds Thresholds `json:"thresholds"`
	Host       HostPolicy `json:"host"`
}

// Expect is the hardware the node must have.
type Expect struct {
	// GPUs is the GPU count; 0 = at least one, any number.
	GPUs int `json:"gpus,omitempty"`
	// Model is the product name as the driver reports it ("NVIDIA H100 80GB HBM3"); empty = any,
	// but every GPU must be the same model.
	Model string `json:"model,omitempty"`
	// MinMemoryMiB per GPU; 0 = no check beyond consistency across GPUs.
	MinMemoryMiB uint64 `json:"minMemoryMiB,omitempty"`
	// ECC must be enabled (default true).
	ECC *bool `json:"ecc,omitempty"`
	// PersistenceMode must be on (default true).
	PersistenceMode *bool `json:"persistenceMode,omitempty"`
	// MIG: "disabled" (default), "enabled" or "any".
	MIG string `json:"mig,omitempty"`
	// NVLinksPerGPU: the number of active links each GPU must have; 0 = every link the
	// GPU reports must be active (and none reported = skip).
	NVLinksPerGPU int `json:"nvlinksPerGPU,omitempty"`
	// Fabric: "auto" (default: check where the GPU has a fabric), "required", "ignore".
	Fabric string `json:"fabric,omitempty"`
	// PCIeGen and PCIeWidth: the minimum link; 0 = the link's own maximum.
	PCIeGen   int `json:"pcieGen,omitempty"`
	PCIeWidth int `json:"pcieWidth,omitempty"`
}

// Versions is the version matrix: each constraint is a list of alternatives such as
// ">=550.54", "<600", "=580.95.05", "13.x"; a version must satisfy every comparison of
// at least one alternative (alternatives are comma-separated ANDs).
type Versions struct {
	Driver []string `json:"driver,omitempty"`
	CUDA   []string `json:"cuda,omitempty"`
	Kernel []string `json:"kernel,omitempty"`
	// Containerd is checked when containerd is installed.
	Containerd []string `json:"containerd,omitempty"`
}

// Thresholds is the one thresholds table of the rule set (internal/rules), used by the
// hardware checks, the XID check and the performance layer alike.
type Thresholds = rules.Thresholds

// HostPolicy is what the node image must pin.
type HostPolicy struct {
	// IOMMU: "any" (default), "enabled", "passthrough" (iommu=pt), "disabled".
	IOMMU string `json:"iommu,omitempty"`
	// CgroupVersion: 2 (default), 1, or 0 = any.
	CgroupVersion int `json:"cgroupVersion"`
	// SecureBoot: "any" (default), "enabled", "disabled".
	SecureBoot string `json:"secureBoot,omitempty"`
	// SMT: "any" (default), "on", "off".
	SMT string `json:"smt,omitempty"`
	// MinShmMiB: minimum /dev/shm size (default 1024).
	MinShmMiB uint64 `json:"minShmMiB"`
	// MinHugepages: minimum HugePages_Total (default 0).
	MinHugepages int `json:"minHugepages"`
	// MinFreePercent of the containerd root and cache folders (default 15), and of inodes (default 10).
	MinFreePercent       int `json:"minFreePercent"`
	MinFreeInodesPercent int `json:"minFreeInodesPercent"`
	// CacheDirs: local model/data cache folders to check for space.
	CacheDirs []string `json:"cacheDirs,omitempty"`
	// TimeSync must be synchronized (default true).
	TimeSync *bool `json:"timeSync,omitempty"`
	// NVIDIARuntime: containerd must have an nvidia runtime or CDI enabled (default "auto":
	// checked when containerd is installed).
	NVIDIARuntime string `json:"nvidiaRuntime,omitempty"`
	// KubeletReservations: the kubelet config must reserve CPU and memory (default "warn":
	// missing reservations warn; "require" fails; "ignore").
	KubeletReservations string `json:"kubeletReservations,omitempty"`
	// GPUNUMALocal: each GPU must report a NUMA node with local CPUs when the host has
	// more than one NUMA node (default true).
	GPUNUMALocal *bool `json:"gpuNUMALocal,omitempty"`
}

func boolPtr(b bool) *bool { return &b }

// DefaultPolicy is the policy used when no file is given.
func DefaultPolicy() Policy {
	return Policy{
		Name: "default",
		Expect: Expect{
			ECC: boolPtr(true), PersistenceMode: boolPtr(true), MIG: "disabled", Fabric: "auto",
		},
		Thresholds: rules.DefaultThresholds(),
		Host: HostPolicy{
			IOMMU: "any", CgroupVersion: 2, SecureBoot: "any", SMT: "any",
			MinShmMiB: 1024, MinFreePercent: 15, MinFreeInodesPercent: 10,
			TimeSync: boolPtr(true), NVIDIARuntime: "auto", KubeletReservations: "warn",
			GPUNUMALocal: boolPtr(true),
		},
	}
}

// LayersOrDefault returns the layers to run.
func (p *Policy) LayersOrDefault() []Layer {
	if len(p.Layers) == 0 {
		return NodeLocalLayers
	}
	return p.Layers
}
