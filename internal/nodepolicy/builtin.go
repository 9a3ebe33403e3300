package nodepolicy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// BuiltInName names the built-in defaults wherever a governing policy's name is shown or
// recorded (conditions, the acceptance basis, messages). No GPUNodePolicy can have it: an
// object's name has no spaces.
const BuiltInName = "built-in defaults"

// BuiltIn is the policy of a node no GPUNodePolicy selects: a GPUNodePolicy with an empty
// spec, so that every field takes its default, as an unset field of any policy does. For
// acceptance that is accept.DefaultPolicy, the policy of `gpunode accept` without --policy
// (internal/agent.AcceptPolicy maps this policy to it, and names it as accept does); for
// remediation, internal/remediation's defaults; for the agent's liveness, a 2 minute
// agentLostAfter. A node is never left without a policy.
func BuiltIn() *v1alpha1.GPUNodePolicy {
	return &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: BuiltInName}}
}

// IsBuiltIn reports whether p is BuiltIn's policy.
func IsBuiltIn(p *v1alpha1.GPUNodePolicy) bool {
	return p != nil && p.Name == BuiltInName
}

// Governing returns the policy that governs a Node with nodeLabels: Select's, or BuiltIn
// when no GPUNodePolicy selects the node. It is never nil; the errors are Select's.
func Governing(nodeLabels map[string]string, policies []v1alpha1.GPUNodePolicy) (*v1alpha1.GPUNodePolicy, []error) {
	p, errs := Select(nodeLabels, policies)
	if p == nil {
		return BuiltIn(), errs
	}
	return p, errs
}
