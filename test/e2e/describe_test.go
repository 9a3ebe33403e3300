package e2e

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// describe summarises a node for a failure message: phase, holds, the remediation state,
// the requests and answers, and each GPU that is not healthy.
func (f *remFleet) describe(name string) string {
	gn := f.gpuNode(name)
	if gn == nil {
		return "no GPUNode " + name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s; holds %v; state %s; acceptance generation %d (%q)", gn.Status.Phase, f.holds(name),
		gn.Annotations[v1alpha1.AnnotationRemediationState], gn.Spec.AcceptanceGeneration, gn.Spec.AcceptanceReason)
	if la := gn.Status.LastAcceptance; la != nil {
		fmt.Fprintf(&b, "; last acceptance %d %s", la.Generation, la.Result)
	}
	if a := gn.Status.RemediationAnswer; a != nil {
		fmt.Fprintf(&b, "; answer %d %s %s: %s", a.ID, a.Step, a.Outcome, a.Message)
	}
	for _, g := range gn.Status.GPUHealth {
		if g.Health != v1alpha1.HealthHealthy {
			fmt.Fprintf(&b, "; GPU %d %s %s %v awaiting=%v", g.Index, g.Health, g.Action, g.Causes, g.AwaitingCheck)
		}
	}
	return b.String()
}
