package acceptance

import (
	"fmt"
	"strings"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// maxFailedChecksNamed is how many failed checks a verdict's message names.
const maxFailedChecksNamed = 3

// Verdict is the judgement of one acceptance run.
type Verdict struct {
	Accepted bool
	// Reason is a condition reason (CamelCase); Message is the reason a person reads and
	// the hold's reason, e.g. "gpu-count: 7 GPUs found, 8 expected".
	Reason  string
	Message string
}

// Evaluate judges record, the answer to gn's current request, against policy. The node is
// accepted when the record is this node's answer to that request, its result is passed,
// and the GPUs it lists meet the policy's expectation for the node's accelerator class
// (status.acceleratorClass): the GPU count, the model and the memory. A class the policy
// does not list must only be consistent: at least one GPU, all of one model and memory.
func Evaluate(gn *v1alpha1.GPUNode, policy *v1alpha1.GPUNodePolicy, record *v1alpha1.AcceptanceRecord) Verdict {
	rs := record.Spec
	switch {
	case rs.Node != gn.Spec.NodeName:
		return mismatch("record-node: record %s judged node %q, not %q", record.Name, rs.Node, gn.Spec.NodeName)
	case rs.AcceptanceGeneration != gn.Spec.AcceptanceGeneration:
		return mismatch("record-generation: record %s answers acceptance generation %d, %d requested",
			record.Name, rs.AcceptanceGeneration, gn.Spec.AcceptanceGeneration)
	case rs.Result != v1alpha1.AcceptancePassed:
		return Verdict{Reason: v1alpha1.ReasonRunFailed, Message: failedRunMessage(record)}
	}
	if msg := checkExpectation(expectationFor(policy, gn.Status.AcceleratorClass), rs.GPUs); msg != "" {
		return Verdict{Reason: v1alpha1.ReasonExpectationNotMet, Message: msg}
	}
	under := fmt.Sprintf("policy %q", policy.Name)
	if nodepolicy.IsBuiltIn(policy) {
		under = "the built-in defaults (no GPUNodePolicy selects the node)"
	}
	return Verdict{Accepted: true, Reason: v1alpha1.ReasonPassed, Message: fmt.Sprintf(
		"record %s passed (%d pass, %d warn, %d skip) under %s", record.Name,
		rs.Summary.Pass, rs.Summary.Warn, rs.Summary.Skip, under)}
}

func mismatch(format string, args ...any) Verdict {
	return Verdict{Reason: v1alpha1.ReasonRecordMismatch, Message: fmt.Sprintf(format, args...)}
}

// failedRunMessage names the first failed checks of a failed run.
func failedRunMessage(record *v1alpha1.AcceptanceRecord) string {
	var ids []string
	for _, c := range record.Spec.Checks {
		if c.Status == "fail" {
			ids = append(ids, c.ID)
		}
	}
	msg := fmt.Sprintf("acceptance-failed: %d checks failed", record.Spec.Summary.Fail)
	if len(ids) > maxFailedChecksNamed {
		return fmt.Sprintf("%s: %s and %d more (record %s)", msg, strings.Join(ids[:maxFailedChecksNamed], ", "), len(ids)-maxFailedChecksNamed, record.Name)
	}
	if len(ids) > 0 {
		return fmt.Sprintf("%s: %s (record %s)", msg, strings.Join(ids, ", "), record.Name)
	}
	return fmt.Sprintf("%s (record %s)", msg, record.Name)
}

// expectationFor returns policy's expectation for class; an unlisted class expects only
// consistency (the zero expectation).
func expectationFor(policy *v1alpha1.GPUNodePolicy, class string) v1alpha1.ClassExpectation {
	for _, c := range policy.Spec.Classes {
		if c.Class == class {
			return c
		}
	}
	return v1alpha1.ClassExpectation{Class: class}
}

// checkExpectation returns why gpus do not meet want, or "" when they do.
func checkExpectation(want v1alpha1.ClassExpectation, gpus []v1alpha1.RecordGPU) string {
	switch {
	case want.GPUs > 0 && int32(len(gpus)) != want.GPUs:
		return fmt.Sprintf("gpu-count: %d GPUs found, %d expected", len(gpus), want.GPUs)
	case len(gpus) == 0:
		return "gpu-count: no GPU found, at least one expected"
	}
	first := gpus[0]
	for _, g := range gpus {
		switch {
		case want.Model != "" && g.Model != want.Model:
			return fmt.Sprintf("gpu-model: GPU %d is %q, %q expected", g.Index, g.Model, want.Model)
		case want.Model == "" && g.Model != first.Model:
			return fmt.Sprintf("gpu-model: GPU %d is %q but GPU %d is %q: one model expected", g.Index, g.Model, first.Index, first.Model)
		case want.MinMemoryMiB > 0 && g.MemoryMiB < want.MinMemoryMiB:
			return fmt.Sprintf("gpu-memory: GPU %d has %d MiB, at least %d expected", g.Index, g.MemoryMiB, want.MinMemoryMiB)
		case g.MemoryMiB != first.MemoryMiB:
			return fmt.Sprintf("gpu-memory: GPU %d has %d MiB but GPU %d has %d MiB: one size expected", g.Index, g.MemoryMiB, first.Index, first.MemoryMiB)
		}
	}
	return ""
}
