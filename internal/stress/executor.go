package stress

import (
	"context"
	"fmt"
	"strings"
)

// CUDA is the Executor for real GPUs through the CUDA driver. Zero fields take
// the defaults in NewCUDA.
type CUDA struct {
	HBMBytes   uint64 // each of the copy test's two buffers
	HBMIters   int    // copies a timed batch
	FMAIters   int    // FMA steps a launch
	PCIeBytes  uint64 // one host<->device copy
	PCIeIters  int
	P2PBytes   uint64 // one peer copy
	P2PIters   int
	MemoryTest MemoryOptions // Duration is the plan's
}

// NewCUDA returns the executor with the sizes used on the H200 (docs/stress.md):
// 4 GiB copy buffers, 2^20 FMA steps, 1 GiB PCIe and peer copies.
func NewCUDA() *CUDA {
	return &CUDA{HBMBytes: 4 << 30, HBMIters: 20, FMAIters: 1 << 20, PCIeBytes: 1 << 30, PCIeIters: 10, P2PBytes: 1 << 30, P2PIters: 10}
}

var _ Executor = (*CUDA)(nil)

// Device implements Executor.
func (c *CUDA) Device(ctx context.Context, t Test, g GPU, p Plan) (Outcome, error) {
	o := Outcome{Device: g.Name}
	switch t {
	case TestHBM:
		rs, err := RunHBM(ctx, g.Ordinal, c.HBMBytes, c.HBMIters, p.Duration)
		for _, r := range rs {
			o.Device = r.Device
			o.Metrics = append(o.Metrics, Metric{Name: r.Method, Value: r.GBps, Unit: "GB/s",
				Note: fmt.Sprintf("read+write, %d MiB x %d copies", r.Bytes>>20, r.Iters)})
		}
		return o, err
	case TestFP32, TestFP64:
		r, err := RunFMA(ctx, g.Ordinal, Precision(t), c.FMAIters, p.Duration)
		if r.Device != "" {
			o.Device = r.Device
		}
		if r.Rounds > 0 {
			o.Metrics = append(o.Metrics, Metric{Name: string(t) + " FMA", Value: r.TFLOPs, Unit: "TFLOP/s",
				Note: fmt.Sprintf("%d threads x 8 chains x %d steps x %d launches, checked", r.Threads, r.Iters, r.Rounds)})
		}
		return o, err
	case TestMemory:
		opts := c.MemoryTest
		opts.Duration = p.Duration
		r, err := RunMemory(ctx, g.Ordinal, opts)
		return memoryOutcome(o, r), err
	case TestPCIe:
		r, err := RunPCIe(ctx, g.Ordinal, c.PCIeBytes, c.PCIeIters)
		if r.Device != "" {
			o.Device = r.Device
		}
		if err == nil {
			o.Metrics = pcieMetrics(r, g, p.PCIeMinRatio)
		}
		return o, err
	}
	return o, fmt.Errorf("%w: %s is not a single-GPU test", ErrBadInput, t)
}

// Pair implements Executor.
func (c *CUDA) Pair(ctx context.Context, src, dst GPU, p Plan) (Outcome, error) {
	o := Outcome{Device: src.Name}
	r, err := RunP2P(ctx, src.Ordinal, dst.Ordinal, c.P2PBytes, c.P2PIters)
	if err != nil {
		return o, err
	}
	if !r.PeerAccess {
		return o, fmt.Errorf("%w: GPU %d cannot access GPU %d's memory (cuDeviceCanAccessPeer)", ErrNotApplicable, dst.Index, src.Index)
	}
	o.Device = r.SrcDev
	o.Metrics = p2pMetrics(r)
	return o, nil
}

// memoryOutcome adds the memory test's metrics and one finding per wrong word.
func memoryOutcome(o Outcome, r MemoryResult) Outcome {
	if r.Device != "" {
		o.Device = r.Device
	}
	if r.Passes > 0 {
		o.Metrics = append(o.Metrics,
			Metric{Name: "tested", Value: float64(r.Bytes) / (1 << 30), Unit: "GiB",
				Note: fmt.Sprintf("of %.1f GiB free, %.1f GiB total", float64(r.FreeBytes)/(1<<30), float64(r.TotalBytes)/(1<<30))},
			Metric{Name: "verified", Value: float64(r.Passes), Unit: "passes", Note: strings.Join(r.Patterns, ", ")},
			Metric{Name: "write+verify", Value: r.GBps, Unit: "GB/s"},
			Metric{Name: "wrong", Value: float64(r.ErrorCount), Unit: "words"})
	}
	for i := range r.Errors {
		o.Findings = append(o.Findings, Finding{Kind: FindingMemory, Message: r.Errors[i].String(), Memory: &r.Errors[i]})
	}
	return o
}

// pcieMetrics are both directions against the link's theoretical rate.
func pcieMetrics(r PCIeResult, g GPU, minRatio float64) []Metric {
	ref := PCIeTheoreticalGBps(g.PCIeGenMax, g.PCIeWidthMax)
	note := fmt.Sprintf("pinned, %d MiB x %d; link gen%d x%d (now gen%d x%d)", r.Bytes>>20, r.Iters, g.PCIeGenMax, g.PCIeWidthMax, g.PCIeGen, g.PCIeWidth)
	if ref == 0 {
		note = fmt.Sprintf("pinned, %d MiB x %d; PCIe link unknown, no reference", r.Bytes>>20, r.Iters)
	}
	m := func(name string, v float64) Metric {
		out := Metric{Name: name, Value: v, Unit: "GB/s", Note: note}
		if ref > 0 {
			out.Reference, out.Ratio, out.MinRatio = ref, v/ref, minRatio
		}
		return out
	}
	return []Metric{m("host to device", r.H2DGBps), m("device to host", r.D2HGBps)}
}

// p2pMetrics are a pair's bandwidth and small-copy latency.
func p2pMetrics(r P2PResult) []Metric {
	return []Metric{
		{Name: "bandwidth", Value: r.GBps, Unit: "GB/s", Note: fmt.Sprintf("cuMemcpyPeerAsync, %d MiB x %d, bytes moved once", r.Bytes>>20, r.Iters)},
		{Name: "latency", Value: r.LatencyUS, Unit: "us", Note: fmt.Sprintf("mean of %d copies of %d bytes", r.LatencyIters, r.LatencyBytes)},
	}
}
