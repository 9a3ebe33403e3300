package stack

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Membership is which StackPools select a node.
type Membership struct {
	// Matching is every pool whose selector matches the node's labels, sorted.
	Matching []string
}

// Pool is the node's pool: the one pool that selects it, or "" when none or more than one
// does.
func (m Membership) Pool() string {
	if len(m.Matching) == 1 {
		return m.Matching[0]
	}
	return ""
}

// Conflict reports whether two or more pools select the node.
func (m Membership) Conflict() bool { return len(m.Matching) > 1 }

// Member decides the pools that select a node with these labels. A pool being deleted
// selects nothing. A pool whose selector cannot be read selects nothing either, and is
// named in the error (the API's validation makes that rare: an operator's typo in an
// expression).
func Member(nodeLabels map[string]string, pools []v1alpha1.StackPool) (Membership, error) {
	var m Membership
	var errs []error
	set := labels.Set(nodeLabels)
	for i := range pools {
		p := &pools[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		sel, err := Selector(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sel.Matches(set) {
			m.Matching = append(m.Matching, p.Name)
		}
	}
	slices.Sort(m.Matching)
	return m, errors.Join(errs...)
}

// Selector is the pool's node selector; an empty one selects nothing (the API refuses it).
func Selector(p *v1alpha1.StackPool) (labels.Selector, error) {
	ls := p.Spec.NodeSelector
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("StackPool %q spec.nodeSelector: %w", p.Name, err)
	}
	return sel, nil
}

// ConflictReason is the reason of the stack hold of a node that several pools select.
func ConflictReason(m Membership) string {
	return fmt.Sprintf("%s: StackPools %s all select the node; it belongs to none of them until one alone does",
		v1alpha1.HoldReasonPoolConflict, strings.Join(m.Matching, ", "))
}
