package cli

// The simulated stress executor: with --sim no kernel runs, and every number is
// generated from the model's nominal rates scaled by the scenario's faults. Each
// metric's note says "simulated"; the text output starts by saying so.

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/stress"
)

// simRates are a model's nominal results: device copy (read+write), FP32 and
// FP64 FMA, memory write+verify, and one NVLink's one-way rate. Copy and FMA
// rates are about 90-97% of the datasheet's peak, as the H200 measured.
type simRates struct{ hbm, fp32, fp64, memory, nvlink float64 }

var simModels = map[string]simRates{
	"NVIDIA A100-SXM4-80GB": {hbm: 1800, fp32: 18.9, fp64: 9.4, memory: 1300, nvlink: 21},
	"NVIDIA H100 80GB HBM3": {hbm: 3000, fp32: 65, fp64: 33, memory: 2200, nvlink: 21},
	"NVIDIA H200":           {hbm: 4300, fp32: 65, fp64: 33, memory: 2900, nvlink: 21},
	"NVIDIA B200":           {hbm: 7000, fp32: 75, fp64: 37, memory: 4800, nvlink: 42},
}

var simDefault = simRates{hbm: 1000, fp32: 20, fp64: 10, memory: 700, nvlink: 20}

// simPCIeEfficiency is the share of the link's theoretical rate a pinned copy reaches.
const simPCIeEfficiency = 0.88

// simExecutor is the stress.Executor of --sim.
type simExecutor struct {
	b   *sim.Backend
	dev map[int]gpu.Device
}

func newSimExecutor(b *sim.Backend, snap *gpu.Snapshot) *simExecutor {
	e := &simExecutor{b: b, dev: map[int]gpu.Device{}}
	for _, d := range snap.Devices {
		e.dev[d.Index] = d
	}
	return e
}

// lost is the CUDA error a lost GPU gives, or an uncorrectable ECC error for
// tests that touch memory.
func (e *simExecutor) fault(t stress.Test, g stress.GPU) error {
	d := e.dev[g.Index]
	if fe := d.Err(gpu.FieldDevice); fe != nil && fe.Lost {
		return &stress.CUDAError{Call: "cuCtxSynchronize", Code: 46, Name: "CUDA_ERROR_DEVICE_UNAVAILABLE", Message: "simulated: " + fe.Message}
	}
	if t == stress.TestMemory && d.ECC.VolatileUncorrected > 0 {
		return &stress.CUDAError{Call: "cuCtxSynchronize", Code: 214, Name: "CUDA_ERROR_ECC_UNCORRECTABLE",
			Message: fmt.Sprintf("simulated: %d uncorrectable ECC errors", d.ECC.VolatileUncorrected)}
	}
	return nil
}

func simMetric(name string, v float64, unit, note string) stress.Metric {
	return stress.Metric{Name: name, Value: v, Unit: unit, Note: "simulated; " + note}
}

// Device implements stress.Executor.
func (e *simExecutor) Device(ctx context.Context, t stress.Test, g stress.GPU, p stress.Plan) (stress.Outcome, error) {
	o := stress.Outcome{Device: g.Name}
	if err := ctx.Err(); err != nil {
		return o, err
	}
	if err := e.fault(t, g); err != nil {
		return o, err
	}
	r, ok := simModels[g.Name]
	if !ok {
		r = simDefault
	}
	bw, compute := e.b.PerfFactor(g.Index)
	// The metrics the performance layer also has come from simMeasured, so both report
	// the same figures; the model's own rates are the fallback for a model without
	// built-in values.
	measured, _, _ := simMeasured(e.b, e.dev[g.Index])
	value := func(m baseline.Metric, fallback float64) float64 {
		if v, ok := measured[m]; ok {
			return v
		}
		return fallback
	}
	switch t {
	case stress.TestHBM:
		o.Metrics = []stress.Metric{simMetric(stress.MethodMemcpyDtoD, value(baseline.HBMCopy, r.hbm*bw), "GB/s", "read+write")}
	case stress.TestFP32:
		o.Metrics = []stress.Metric{simMetric("fp32 FMA", value(baseline.FP32, r.fp32*compute), "TFLOP/s", "checked")}
	case stress.TestFP64:
		o.Metrics = []stress.Metric{simMetric("fp64 FMA", value(baseline.FP64, r.fp64*compute), "TFLOP/s", "checked")}
	case stress.TestMemory:
		tested := float64(e.dev[g.Index].Memory.TotalMiB) / 1024 * 0.97
		o.Metrics = []stress.Metric{
			simMetric("tested", tested, "GiB", "most of the free memory"),
			simMetric("write+verify", r.memory*bw, "GB/s", "bytes written plus read back"),
			simMetric("verified", 3, "passes", "walking-ones, walking-zeros, random"),
			simMetric("wrong", 0, "words", "none"),
		}
	case stress.TestPCIe:
		ref := stress.PCIeTheoreticalGBps(g.PCIeGenMax, g.PCIeWidthMax)
		fallback := stress.PCIeTheoreticalGBps(g.PCIeGen, g.PCIeWidth) * simPCIeEfficiency * bw
		for i, name := range []string{"host to device", "device to host"} {
			now := value([]baseline.Metric{baseline.PCIeH2D, baseline.PCIeD2H}[i], fallback)
			m := simMetric(name, now, "GB/s", fmt.Sprintf("link gen%d x%d (now gen%d x%d)", g.PCIeGenMax, g.PCIeWidthMax, g.PCIeGen, g.PCIeWidth))
			if ref > 0 {
				m.Reference, m.Ratio, m.MinRatio = ref, now/ref, p.PCIeMinRatio
			}
			o.Metrics = append(o.Metrics, m)
		}
	default:
		return o, fmt.Errorf("%w: %s is not a single-GPU test", stress.ErrBadInput, t)
	}
	return o, nil
}

// Pair implements stress.Executor: GPUs that both have active NVLinks reach each
// other over the fewer of them; others have no peer access in the simulation.
func (e *simExecutor) Pair(ctx context.Context, src, dst stress.GPU, _ stress.Plan) (stress.Outcome, error) {
	o := stress.Outcome{Device: src.Name}
	if err := ctx.Err(); err != nil {
		return o, err
	}
	for _, g := range []stress.GPU{src, dst} {
		if err := e.fault(stress.TestP2P, g); err != nil {
			return o, err
		}
	}
	links := min(activeLinks(e.dev[src.Index]), activeLinks(e.dev[dst.Index]))
	if links == 0 {
		return o, fmt.Errorf("%w: simulated: GPU %d and GPU %d share no active NVLink", stress.ErrNotApplicable, src.Index, dst.Index)
	}
	r, ok := simModels[src.Name]
	if !ok {
		r = simDefault
	}
	bwSrc, _ := e.b.PerfFactor(src.Index)
	bwDst, _ := e.b.PerfFactor(dst.Index)
	o.Metrics = []stress.Metric{
		simMetric("bandwidth", float64(links)*r.nvlink*min(bwSrc, bwDst), "GB/s", fmt.Sprintf("%d NVLinks, bytes moved once", links)),
		simMetric("latency", 2.5, "us", "4-byte copy"),
	}
	return o, nil
}

func activeLinks(d gpu.Device) int {
	n := 0
	for _, l := range d.NVLinks {
		if l.Active {
			n++
		}
	}
	return n
}
