package nodeops

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// ErrMalformedHolds is returned (wrapped) when a node's holds annotation cannot be read.
// Nothing is written to such a node until a person repairs or deletes the annotation.
var ErrMalformedHolds = errors.New("malformed holds annotation")

// Hold is one reason a node is out of service.
type Hold struct {
	// Owner is who took the hold and the only one who may release it ("acceptance",
	// "remediation", "upgrade", "operator", or an operator's own name).
	Owner string `json:"owner"`
	// Reason says why, for people; the taint value is a sanitised form of it.
	Reason string `json:"reason"`
	// Since is when the hold was first taken. Re-taking a hold keeps it.
	Since time.Time `json:"since"`
}

// Holds is a node's set of holds, at most one per owner, sorted by owner.
type Holds []Hold

// ParseHolds reads the value of the gpunode.dev/holds annotation of node nodeName. An empty
// value means no holds. Invalid JSON, a hold without an owner, or two holds with the same
// owner is an error wrapping ErrMalformedHolds that names the node and the annotation.
func ParseHolds(nodeName, value string) (Holds, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var holds Holds
	if err := json.Unmarshal([]byte(value), &holds); err != nil {
		return nil, fmt.Errorf("node %q annotation %s: %w: %w", nodeName, v1alpha1.AnnotationHolds, ErrMalformedHolds, err)
	}
	seen := make(map[string]bool, len(holds))
	for i, h := range holds {
		if h.Owner == "" {
			return nil, fmt.Errorf("node %q annotation %s: %w: hold %d has no owner", nodeName, v1alpha1.AnnotationHolds, ErrMalformedHolds, i)
		}
		if seen[h.Owner] {
			return nil, fmt.Errorf("node %q annotation %s: %w: owner %q holds twice", nodeName, v1alpha1.AnnotationHolds, ErrMalformedHolds, h.Owner)
		}
		seen[h.Owner] = true
	}
	if len(holds) == 0 {
		return nil, nil
	}
	sortHolds(holds)
	return holds, nil
}

// Render returns the annotation value for holds: JSON sorted by owner, or "" (meaning the
// annotation should be absent) when there are none.
func (hs Holds) Render() string {
	if len(hs) == 0 {
		return ""
	}
	sorted := slices.Clone(hs)
	sortHolds(sorted)
	b, err := json.Marshal(sorted)
	if err != nil { // a []Hold of strings and times always marshals
		panic(fmt.Sprintf("nodeops: marshal holds: %v", err))
	}
	return string(b)
}

// Find returns the hold of owner, if any.
func (hs Holds) Find(owner string) (Hold, bool) {
	for _, h := range hs {
		if h.Owner == owner {
			return h, true
		}
	}
	return Hold{}, false
}

// Oldest returns the hold taken first (ties broken by owner), or false when there is none.
func (hs Holds) Oldest() (Hold, bool) {
	if len(hs) == 0 {
		return Hold{}, false
	}
	oldest := hs[0]
	for _, h := range hs[1:] {
		if h.Since.Before(oldest.Since) || (h.Since.Equal(oldest.Since) && h.Owner < oldest.Owner) {
			oldest = h
		}
	}
	return oldest, true
}

// Equal reports whether two sets of holds are the same (same owners, reasons and instants).
func (hs Holds) Equal(other Holds) bool {
	return slices.EqualFunc(hs, other, func(a, b Hold) bool {
		return a.Owner == b.Owner && a.Reason == b.Reason && a.Since.Equal(b.Since)
	})
}

// Add returns holds with h added. There is one hold per owner: when h.Owner already holds,
// its original Since is kept and only the reason is updated. changed is false when the
// result equals holds. The input is not modified.
func Add(holds Holds, h Hold) (Holds, bool) {
	out := slices.Clone(holds)
	for i, old := range out {
		if old.Owner == h.Owner {
			if old.Reason == h.Reason {
				return out, false
			}
			out[i].Reason = h.Reason
			return out, true
		}
	}
	out = append(out, h)
	sortHolds(out)
	return out, true
}

// Release returns holds without the hold of owner. Only the owner releases its hold: when
// owner holds nothing, the result equals holds and changed is false. The input is not
// modified.
func Release(holds Holds, owner string) (Holds, bool) {
	out := slices.DeleteFunc(slices.Clone(holds), func(h Hold) bool { return h.Owner == owner })
	if len(out) == len(holds) {
		return out, false
	}
	if len(out) == 0 {
		return nil, true
	}
	return out, true
}

func sortHolds(hs Holds) {
	slices.SortFunc(hs, func(a, b Hold) int { return strings.Compare(a.Owner, b.Owner) })
}
