package nodeops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// Restored is what Restore put back on a node: the hold's entry in the holds annotation,
// gpunode's taints that were missing or changed, or both.
type Restored struct {
	// Hold is the hold put back into the annotation (zero when the entry was there).
	Hold Hold
	// Taints are the taints put back, as the node now carries them.
	Taints []corev1.Taint
}

// Any reports whether anything was restored.
func (r Restored) Any() bool { return r.Hold.Owner != "" || len(r.Taints) > 0 }

// String says what was restored, for an Event: "the remediation hold in annotation
// gpunode.dev/holds and taint gpunode.dev/unschedulable=xid-79:NoSchedule".
func (r Restored) String() string {
	var parts []string
	if r.Hold.Owner != "" {
		parts = append(parts, fmt.Sprintf("the %s hold (%q, since %s) in annotation %s",
			r.Hold.Owner, r.Hold.Reason, r.Hold.Since.UTC().Format(time.RFC3339), v1alpha1.AnnotationHolds))
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

// RestoreHold decides how a node whose holds annotation lists annotated (parsed as is,
// nothing adopted) and which carries taints is made to hold h again: h goes back into the
// holds when the annotation lacks its owner (with h's reason and since: the owner's own
// record of it), and gpunode's taints become what all the holds call for. An acceptance
// hold adopted from the registration taint is replaced by h. Every other hold and taint is
// kept. The inputs are not modified.
func RestoreHold(annotated Holds, taints []corev1.Taint, created time.Time, h Hold) (Holds, []corev1.Taint, Restored) {
	var out Restored
	next, _ := AdoptRegistrationTaint(taints, annotated, created)
	if _, ok := annotated.Find(h.Owner); !ok {
		next, _ = Release(next, h.Owner)
		next = append(slices.Clone(next), h)
		sortHolds(next)
		out.Hold = h
	}
	want := DesiredTaints(taints, next)
	for _, w := range want {
		if Owns(w) && !slices.ContainsFunc(taints, func(t corev1.Taint) bool {
			return t.Key == w.Key && t.Value == w.Value && t.Effect == w.Effect
		}) {
			out.Taints = append(out.Taints, w)
		}
	}
	return next, want, out
}

// Restore makes node nodeName hold h again when someone else removed it: its entry in the
// holds annotation (RestoreHold) and gpunode's taints. The owner calls it while its own
// state says h is due; a node that shows h already, with the taints it calls for, is not
// written. The write is one merge patch guarded by the node's resourceVersion. A malformed
// annotation is an error wrapping ErrMalformedHolds, and nothing is written.
func (o Ops) Restore(ctx context.Context, nodeName string, h Hold) (Restored, error) {
	if h.Owner == "" {
		return Restored{}, fmt.Errorf("restore a hold on node %q: empty owner", nodeName)
	}
	var out Restored
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		node := &corev1.Node{}
		if err := o.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		annotated, err := ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
		if err != nil {
			return err
		}
		next, taints, restored := RestoreHold(annotated, node.Spec.Taints, node.CreationTimestamp.Time, h)
		out = restored
		if next.Render() == annotated.Render() && TaintsEqual(taints, node.Spec.Taints) {
			return nil
		}
		patched := node.DeepCopy()
		setHoldsAnnotation(patched, next)
		patched.Spec.Taints = taints
		return o.Client.Patch(ctx, patched, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return Restored{}, fmt.Errorf("restore the %s hold on node %q: %w", h.Owner, nodeName, err)
	}
	return out, nil
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
