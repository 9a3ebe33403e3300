// Package nodepolicy says which GPUNodePolicy governs a node. The agent (to choose the
// node-local thresholds of an acceptance run) and the controller (to judge the run) must
// agree, so the rule lives here once.
package nodepolicy

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// Select returns the policy that governs a Node with nodeLabels: among the policies whose
// nodeSelector matches (an empty selector matches every node), the highest priority wins
// and equal priorities go to the name that sorts first. It returns nil when none matches.
// Policies being deleted are ignored; a policy whose selector cannot be parsed is ignored
// too, and named in the returned errors (the selection among the others stands).
func Select(nodeLabels map[string]string, policies []v1alpha1.GPUNodePolicy) (*v1alpha1.GPUNodePolicy, []error) {
	var best *v1alpha1.GPUNodePolicy
	var errs []error
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("GPUNodePolicy %q: nodeSelector: %w", p.Name, err))
			continue
		}
		if !sel.Matches(labels.Set(nodeLabels)) {
			continue
		}
		if best == nil || p.Spec.Priority > best.Spec.Priority ||
			(p.Spec.Priority == best.Spec.Priority && p.Name < best.Name) {
			best = p
		}
	}
	return best, errs
}
