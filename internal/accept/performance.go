package accept

import (
	"fmt"
	"math"

	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Performance is what the performance layer measured on each GPU, and where the expected
// values come from. The caller measures (CUDA, or the simulated GPUs); the checks only
// compare.
type Performance struct {
	// Baselines finds each GPU model's expected values.
	Baselines baseline.Source
	// GPUs holds one entry per GPU the caller tried to measure, by NVML index.
	GPUs []GPUPerformance
}

// GPUPerformance is one GPU's measurements.
type GPUPerformance struct {
	Index int
	// Values are the measured values by metric, in the metric's unit.
	Values map[baseline.Metric]float64
	// Errors: metrics whose measurement failed (a CUDA error, a wrong result), with why.
	Errors map[baseline.Metric]string
	// NotMeasured: metrics not measured on purpose, with why (the check skips).
	NotMeasured map[baseline.Metric]string
	// Detail says how a value was measured ("cuMemcpyDtoD 1 GiB × 20"), per metric.
	Detail map[baseline.Metric]string
}

// Measurement is one measured value against its baseline, as the record keeps it.
type Measurement struct {
	GPU      int     `json:"gpu"`
	UUID     string  `json:"uuid"`
	Metric   string  `json:"metric"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	// Baseline is the expected value; 0 when the baseline has none for this GPU's model.
	Baseline float64 `json:"baseline,omitempty"`
	// Ratio is Measured / Baseline.
	Ratio float64 `json:"ratio,omitempty"`
	// MinRatio is the policy's threshold: below it the check fails.
	MinRatio float64 `json:"minRatio"`
	// BaselineModel and BaselineOrigin name the baseline row and where it came from.
	BaselineModel  string `json:"baselineModel,omitempty"`
	BaselineOrigin string `json:"baselineOrigin,omitempty"`
	// Method says how the value was measured.
	Method string `json:"method,omitempty"`
}

func performanceChecks() []Check {
	fix := "Compare with `gpunode stress` on the GPU: look for clocks held down (power or thermal " +
		"capping, `nvidia-smi -q -d PERFORMANCE`), a degraded PCIe link, other processes on the GPU, " +
		"or a baseline that does not fit this SKU (--baseline FILE). A GPU that stays slow is an RMA case."
	var out []Check
	for _, m := range baseline.Metrics {
		out = append(out, Check{ID: "performance." + string(m), Layer: LayerPerformance, Title: m.Title(), Fix: fix, Run: perfCheck(m)})
	}
	return out
}

// Judge compares a measured value with its baseline: the ratio and the status (fail below
// minRatio). A missing or non-positive baseline gives no ratio and a skip.
func Judge(measured, expected, minRatio float64) (ratio float64, st Status) {
	if !(expected > 0) {
		return 0, StatusSkip
	}
	ratio = measured / expected
	if ratio < minRatio || math.IsNaN(ratio) {
		return ratio, StatusFail
	}
	return ratio, StatusPass
}

// perfCheck compares metric m on every GPU with the GPU model's baseline.
func perfCheck(m baseline.Metric) func(f *Facts, p *Policy) Verdict {
	return func(f *Facts, p *Policy) Verdict {
		if f.PerformanceErr != nil {
			return skip("not measured: %v", f.PerformanceErr)
		}
		if f.Performance == nil {
			return skip("not measured: this run gathered no performance measurements")
		}
		minRatio := float64(p.Thresholds.MinPerformancePercent) / 100
		var ms []Measurement
		v := perGPU(f, nil, func(d *gpu.Device) gpuVerdict {
			meas, gv := judgeGPU(f.Performance, d, m, minRatio)
			if meas != nil {
				ms = append(ms, *meas)
			}
			return gv
		})
		v.Measurements = ms
		return v
	}
}

// judgeGPU is one GPU's verdict for metric m and, when it was measured, its measurement.
func judgeGPU(perf *Performance, d *gpu.Device, m baseline.Metric, minRatio float64) (*Measurement, gpuVerdict) {
	var gp *GPUPerformance
	for i := range perf.GPUs {
		if perf.GPUs[i].Index == d.Index {
			gp = &perf.GPUs[i]
		}
	}
	switch {
	case gp == nil:
		return nil, gpuVerdict{StatusSkip, "not measured on this GPU", ""}
	case gp.Errors[m] != "":
		return nil, gpuVerdict{StatusFail, "measurement failed: " + gp.Errors[m], ""}
	case gp.NotMeasured[m] != "":
		return nil, gpuVerdict{StatusSkip, "not measured: " + gp.NotMeasured[m], ""}
	}
	val, ok := gp.Values[m]
	if !ok {
		return nil, gpuVerdict{StatusSkip, "not measured on this GPU", ""}
	}
	meas := &Measurement{GPU: d.Index, UUID: d.UUID, Metric: string(m), Measured: round(val, 2), Unit: m.Unit(),
		MinRatio: minRatio, Method: gp.Detail[m]}
	var link baseline.Link
	if d.Err(gpu.FieldPCIeLink) == nil {
		link = baseline.Link{Gen: d.PCI.LinkGenMax, Width: d.PCI.LinkWidthMax}
	}
	var exp baseline.Expected
	if perf.Baselines != nil {
		exp, ok = perf.Baselines.Lookup(d.Name, link)
	}
	if !ok || perf.Baselines == nil {
		return meas, gpuVerdict{StatusSkip, fmt.Sprintf("%.1f %s measured; no baseline for model %q (give one with --baseline FILE)", val, m.Unit(), d.Name), ""}
	}
	want := exp.Values[m]
	meas.BaselineModel, meas.BaselineOrigin = exp.Model, exp.Origin
	ratio, st := Judge(val, want, minRatio)
	if st == StatusSkip {
		why := "the baseline of " + exp.Model + " has no value for it"
		if (m == baseline.PCIeH2D || m == baseline.PCIeD2H) && link.Width == 0 {
			why = "the GPU's PCIe link is unknown, so no PCIe baseline can be derived"
		}
		return meas, gpuVerdict{StatusSkip, fmt.Sprintf("%.1f %s measured; %s", val, m.Unit(), why), ""}
	}
	meas.Baseline, meas.Ratio = round(want, 2), round(ratio, 4)
	msg := fmt.Sprintf("%.1f %s = %.0f%% of %.1f (%s, %s)", val, m.Unit(), 100*ratio, want, exp.Model, exp.Origin)
	if st == StatusFail {
		msg = fmt.Sprintf("%.1f %s is %.0f%% of the %.1f baseline, below %.0f%% (%s, %s)", val, m.Unit(), 100*ratio, want, 100*minRatio, exp.Model, exp.Origin)
	}
	return meas, gpuVerdict{st, msg, ""}
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
