package acceptance

import (
	"strings"
	"testing"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestEvaluate(t *testing.T) {
	fleet := policy("fleet", 1, nil, 8)
	node := func() *v1alpha1.GPUNode {
		gn := gpuNode("node-a", 8)
		gn.Spec.AcceptanceGeneration = 2
		return answered(gn, "node-a-2", v1alpha1.AcceptancePassed)
	}
	withGPU := func(r *v1alpha1.AcceptanceRecord, i int, change func(*v1alpha1.RecordGPU)) *v1alpha1.AcceptanceRecord {
		change(&r.Spec.GPUs[i])
		return r
	}
	unlisted := node()
	unlisted.Status.AcceleratorClass = "a100-sxm-80gb"
	tests := []struct {
		name       string
		gn         *v1alpha1.GPUNode
		record     *v1alpha1.AcceptanceRecord
		wantOK     bool
		wantReason string
		wantMsg    string
	}{
		{"a passed run with the class's GPU count and model is accepted", node(), record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 8), true, v1alpha1.ReasonPassed, "passed"},
		{"a passed run with fewer GPUs than the class expects is held", node(), record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 7), false, v1alpha1.ReasonExpectationNotMet, "gpu-count: 7 GPUs found, 8 expected"},
		{"a passed run with a GPU of another model is held", node(), withGPU(record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 8), 3, func(g *v1alpha1.RecordGPU) { g.Model = "NVIDIA A100-SXM4-80GB" }),
			false, v1alpha1.ReasonExpectationNotMet, `gpu-model: GPU 3 is "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3" expected`},
		{"a passed run with a GPU below the class's memory is held", node(), withGPU(record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 8), 5, func(g *v1alpha1.RecordGPU) { g.MemoryMiB = 40960 }),
			false, v1alpha1.ReasonExpectationNotMet, "gpu-memory: GPU 5 has 40960 MiB, at least 80000 expected"},
		{"a failed run is held, naming its failed checks", node(), record("node-a-2", "node-a", 2, v1alpha1.AcceptanceFailed, 8), false, v1alpha1.ReasonRunFailed, "acceptance-failed: 1 checks failed: hardware.ecc"},
		{"a record answering an older request is not judged as the answer", node(), record("node-a-1", "node-a", 1, v1alpha1.AcceptancePassed, 8), false, v1alpha1.ReasonRecordMismatch, "record-generation"},
		{"a record of another node is not judged as the answer", node(), record("node-b-2", "node-b", 2, v1alpha1.AcceptancePassed, 8), false, v1alpha1.ReasonRecordMismatch, "record-node"},
		{"a class the policy does not list needs only consistent GPUs", unlisted, record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 3), true, v1alpha1.ReasonPassed, "passed"},
		{"a class the policy does not list still needs one model", unlisted, withGPU(record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 2), 1, func(g *v1alpha1.RecordGPU) { g.Model = "other" }),
			false, v1alpha1.ReasonExpectationNotMet, "one model expected"},
		{"a class the policy does not list still needs a GPU", unlisted, record("node-a-2", "node-a", 2, v1alpha1.AcceptancePassed, 0), false, v1alpha1.ReasonExpectationNotMet, "gpu-count: no GPU found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.gn, fleet, tt.record)
			if got.Accepted != tt.wantOK || got.Reason != tt.wantReason || !strings.Contains(got.Message, tt.wantMsg) {
				t.Errorf("Evaluate = %+v, want accepted %v, reason %s, message containing %q", got, tt.wantOK, tt.wantReason, tt.wantMsg)
			}
		})
	}
}
