package cli

// SIMULATED MEASUREMENTS (--sim only). Nothing here touches a GPU: a simulated GPU
// "measures" its model's built-in baseline scaled by its performance factors (1 when
// healthy; a slow-bandwidth or slow-compute fault sets the factor). This proves the
// performance layer's pipeline and its verdicts, not any hardware.

import (
	"fmt"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/baseline"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// simulatedPerformance gives each simulated GPU every metric of its built-in baseline,
// bandwidths × the bandwidth factor and throughputs × the compute factor.
func simulatedPerformance(b *sim.Backend, devs []gpu.Device) []accept.GPUPerformance {
	nominal := baseline.BuiltIn()
	var out []accept.GPUPerformance
	for _, d := range devs {
		bw, comp := b.PerfFactor(d.Index)
		gp := accept.GPUPerformance{Index: d.Index, Values: map[baseline.Metric]float64{}, Detail: map[baseline.Metric]string{},
			NotMeasured: map[baseline.Metric]string{}}
		link := baseline.Link{Gen: d.PCI.LinkGenMax, Width: d.PCI.LinkWidthMax}
		e, ok := nominal.Lookup(d.Name, link)
		for _, m := range baseline.Metrics {
			factor, kind := bw, "bandwidth"
			if m == baseline.FP32 || m == baseline.FP64 {
				factor, kind = comp, "compute"
			}
			v, has := e.Values[m]
			if !ok || !has {
				gp.NotMeasured[m] = fmt.Sprintf("simulated GPU model %q has no built-in value to simulate", d.Name)
				continue
			}
			gp.Values[m] = v * factor
			gp.Detail[m] = fmt.Sprintf("simulated: built-in baseline × %s factor %.2f", kind, factor)
		}
		out = append(out, gp)
	}
	return out
}
