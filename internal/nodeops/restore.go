package nodeops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Restored is what a write put back on a node that someone else had stripped: holds' entries
// in the holds annotation, gpunode's taints that were missing or changed, or both.
type Restored struct {
	// Holds are the holds put back into the annotation, with their owners' reason and since.
	Holds Holds
	// Taints are the taints put back, as the node now carries them.
	Taints []corev1.Taint
}

// Any reports whether anything was restored.
func (r Restored) Any() bool { return len(r.Holds) > 0 || len(r.Taints) > 0 }

// String says what was restored, for an Event: "the remediation hold ("xid 79", since
// 2026-11-29T17:01:00Z) in annotation gpunode.dev/holds and taint
// gpunode.dev/unschedulable=xid-79:NoSchedule".
func (r Restored) String() string {
	var parts []string
	for _, h := range r.Holds {
		parts = append(parts, fmt.Sprintf("the %s hold (%q, since %s) in annotation %s",
			h.Owner, h.Reason, h.Since.UTC().Format(time.RFC3339), v1alpha1.AnnotationHolds))
	}
	if len(r.Taints) > 0 {
		ts := make([]string, 0, len(r.Taints))
		for _, t := range r.Taints {
			ts = append(ts, t.ToString())
		}
		word := "taint "
		if len(ts) > 1 {
			word = "taints "
		}
		parts = append(parts, word+strings.Join(ts, ", "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " and ")
}

// RestoreHolds is the one rule for holds someone other than their owner removed from a node.
// annotated is the node's holds annotation, parsed as is (nothing adopted), taints its
// taints, and due the holds their owners' own records say the node must carry. It returns
// the holds the node must carry before any change of this write: each due hold whose owner
// the annotation lacks goes back with its owner's reason and since (an acceptance hold
// adopted from the registration taint is replaced by the owner's record), and every other
// entry is kept. restored names those entries and the taints that the annotation's holds
// and the restored ones call for that the node lacks (DesiredTaints): a stripped or changed
// taint is put back by any write, and said. The inputs are not modified.
func RestoreHolds(annotated Holds, taints []corev1.Taint, created time.Time, due Holds) (Holds, Restored) {
	var out Restored
	next := slices.Clone(annotated)
	for _, h := range due {
		if _, ok := annotated.Find(h.Owner); ok || h.Owner == "" {
			continue
		}
		next, _ = Release(next, h.Owner)
		next = append(next, h)
		out.Holds = append(out.Holds, h)
	}
	sortHolds(next)
	sortHolds(out.Holds)
	for _, w := range DesiredTaints(taints, next) {
		if Owns(w) && !slices.ContainsFunc(taints, func(t corev1.Taint) bool {
			return t.Key == w.Key && t.Value == w.Value && t.Effect == w.Effect
		}) {
			out.Taints = append(out.Taints, w)
		}
	}
	next, _ = AdoptRegistrationTaint(taints, next, created)
	if len(next) == 0 {
		next = nil
	}
	return next, out
}

// written is what of restored a write that ends with holds and taints carries out: a hold
// the write's own change released, or a taint it changed again, was not put back.
func (r Restored) written(holds Holds, taints []corev1.Taint) Restored {
	var out Restored
	for _, h := range r.Holds {
		if got, ok := holds.Find(h.Owner); ok && got.Since.Equal(h.Since) {
			out.Holds = append(out.Holds, h)
		}
	}
	for _, w := range r.Taints {
		if slices.ContainsFunc(taints, func(t corev1.Taint) bool {
			return t.Key == w.Key && t.Value == w.Value && t.Effect == w.Effect
		}) {
			out.Taints = append(out.Taints, w)
		}
	}
	return out
}

// Restore makes node nodeName carry o.Due again where someone else removed any of it
// (RestoreHolds): entries in the holds annotation and gpunode's taints. It returns the
// node's holds as this write left them (or as it read them, when nothing was missing) and
// what it put back. A node that shows its holds, with the taints they call for, is not
// written. The write is one merge patch guarded by the node's resourceVersion. A malformed
// annotation is an error wrapping ErrMalformedHolds, and nothing is written.
func (o Ops) Restore(ctx context.Context, nodeName string) (Holds, Restored, error) {
	holds, restored, err := o.write(ctx, nodeName, func(h Holds) Holds { return h })
	if err != nil {
		return nil, Restored{}, fmt.Errorf("restore the holds of node %q: %w", nodeName, err)
	}
	return holds, restored, nil
}

// HoldsChanged reports whether a Node's holds changed from old to new as gpunode sees
// them: the holds annotation's value, or gpunode's own taints (Owns). A change of anything
// else (status, labels, other taints) is not one.
func HoldsChanged(old, new *corev1.Node) bool {
	if old.Annotations[v1alpha1.AnnotationHolds] != new.Annotations[v1alpha1.AnnotationHolds] {
		return true
	}
	return !TaintsEqual(OwnedTaints(old.Spec.Taints), OwnedTaints(new.Spec.Taints))
}

// OwnedTaints are the taints of taints that gpunode owns, in order (nil when none).
func OwnedTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if Owns(t) {
			out = append(out, t)
		}
	}
	return out
}
