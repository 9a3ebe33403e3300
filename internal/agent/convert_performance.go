package agent

import (
	"math"
	"slices"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/record"
)

// stack is the driver in force during the run, cut to the API's limits.
func stack(r *record.Record) v1alpha1.RecordStack {
	return v1alpha1.RecordStack{DriverVersion: cut(r.Driver.Version, 64), CUDAVersion: cut(r.Driver.CUDAVersion, 16)}
}

// performance condenses the performance layer's measurements to one value per GPU model and
// metric for the node: the median of its GPUs of that model (and the lowest GPU), in the
// order the models and metrics first appear. Models beyond MaxPerformanceModels and
// metrics beyond MaxPerformanceMetrics are left out; so are values that are not finite
// non-negative numbers, which the API refuses.
func performance(r *record.Record) []v1alpha1.ModelPerformance {
	modelOf := make(map[int]string, len(r.GPUs))
	for _, g := range r.GPUs {
		modelOf[g.Index] = g.Model
	}
	type key struct{ model, metric string }
	values := map[key][]float64{}
	units := map[key]string{}
	var models []string
	metrics := map[string][]string{}
	for _, c := range r.Checks {
		if c.Layer != accept.LayerPerformance {
			continue
		}
		for _, m := range c.Measurements {
			model, ok := modelOf[m.GPU]
			if !ok || model == "" || m.Metric == "" || !(m.Measured >= 0) || math.IsInf(m.Measured, 0) {
				continue
			}
			k := key{cut(model, 128), cut(m.Metric, 64)}
			if _, seen := metrics[k.model]; !seen {
				if len(models) == v1alpha1.MaxPerformanceModels {
					continue
				}
				models = append(models, k.model)
				metrics[k.model] = nil
			}
			if _, seen := values[k]; !seen {
				if len(metrics[k.model]) == v1alpha1.MaxPerformanceMetrics {
					continue
				}
				metrics[k.model] = append(metrics[k.model], k.metric)
			}
			values[k] = append(values[k], m.Measured)
			units[k] = cut(m.Unit, 16)
		}
	}
	var out []v1alpha1.ModelPerformance
	for _, model := range models {
		mp := v1alpha1.ModelPerformance{Model: model}
		for _, metric := range metrics[model] {
			k := key{model, metric}
			vs := values[k]
			mp.Metrics = append(mp.Metrics, v1alpha1.MetricValue{Name: metric, Value: baseline.Median(vs), Lowest: slices.Min(vs),
				Unit: units[k], GPUs: int32(min(len(vs), v1alpha1.MaxGPUs))})
		}
		out = append(out, mp)
	}
	return out
}
