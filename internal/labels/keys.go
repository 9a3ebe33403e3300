package labels

// Label key prefixes.
const (
	// PrefixNVIDIA is the prefix of GPU Feature Discovery's keys.
	PrefixNVIDIA = "nvidia.com/"
	// PrefixPlatform is the prefix of gpunode's own vendor-neutral keys.
	PrefixPlatform = "gpunode.dev/"
)

// Driver and CUDA version keys (GFD). The runtime version is the highest CUDA version the
// driver supports, as NVML reports it.
const (
	KeyDriverVersionMajor    = PrefixNVIDIA + "cuda.driver-version.major"
	KeyDriverVersionMinor    = PrefixNVIDIA + "cuda.driver-version.minor"
	KeyDriverVersionRevision = PrefixNVIDIA + "cuda.driver-version.revision"
	KeyDriverVersionFull     = PrefixNVIDIA + "cuda.driver-version.full"
	KeyRuntimeVersionMajor   = PrefixNVIDIA + "cuda.runtime-version.major"
	KeyRuntimeVersionMinor   = PrefixNVIDIA + "cuda.runtime-version.minor"
	KeyRuntimeVersionFull    = PrefixNVIDIA + "cuda.runtime-version.full"

	// KeyDriverMajor is deprecated by GFD in favour of KeyDriverVersionMajor; still published.
	KeyDriverMajor = PrefixNVIDIA + "cuda.driver.major"
	// KeyDriverMinor is deprecated by GFD in favour of KeyDriverVersionMinor; still published.
	KeyDriverMinor = PrefixNVIDIA + "cuda.driver.minor"
	// KeyDriverRev is deprecated by GFD in favour of KeyDriverVersionRevision; still published.
	KeyDriverRev = PrefixNVIDIA + "cuda.driver.rev"
	// KeyRuntimeMajor is deprecated by GFD in favour of KeyRuntimeVersionMajor; still published.
	KeyRuntimeMajor = PrefixNVIDIA + "cuda.runtime.major"
	// KeyRuntimeMinor is deprecated by GFD in favour of KeyRuntimeVersionMinor; still published.
	KeyRuntimeMinor = PrefixNVIDIA + "cuda.runtime.minor"
)

// Full-GPU resource keys (GFD, resource nvidia.com/gpu).
const (
	KeyGPUProduct         = PrefixNVIDIA + "gpu.product"
	KeyGPUCount           = PrefixNVIDIA + "gpu.count"
	KeyGPUReplicas        = PrefixNVIDIA + "gpu.replicas"
	KeyGPUSharingStrategy = PrefixNVIDIA + "gpu.sharing-strategy"
	KeyGPUMemory          = PrefixNVIDIA + "gpu.memory"
	KeyGPUFamily          = PrefixNVIDIA + "gpu.family"
	KeyGPUComputeMajor    = PrefixNVIDIA + "gpu.compute.major"
	KeyGPUComputeMinor    = PrefixNVIDIA + "gpu.compute.minor"
)

// MIG and node keys (GFD), and the GPU Operator's presence label.
const (
	KeyMIGCapable  = PrefixNVIDIA + "mig.capable"
	KeyMIGStrategy = PrefixNVIDIA + "mig.strategy"
	KeyGPUMachine  = PrefixNVIDIA + "gpu.machine"
	KeyGPUMode     = PrefixNVIDIA + "gpu.mode"
	KeyMPSCapable  = PrefixNVIDIA + "mps.capable"
	KeyVGPUPresent = PrefixNVIDIA + "vgpu.present"
	KeyGPUClique   = PrefixNVIDIA + "gpu.clique"
	KeyGPUPresent  = PrefixNVIDIA + "gpu.present"
)

// Platform keys (gpunode's own, vendor-neutral).
const (
	KeyAcceleratorClass     = PrefixPlatform + "accelerator-class"
	KeyAcceleratorVendor    = PrefixPlatform + "accelerator-vendor"
	KeyAcceleratorFamily    = PrefixPlatform + "accelerator-family"
	KeyAcceleratorCount     = PrefixPlatform + "accelerator-count"
	KeyAcceleratorMemoryGiB = PrefixPlatform + "accelerator-memory-gib"
	KeyInterconnect         = PrefixPlatform + "interconnect"
	// KeyAcceleratorMixed is "true" on a node whose GPUs fall into more than one class;
	// absent otherwise.
	KeyAcceleratorMixed = PrefixPlatform + "accelerator-mixed"
)

// Sharing strategies (values of KeyGPUSharingStrategy and Sharing.Strategy).
const (
	SharingNone        = "none"
	SharingTimeSlicing = "time-slicing"
	SharingMPS         = "mps"
)

// MIG strategies (values of KeyMIGStrategy and Config.MIGStrategy).
const (
	MIGStrategyNone   = "none"
	MIGStrategySingle = "single"
	MIGStrategyMixed  = "mixed"
)

// GPU modes (values of KeyGPUMode and NodeInfo.GPUMode).
const (
	GPUModeCompute  = "compute"
	GPUModeGraphics = "graphics"
	GPUModeUnknown  = "unknown"
)

// Interconnect values (KeyInterconnect).
const (
	InterconnectNVLink = "nvlink"
	InterconnectPCIe   = "pcie"
)

// KeyReplicasOverride is set on a Node by the operator (not by gpunode) to override the
// time-slicing replicas of the full-GPU resource that gpunode's device plugin reads from
// its configuration file: "1" turns sharing off, N > 1 advertises N replicas per GPU.
const KeyReplicasOverride = PrefixPlatform + "gpu.replicas"
