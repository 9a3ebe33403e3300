package agent_test

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/record"
)

// perfRecord is a record whose GPUs are of the given models (by index) and whose
// performance checks measured values[metric][gpu].
func perfRecord(models []string, values map[string][]float64, metrics ...string) *record.Record {
	r := &record.Record{ID: "n1-20260102T150405Z-abcdef12", Node: "n1", Result: record.ResultPassed,
		Driver: gpu.Driver{Vendor: "nvidia", Version: "580.95.05", CUDAVersion: "13.0"}}
	for i, m := range models {
		r.GPUs = append(r.GPUs, record.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Model: m})
	}
	for _, metric := range metrics {
		c := accept.Result{ID: "performance." + metric, Layer: accept.LayerPerformance, Status: accept.StatusPass}
		for i, v := range values[metric] {
			c.Measurements = append(c.Measurements, accept.Measurement{GPU: i, Metric: metric, Measured: v, Unit: "GB/s"})
		}
		r.Checks = append(r.Checks, c)
	}
	return r
}

func TestTheRecordCarriesThePerformanceMeasuredAndTheDriver(t *testing.T) {
	h200, h100 := "NVIDIA H200", "NVIDIA H100 80GB HBM3"
	cases := []struct {
		name string
		rec  *record.Record
		want []v1alpha1.ModelPerformance
	}{
		{"one model's GPUs give the node one value per metric, their median, and the lowest GPU",
			perfRecord([]string{h200, h200, h200}, map[string][]float64{"hbm-copy": {4300, 4100, 4310}}, "hbm-copy"),
			[]v1alpha1.ModelPerformance{{Model: h200, Metrics: []v1alpha1.MetricValue{{Name: "hbm-copy", Value: 4300, Lowest: 4100, Unit: "GB/s", GPUs: 3}}}}},
		{"an even number of GPUs gives the mean of the middle two",
			perfRecord([]string{h200, h200, h200, h200}, map[string][]float64{"hbm-copy": {1, 2, 4, 100}}, "hbm-copy"),
			[]v1alpha1.ModelPerformance{{Model: h200, Metrics: []v1alpha1.MetricValue{{Name: "hbm-copy", Value: 3, Lowest: 1, Unit: "GB/s", GPUs: 4}}}}},
		{"two models on one node are kept apart, in the order they appear",
			perfRecord([]string{h100, h200}, map[string][]float64{"hbm-copy": {2900, 4300}, "pcie-h2d": {50, 55}}, "hbm-copy", "pcie-h2d"),
			[]v1alpha1.ModelPerformance{
				{Model: h100, Metrics: []v1alpha1.MetricValue{{Name: "hbm-copy", Value: 2900, Lowest: 2900, Unit: "GB/s", GPUs: 1}, {Name: "pcie-h2d", Value: 50, Lowest: 50, Unit: "GB/s", GPUs: 1}}},
				{Model: h200, Metrics: []v1alpha1.MetricValue{{Name: "hbm-copy", Value: 4300, Lowest: 4300, Unit: "GB/s", GPUs: 1}, {Name: "pcie-h2d", Value: 55, Lowest: 55, Unit: "GB/s", GPUs: 1}}}}},
		{"a value the API cannot hold (not a number, infinite, negative) is left out",
			perfRecord([]string{h200, h200, h200, h200}, map[string][]float64{"hbm-copy": {math.NaN(), math.Inf(1), -5, 4000}}, "hbm-copy"),
			[]v1alpha1.ModelPerformance{{Model: h200, Metrics: []v1alpha1.MetricValue{{Name: "hbm-copy", Value: 4000, Lowest: 4000, Unit: "GB/s", GPUs: 1}}}}},
		{"a run without the performance layer carries no performance",
			perfRecord([]string{h200}, nil), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := agent.RecordObject(c.rec, 1)
			if !reflect.DeepEqual(obj.Spec.Performance, c.want) {
				t.Errorf("performance = %+v\nwant %+v", obj.Spec.Performance, c.want)
			}
			if s := obj.Spec.Stack; s.DriverVersion != "580.95.05" || s.CUDAVersion != "13.0" {
				t.Errorf("stack = %+v, want driver 580.95.05 and CUDA 13.0", s)
			}
		})
	}
}

func TestThePerformanceOfARecordIsCutToTheLimitsOfTheAPI(t *testing.T) {
	var models []string
	values := map[string][]float64{}
	var metrics []string
	for i := range 12 { // 12 models, one GPU each
		models = append(models, fmt.Sprintf("model %d", i))
	}
	for m := range 20 { // 20 metrics
		name := fmt.Sprintf("metric-%d", m)
		metrics = append(metrics, name)
		for range models {
			values[name] = append(values[name], float64(m+1))
		}
	}
	obj := agent.RecordObject(perfRecord(models, values, metrics...), 1)
	if len(obj.Spec.Performance) != v1alpha1.MaxPerformanceModels {
		t.Fatalf("%d models, want %d", len(obj.Spec.Performance), v1alpha1.MaxPerformanceModels)
	}
	for _, mp := range obj.Spec.Performance {
		if len(mp.Metrics) != v1alpha1.MaxPerformanceMetrics {
			t.Errorf("model %s: %d metrics, want %d", mp.Model, len(mp.Metrics), v1alpha1.MaxPerformanceMetrics)
		}
	}
}
