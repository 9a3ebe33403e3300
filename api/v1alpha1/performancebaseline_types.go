package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys of performance baselines (PerformanceBaseline): the baseline controller writes them.
const (
	// FieldManagerBaseline is the baseline controller's field manager: the
	// PerformanceBaselines, their label, spec and status.
	FieldManagerBaseline = "gpunode-baseline"
	// LabelBaselineModel, on a PerformanceBaseline, is its GPU model, normalized ("h200").
	LabelBaselineModel = "gpunode.dev/gpu-model"
)

// PerformanceBaselineSpec names the fleet a baseline is of: one GPU model on one driver
// version.
type PerformanceBaselineSpec struct {
	// Model is the GPU model as the drivers name it ("NVIDIA H200").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model"`
	// DriverVersion is the driver the measurements were made on ("" when the records
	// did not say).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
}

// PerformanceBaselineStatus is the fleet's baseline: per metric, the median of the
// accepted nodes' values.
type PerformanceBaselineStatus struct {
	// Nodes counts the accepted nodes of the model on the driver: each node's latest
	// record of them passed and measured something.
	// +kubebuilder:validation:Minimum=0
	Nodes int32 `json:"nodes"`
	// MinSamples is the fewest nodes a metric needs to have a baseline.
	// +kubebuilder:validation:Minimum=1
	MinSamples int32 `json:"minSamples"`
	// Metrics are the metrics measured on at least MinSamples nodes.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []BaselineMetric `json:"metrics,omitempty"`
	// ComputedAt is when these values were computed (the last time they changed).
	ComputedAt metav1.Time `json:"computedAt"`
}

// BaselineMetric is one metric's fleet baseline.
type BaselineMetric struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=16
	Unit string `json:"unit"`
	// Median is the median over the nodes of each node's value (the median of its GPUs).
	// +kubebuilder:validation:Minimum=0
	Median float64 `json:"median"`
	// MAD is the median absolute deviation of the nodes' values from Median.
	// +kubebuilder:validation:Minimum=0
	MAD float64 `json:"mad"`
	// Samples counts the nodes.
	// +kubebuilder:validation:Minimum=1
	Samples int32 `json:"samples"`
}

// PerformanceBaseline is the performance the accepted nodes of one GPU model on one driver
// version reach, from their AcceptanceRecords: written by the baseline controller alone,
// read by acceptance and upgrade gates.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pb,categories=gpu
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driverVersion`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Computed",type=date,JSONPath=`.status.computedAt`
type PerformanceBaseline struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PerformanceBaselineSpec `json:"spec"`
	// +optional
	Status PerformanceBaselineStatus `json:"status,omitzero"`
}

// PerformanceBaselineList is a list of PerformanceBaselines.
//
// +kubebuilder:object:root=true
type PerformanceBaselineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PerformanceBaseline `json:"items"`
}
