package record

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/accept"
)

// layerTemplate fills the template fields that layers L4 (performance) and L5
// (frameworks) answer, when they ran.
func layerTemplate(t *Template, rs []accept.Result) {
	if r := resultByID(rs, "frameworks.all-reduce"); r != nil {
		perf := performanceLine(rs)
		v := fmt.Sprintf("NCCL all-reduce (L5): %s [%s]", r.Message, r.Status)
		if perf != "" {
			v += "; " + perf
		}
		t.NCCLRDMAStorageBaseline = Field{Value: v + "; RDMA and storage: not measured by node-local acceptance"}
	} else if perf := performanceLine(rs); perf != "" {
		t.NCCLRDMAStorageBaseline = Field{Value: perf + "; NCCL, RDMA and storage: not measured by this run"}
	}
	var parts []string
	for _, id := range []string{"frameworks.pytorch", "frameworks.allocate", "frameworks.matmul", "frameworks.checkpoint"} {
		if r := resultByID(rs, id); r != nil {
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(id, "frameworks."), r.Status))
		}
	}
	if len(parts) > 0 {
		t.RepresentativeTraining = Field{Value: "PyTorch smoke test (L5), not a training run: " + strings.Join(parts, ", ")}
	}
}

// performanceLine summarises the performance layer: each metric's worst ratio.
func performanceLine(rs []accept.Result) string {
	var parts []string
	for _, r := range rs {
		if r.Layer != accept.LayerPerformance {
			continue
		}
		worst := 0.0
		for _, m := range r.Measurements {
			if m.Ratio > 0 && (worst == 0 || m.Ratio < worst) {
				worst = m.Ratio
			}
		}
		name := strings.TrimPrefix(r.ID, "performance.")
		if worst > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (lowest %.0f%% of baseline)", name, r.Status, 100*worst))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", name, r.Status))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "performance (L4): " + strings.Join(parts, ", ")
}
