package cli

// SIMULATED MEASUREMENTS (--sim only): the one source of what a simulated GPU "measures",
// for `stress --sim` and for the performance layer of `accept --sim`, so both say the same
// figures for the same scenario.

import (
	"fmt"

	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// simMeasured is a simulated GPU's value of every baseline metric: its model's built-in
// value, bandwidths × the bandwidth factor and throughputs × the compute factor (1 when
// healthy; a slow-bandwidth or slow-compute fault sets them), PCIe over the link the GPU
// trained at (a narrow or slow link moves less). false when the model has no built-in
// values.
func simMeasured(b *sim.Backend, d gpu.Device) (map[baseline.Metric]float64, map[baseline.Metric]string, bool) {
	e, ok := baseline.BuiltIn().Lookup(d.Name, baseline.Link{Gen: d.PCI.LinkGen, Width: d.PCI.LinkWidth})
	if !ok {
		return nil, nil, false
	}
	bw, comp := b.PerfFactor(d.Index)
	vals, detail := map[baseline.Metric]float64{}, map[baseline.Metric]string{}
	for m, v := range e.Values {
		factor, kind := bw, "bandwidth"
		if m == baseline.FP32 || m == baseline.FP64 {
			factor, kind = comp, "compute"
		}
		vals[m] = v * factor
		detail[m] = fmt.Sprintf("simulated: built-in baseline × %s factor %.2f", kind, factor)
		if m == baseline.PCIeH2D || m == baseline.PCIeD2H {
			detail[m] += fmt.Sprintf(", over the link at gen%d x%d", d.PCI.LinkGen, d.PCI.LinkWidth)
		}
	}
	return vals, detail, true
}
