package nodepolicy

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// Unused lists the parts of a GPUNodePolicy that a node-local run (`gpunode accept
// --policy`) does not use, each saying who does, so that the run can say so rather than
// pass over them in silence. Empty when it uses all of them.
func Unused(gp *v1alpha1.GPUNodePolicy) []string {
	var out []string
	s := gp.Spec
	if len(s.NodeSelector.MatchLabels) > 0 || len(s.NodeSelector.MatchExpressions) > 0 || s.Priority != 0 {
		out = append(out, "spec.nodeSelector and spec.priority (the cluster chooses the governing policy with them; a file given by hand governs this run)")
	}
	var controller []string
	for _, l := range s.Acceptance.Layers {
		if !nodeLayer(l) {
			controller = append(controller, string(l))
		}
	}
	if len(controller) > 0 {
		out = append(out, fmt.Sprintf("spec.acceptance.layers %s (run by the controller, not on the node)", strings.Join(controller, ", ")))
	}
	if s.Acceptance.Thresholds.CorrectedECCPerMinute != nil || s.Acceptance.Thresholds.PCIeReplaysPerMinute != nil {
		out = append(out, "spec.acceptance.thresholds.correctedECCPerMinute and pcieReplaysPerMinute (rates between two readings: the agent's health monitor judges them; one run reads once)")
	}
	if !reflect.DeepEqual(s.Remediation, v1alpha1.RemediationPolicy{}) {
		out = append(out, "spec.remediation (the controller's recovery of faulty nodes)")
	}
	if s.DRA != (v1alpha1.DRAPolicy{}) {
		out = append(out, "spec.dra (the agent's DRA driver: the effect of an unhealthy GPU's device taint)")
	}
	if s.AgentLostAfter != nil {
		out = append(out, "spec.agentLostAfter (the controller's watch on the agent's heartbeat)")
	}
	return out
}

// ClassFor picks the accelerator class whose expectation a node-local run uses: class
// when given (the policy must list it), else the only class the policy lists, else none
// (only consistency is checked) when it lists none. A policy of several classes needs one.
func ClassFor(gp *v1alpha1.GPUNodePolicy, class string) (string, error) {
	names := classNames(gp)
	switch {
	case class != "":
		for _, n := range names {
			if n == class {
				return class, nil
			}
		}
		if len(names) == 0 {
			return "", fmt.Errorf("--class %s: the policy lists no classes", class)
		}
		return "", fmt.Errorf("--class %s: the policy lists %s", class, strings.Join(names, ", "))
	case len(names) > 1:
		return "", fmt.Errorf("the policy lists classes %s: choose one with --class", strings.Join(names, ", "))
	case len(names) == 1:
		return names[0], nil
	}
	return "", nil
}
