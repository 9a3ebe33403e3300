package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/frameworks"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/stress"
)

// layerOptions are accept's flags for the layers that run workloads.
type layerOptions struct {
	baselineFile      string
	python            string
	frameworksTimeout time.Duration
}

// baselines is the Source the performance checks compare with: the built-in table, with
// --baseline FILE on top. A bad file is a usage error.
func (o *layerOptions) baselines() (baseline.Source, error) {
	if o.baselineFile == "" {
		return baseline.BuiltIn(), nil
	}
	t, err := baseline.Load(o.baselineFile, baseline.BuiltIn())
	if err != nil {
		return nil, usageError(err)
	}
	return t, nil
}

// gatherLayers runs the workloads of layers L4 and L5 when the policy names them, and
// puts what they found into the facts.
func gatherLayers(ctx context.Context, o *layerOptions, g *gathered, layers []accept.Layer, src baseline.Source, prog *progress) {
	f := g.Facts
	if slices.Contains(layers, accept.LayerPerformance) {
		prog.step("measuring performance")
		f.Performance, f.PerformanceErr = measurePerformance(ctx, g, src)
		prog.stepDone("performance", f.PerformanceErr)
	}
	if slices.Contains(layers, accept.LayerFrameworks) {
		prog.step("running PyTorch (frameworks layer)")
		if g.Platform != nil && g.Platform.Simulated() {
			f.FrameworksErr = fmt.Errorf("%w: the GPUs are simulated (--sim); PyTorch runs on real GPUs only", frameworks.ErrNotRun)
		} else {
			f.Frameworks, f.FrameworksErr = frameworks.Run(ctx, frameworks.Options{Interpreter: []string{o.python}, Timeout: o.frameworksTimeout})
		}
		prog.stepDone("frameworks", f.FrameworksErr)
	}
}

// measurePerformance measures every GPU: on simulated GPUs from their performance
// factors, on real ones through the CUDA driver.
func measurePerformance(ctx context.Context, g *gathered, src baseline.Source) (*accept.Performance, error) {
	f := g.Facts
	if f.GPU == nil {
		return nil, fmt.Errorf("no GPUs to measure: %w", f.GPUErr)
	}
	perf := &accept.Performance{Baselines: src}
	if g.Platform != nil && g.Platform.Simulated() {
		perf.GPUs = simulatedPerformance(g.Platform.Sim(), f.GPU.Devices)
		return perf, nil
	}
	gpus, err := cudaPerformance(ctx, f.GPU.Devices)
	if err != nil {
		return nil, err
	}
	perf.GPUs = gpus
	return perf, nil
}

// Sizes of the CUDA measurements: HBM 1 GiB × 100 takes 0.05 s per copy method on an H200, FP32 0.07 s.
const (
	hbmBytes       = 1 << 30
	hbmIters       = 100
	fp32Iters      = 1 << 20
	fp64Iters      = 1 << 19 // half FP32's rate on H100/H200: about the same time
	pcieBytes      = 256 << 20
	pcieIters      = 20
	perTestTimeout = time.Minute
)

// cudaPerformance measures HBM copy bandwidth (cuMemcpyDtoD), FP32 and FP64 FMA
// throughput and pinned PCIe copies both ways on each GPU. CUDA is told to number GPUs by PCI bus id, as NVML does, so CUDA device i is
// the record's GPU i; with CUDA_VISIBLE_DEVICES set that cannot hold, and nothing is
// measured. No CUDA driver: an error wrapping stress.ErrNoCUDA (the checks skip).
func cudaPerformance(ctx context.Context, devs []gpu.Device) ([]accept.GPUPerformance, error) {
	if v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES"); set {
		return nil, fmt.Errorf("CUDA_VISIBLE_DEVICES=%q is set: CUDA's device numbers would not match the driver's GPU indices (unset it to measure)", v)
	}
	if err := os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID"); err != nil {
		return nil, fmt.Errorf("set CUDA_DEVICE_ORDER: %w", err)
	}
	var out []accept.GPUPerformance
	for _, d := range devs {
		gp := accept.GPUPerformance{Index: d.Index, Values: map[baseline.Metric]float64{}, Errors: map[baseline.Metric]string{},
			Detail: map[baseline.Metric]string{}}
		tctx, cancel := context.WithTimeout(ctx, perTestTimeout)
		rs, err := stress.HBMBandwidth(tctx, d.Index, hbmBytes, hbmIters)
		cancel()
		if errors.Is(err, stress.ErrNoCUDA) {
			return nil, err
		}
		recordHBM(&gp, rs, err)
		tctx, cancel = context.WithTimeout(ctx, perTestTimeout)
		fp, err := stress.FP32(tctx, d.Index, fp32Iters)
		cancel()
		if err != nil {
			gp.Errors[baseline.FP32] = err.Error()
		} else {
			gp.Values[baseline.FP32] = fp.TFLOPs
			gp.Detail[baseline.FP32] = fmt.Sprintf("FMA kernel, %d threads × %d steps, every result checked", fp.Threads, fp.Iters)
		}
		measureFP64(ctx, &gp, d.Index)
		measurePCIe(ctx, &gp, d.Index)
		out = append(out, gp)
	}
	return out, nil
}

// measureFP64 runs the checked FP64 FMA kernel.
func measureFP64(ctx context.Context, gp *accept.GPUPerformance, dev int) {
	tctx, cancel := context.WithTimeout(ctx, perTestTimeout)
	defer cancel()
	fp, err := stress.FP64(tctx, dev, fp64Iters)
	if err != nil {
		gp.Errors[baseline.FP64] = err.Error()
		return
	}
	gp.Values[baseline.FP64] = fp.TFLOPs
	gp.Detail[baseline.FP64] = fmt.Sprintf("FP64 FMA kernel, %d threads × %d steps, every result checked", fp.Threads, fp.Iters)
}

// measurePCIe times pinned host↔device copies (cuMemHostAlloc, 256 MiB × 20 each way).
func measurePCIe(ctx context.Context, gp *accept.GPUPerformance, dev int) {
	tctx, cancel := context.WithTimeout(ctx, perTestTimeout)
	defer cancel()
	r, err := stress.RunPCIe(tctx, dev, pcieBytes, pcieIters)
	if err != nil {
		gp.Errors[baseline.PCIeH2D], gp.Errors[baseline.PCIeD2H] = err.Error(), err.Error()
		return
	}
	detail := fmt.Sprintf("pinned memory (cuMemHostAlloc), %d MiB × %d copies", pcieBytes>>20, pcieIters)
	gp.Values[baseline.PCIeH2D], gp.Detail[baseline.PCIeH2D] = r.H2DGBps, detail
	gp.Values[baseline.PCIeD2H], gp.Detail[baseline.PCIeD2H] = r.D2HGBps, detail
}

// recordHBM keeps the cuMemcpyDtoD result of HBMBandwidth (the copy kernels' results are
// correctness checks; the driver's copy is the bandwidth a framework gets).
func recordHBM(gp *accept.GPUPerformance, rs []stress.Result, err error) {
	if err != nil {
		gp.Errors[baseline.HBMCopy] = err.Error()
		return
	}
	for _, r := range rs {
		if r.Method == stress.MethodMemcpyDtoD {
			gp.Values[baseline.HBMCopy] = r.GBps
			gp.Detail[baseline.HBMCopy] = fmt.Sprintf("%s, %d MiB × %d, read + write counted", r.Method, r.Bytes>>20, r.Iters)
			return
		}
	}
	gp.Errors[baseline.HBMCopy] = "no " + stress.MethodMemcpyDtoD + " result"
}
