package nodepolicy

import (
	"fmt"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// DRAUnhealthyEffect is the effect the governing policy gives the DRA device taint of a GPU
// that is lost or needs the node rebooted or service: spec.dra.unhealthyEffect, NoSchedule
// when unset (and for nil or BuiltIn). The agent's DRA plugin follows it.
func DRAUnhealthyEffect(gp *v1alpha1.GPUNodePolicy) string {
	if gp != nil && gp.Spec.DRA.UnhealthyEffect == v1alpha1.DRAEffectNoExecute {
		return v1alpha1.DRAEffectNoExecute
	}
	return v1alpha1.DRAEffectNoSchedule
}

// validateDRA checks spec.dra as the CRD's enum does; it returns the YAML path of the
// problem and the problem, "" when none.
func validateDRA(gp *v1alpha1.GPUNodePolicy) ([]any, string) {
	switch e := gp.Spec.DRA.UnhealthyEffect; e {
	case "", v1alpha1.DRAEffectNoSchedule, v1alpha1.DRAEffectNoExecute:
		return nil, ""
	default:
		path := []any{"spec", "dra", "unhealthyEffect"}
		return path, fmt.Sprintf("%s: %q is not a taint effect (want %s or %s)", dotted(path), e,
			v1alpha1.DRAEffectNoSchedule, v1alpha1.DRAEffectNoExecute)
	}
}
