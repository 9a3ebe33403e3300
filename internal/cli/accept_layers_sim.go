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

// simulatedPerformance gives each simulated GPU every metric of its built-in baseline as
// simMeasured has it: what `stress --sim` reports for the same GPU.
func simulatedPerformance(b *sim.Backend, devs []gpu.Device) []accept.GPUPerformance {
	var out []accept.GPUPerformance
	for _, d := range devs {
		gp := accept.GPUPerformance{Index: d.Index, Values: map[baseline.Metric]float64{}, Detail: map[baseline.Metric]string{},
			NotMeasured: map[baseline.Metric]string{}}
		vals, detail, _ := simMeasured(b, d)
		for _, m := range baseline.Metrics {
			v, has := vals[m]
			if !has {
				gp.NotMeasured[m] = fmt.Sprintf("simulated GPU model %q has no built-in value to simulate", d.Name)
				continue
			}
			gp.Values[m], gp.Detail[m] = v, detail[m]
		}
		out = append(out, gp)
	}
	return out
}
