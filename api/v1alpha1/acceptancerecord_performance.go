package v1alpha1

// Limits of the performance part of an AcceptanceRecord.
const (
	// MaxPerformanceModels is the most GPU models one record's performance lists.
	MaxPerformanceModels = 8
	// MaxPerformanceMetrics is the most metrics per GPU model.
	MaxPerformanceMetrics = 16
)

// RecordStack is the NVIDIA software in force while the run measured: what the driver
// reported through NVML.
type RecordStack struct {
	// DriverVersion is the kernel driver's version, e.g. "580.159.04".
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
	// CUDAVersion is the highest CUDA version the driver supports, e.g. "13.0".
	// +kubebuilder:validation:MaxLength=16
	// +optional
	CUDAVersion string `json:"cudaVersion,omitempty"`
}

// ModelPerformance is what the performance layer (L4) measured on the node's GPUs of one
// model: one value per metric for the node, the median of its GPUs of that model.
type ModelPerformance struct {
	// Model is the GPU model as the driver names it ("NVIDIA H200").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model"`
	// +kubebuilder:validation:MaxItems=16
	Metrics []MetricValue `json:"metrics"`
}

// MetricValue is one metric measured on a node's GPUs of one model.
type MetricValue struct {
	// Name is the metric: hbm-copy, fp32, fp64, pcie-h2d, pcie-d2h.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// Value is the median over the GPUs measured.
	// +kubebuilder:validation:Minimum=0
	Value float64 `json:"value"`
	// Lowest is the lowest GPU's value.
	// +kubebuilder:validation:Minimum=0
	Lowest float64 `json:"lowest"`
	// Unit is the values' unit ("GB/s", "TFLOP/s").
	// +kubebuilder:validation:MaxLength=16
	Unit string `json:"unit"`
	// GPUs counts the GPUs measured.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	GPUs int32 `json:"gpus"`
}
