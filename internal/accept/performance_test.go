package accept

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
)

func TestJudge(t *testing.T) {
	cases := []struct {
		name               string
		measured, expected float64
		min                float64
		wantRatio          float64
		want               Status
	}{
		{"a value at its baseline passes", 100, 100, 0.9, 1, StatusPass},
		{"a value above its baseline passes", 4302.6, 4080, 0.9, 4302.6 / 4080, StatusPass},
		{"a value exactly at the threshold passes", 90, 100, 0.9, 0.9, StatusPass},
		{"a value just below the threshold fails", 89.9, 100, 0.9, 0.899, StatusFail},
		{"a GPU that measured nothing fails", 0, 100, 0.9, 0, StatusFail},
		{"no baseline value gives no ratio and a skip", 100, 0, 0.9, 0, StatusSkip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, st := Judge(c.measured, c.expected, c.min)
			if st != c.want || r < c.wantRatio-1e-9 || r > c.wantRatio+1e-9 {
				t.Errorf("Judge(%g, %g, %g) = %g, %s; want %g, %s", c.measured, c.expected, c.min, r, st, c.wantRatio, c.want)
			}
		})
	}
}

// measuredAt gives every GPU of f every metric at frac of its built-in baseline.
func measuredAt(f *Facts, frac float64) *Performance {
	perf := &Performance{Baselines: baseline.BuiltIn()}
	for _, d := range f.GPU.Devices {
		e, _ := perf.Baselines.Lookup(d.Name, baseline.Link{Gen: d.PCI.LinkGenMax, Width: d.PCI.LinkWidthMax})
		g := GPUPerformance{Index: d.Index, Values: map[baseline.Metric]float64{}}
		for m, v := range e.Values {
			g.Values[m] = v * frac
		}
		perf.GPUs = append(perf.GPUs, g)
	}
	return perf
}

func runPerformance(t *testing.T, f *Facts, p *Policy) map[string]Result {
	t.Helper()
	p.Layers = []Layer{LayerPerformance}
	rep, err := Run(context.Background(), f, p, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Result{}
	for _, r := range rep.Results {
		out[r.ID] = r
	}
	if len(out) != len(baseline.Metrics) {
		t.Fatalf("%d performance checks ran, want %d", len(out), len(baseline.Metrics))
	}
	return out
}

func TestPerformanceChecks(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(f *Facts, p *Policy)
		check   string
		want    Status
		message string // part of the message
		ratio   float64
	}{
		{"every GPU at its baseline passes with its ratio", func(*Facts, *Policy) {}, "performance.hbm-copy", StatusPass, "= 100% of 2847.5", 1},
		{"one GPU at half the HBM bandwidth fails and is named", func(f *Facts, _ *Policy) {
			f.Performance.GPUs[3].Values[baseline.HBMCopy] /= 2
		}, "performance.hbm-copy", StatusFail, "GPU 3: 1423.8 GB/s is 50% of the 2847.5 baseline, below 90%", 0.5},
		{"a lower policy threshold lets a slower GPU pass", func(f *Facts, p *Policy) {
			f.Performance.GPUs[3].Values[baseline.FP32] *= 0.6
			p.Thresholds.MinPerformancePercent = 50
		}, "performance.fp32", StatusPass, "values differ per GPU", 0.6},
		{"no CUDA driver skips with the reason", func(f *Facts, _ *Policy) {
			f.Performance, f.PerformanceErr = nil, errors.New("CUDA driver not found (libcuda.so.1): dlopen failed")
		}, "performance.fp32", StatusSkip, "not measured: CUDA driver not found", 0},
		{"a run without measurements skips saying so", func(f *Facts, _ *Policy) { f.Performance = nil },
			"performance.hbm-copy", StatusSkip, "gathered no performance measurements", 0},
		{"a metric not measured on purpose skips with why", func(f *Facts, _ *Policy) {
			for i := range f.Performance.GPUs {
				delete(f.Performance.GPUs[i].Values, baseline.FP64)
				f.Performance.GPUs[i].NotMeasured = map[baseline.Metric]string{baseline.FP64: "no FP64 test in this build"}
			}
		}, "performance.fp64", StatusSkip, "not measured: no FP64 test in this build (all 8 GPUs)", 0},
		{"a failed measurement fails", func(f *Facts, _ *Policy) {
			f.Performance.GPUs[0].Errors = map[baseline.Metric]string{baseline.FP32: "silent data corruption: 3 threads differ"}
		}, "performance.fp32", StatusFail, "GPU 0: measurement failed: silent data corruption", 0},
		{"a model without a baseline skips and keeps the measured value", func(f *Facts, _ *Policy) {
			for i := range f.GPU.Devices {
				f.GPU.Devices[i].Name = "NVIDIA H100 NVL-X"
			}
		}, "performance.hbm-copy", StatusSkip, `no baseline for model "NVIDIA H100 NVL-X"`, 0},
		{"an unknown PCIe link gives no PCIe baseline", func(f *Facts, _ *Policy) {
			for i := range f.GPU.Devices {
				f.GPU.Devices[i].Errors = map[gpu.Field]gpu.FieldError{gpu.FieldPCIeLink: {NotSupported: true, Message: "Not Supported"}}
			}
		}, "performance.pcie-h2d", StatusSkip, "PCIe link is unknown", 0},
		{"a GPU missing from the measurements skips", func(f *Facts, _ *Policy) { f.Performance.GPUs = f.Performance.GPUs[:1] },
			"performance.hbm-copy", StatusPass, "1/8 GPUs", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := healthyFacts(t)
			f.Performance = measuredAt(f, 1)
			p := DefaultPolicy()
			c.mutate(f, &p)
			got := runPerformance(t, f, &p)[c.check]
			if got.Status != c.want || !strings.Contains(got.Message, c.message) {
				t.Fatalf("%s = %s %q, want %s containing %q", c.check, got.Status, got.Message, c.want, c.message)
			}
			if got.Status == StatusFail && got.Fix == "" {
				t.Error("a failing performance check without a fix")
			}
			if c.ratio == 0 {
				return
			}
			var seen bool
			for _, m := range got.Measurements {
				if m.GPU == 3 || c.ratio == 1 {
					seen = true
					if m.Ratio < c.ratio-0.001 || m.Ratio > c.ratio+0.001 || m.Baseline <= 0 || m.Unit == "" || m.BaselineOrigin == "" || m.UUID == "" {
						t.Errorf("measurement %+v, want ratio %g with baseline, unit, origin and UUID", m, c.ratio)
					}
				}
			}
			if !seen {
				t.Errorf("no measurement in %+v", got.Measurements)
			}
		})
	}
}

func TestOnDemandLayersParseButDoNotRunByDefault(t *testing.T) {
	for _, s := range []string{"performance", "L4", "frameworks", "l5"} {
		if _, err := ParseLayer(s); err != nil {
			t.Errorf("ParseLayer(%q): %v", s, err)
		}
	}
	p := DefaultPolicy()
	for _, l := range p.LayersOrDefault() {
		if l == LayerPerformance || l == LayerFrameworks {
			t.Errorf("the default layers include %s, which runs workloads", l)
		}
	}
	if LayerPerformance.Code() != "L4" || LayerFrameworks.Code() != "L5" {
		t.Errorf("codes %s %s", LayerPerformance.Code(), LayerFrameworks.Code())
	}
}
