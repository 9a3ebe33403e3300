// Package policystatus reports, on each GPUNodePolicy, how many GPU nodes it governs
// (status.nodes, the NODES column of `kubectl get gpunodepolicies`), decided as the
// acceptance controller selects a node's policy.
package policystatus

import (
	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// Count is the number of GPU nodes each policy governs: for every GPUNode whose Node is
// known (nodeLabels holds its labels), the policy that wins the selection over policies.
// Every policy has an entry, 0 included; a node that only the built-in defaults govern
// counts for none.
func Count(gpuNodes []v1alpha1.GPUNode, nodeLabels map[string]map[string]string, policies []v1alpha1.GPUNodePolicy) map[string]int32 {
	counts := make(map[string]int32, len(policies))
	for _, p := range policies {
		counts[p.Name] = 0
	}
	for _, gn := range gpuNodes {
		name := gn.Spec.NodeName
		if name == "" {
			name = gn.Name
		}
		lbls, ok := nodeLabels[name]
		if !ok {
			continue
		}
		if p, _ := nodepolicy.Select(lbls, policies); p != nil {
			counts[p.Name]++
		}
	}
	return counts
}
