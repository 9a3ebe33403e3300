package v1alpha1

// One API per node serves its GPUs to pods as nvidia.com/gpu: the device plugin or DRA,
// never both.
const (
	// LabelGPUAPI is the node label that picks the API the agent serves the node's GPUs
	// through: GPUAPIDevicePlugin or GPUAPIDRA (absent: DRA when the agent runs with --dra,
	// else the device plugin).
	LabelGPUAPI = "gpunode.dev/gpu-api"
	// GPUAPIDevicePlugin and GPUAPIDRA are the values of LabelGPUAPI and status.gpuAPI.
	GPUAPIDevicePlugin = "device-plugin"
	GPUAPIDRA          = "dra"
	// DRADriver is the DRA driver of gpunode's agent: its ResourceSlices and DeviceClasses.
	DRADriver = "gpu.gpunode.dev"
)
