package acceptance

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// EventHoldRestored is the reason of the Warning Event that says a hold was put back after
// someone other than its owner removed it (its annotation entry, its taints, or both).
const EventHoldRestored = "HoldRestored"

// DueHold is a hold this controller's own state says the node must carry.
type DueHold struct {
	Hold nodeops.Hold
	// Why says, for the Event, what in the controller's state makes it due.
	Why string
}

// DueHolds are the holds of this controller (owners acceptance and liveness) that the
// GPUNode's status, the controller's own record, says are due: each hold the last pass
// recorded in status.holds that no pass of this controller has released since. The
// acceptance hold is released only by a passing verdict, so it is due while the Accepted
// condition is not True (its reason, when False, is the verdict's message, as evaluate
// holds it); the liveness hold is released only when the agent is back, in the liveness
// phase, so it is due while recorded. A hold that was never recorded is not due here: the
// phases that take holds take it.
func DueHolds(st *v1alpha1.GPUNodeStatus) []DueHold {
	var out []DueHold
	accepted := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAccepted)
	for _, h := range st.Holds {
		hold := nodeops.Hold{Owner: h.Owner, Reason: h.Message, Since: h.Since.UTC()}
		if hold.Reason == "" {
			hold.Reason = h.Reason
		}
		switch h.Owner {
		case v1alpha1.HoldOwnerAcceptance:
			switch {
			case accepted != nil && accepted.Status == metav1.ConditionTrue:
				continue
			case accepted != nil && accepted.Status == metav1.ConditionFalse:
				hold.Reason = accepted.Message
				out = append(out, DueHold{Hold: hold, Why: "acceptance has not passed (Accepted False, " + accepted.Reason + ")"})
			default:
				out = append(out, DueHold{Hold: hold, Why: "acceptance has not passed yet"})
			}
		case v1alpha1.HoldOwnerLiveness:
			out = append(out, DueHold{Hold: hold, Why: "the node's agent is lost and has not come back"})
		}
	}
	return out
}

// restore puts back each hold DueHolds names that the Node no longer shows in full (its
// entry in the holds annotation or the taints it calls for): someone who may patch Nodes
// removed it. Each one restored gives a Warning Event HoldRestored on the GPUNode and the
// Node that names what was put back. A malformed holds annotation is left for reflect to
// report.
func (r *Reconciler) restore(ctx context.Context, s *scope) error {
	if s.node == nil {
		return nil
	}
	latest, err := r.latest(ctx, s)
	if latest == nil || err != nil {
		return err
	}
	due := DueHolds(&latest.Status)
	if len(due) == 0 {
		return nil
	}
	annotated, err := nodeops.ParseHolds(s.node.Name, s.node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		log.FromContext(ctx).Error(err, "the holds of the GPUNode's Node are not restored")
		return nil
	}
	restored := false
	for _, d := range due {
		if _, _, want := nodeops.RestoreHold(annotated, s.node.Spec.Taints, s.node.CreationTimestamp.Time, d.Hold); !want.Any() {
			continue
		}
		got, err := r.restoreHold(ctx, s, d.Hold.Owner)
		if errors.Is(err, nodeops.ErrMalformedHolds) {
			log.FromContext(ctx).Error(err, "the holds of the GPUNode's Node are not restored")
			return nil
		}
		if err != nil {
			return err
		}
		restored = restored || got
	}
	if !restored {
		return nil
	}
	node := &corev1.Node{} // the later phases judge and mirror the Node as it is now
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.node.Name}, node); err != nil {
		return fmt.Errorf("get Node %q of GPUNode %q: %w", s.node.Name, s.gn.Name, err)
	}
	s.node = node
	return nil
}

// restoreDue restores every hold DueHolds names: a phase that writes the Node's holds calls
// it first, since nodeops puts back the taints the holds call for on any write, so that a
// hold removed after this pass read the Node is restored with its Event rather than
// silently.
func (r *Reconciler) restoreDue(ctx context.Context, s *scope) error {
	latest, err := r.latest(ctx, s)
	if latest == nil || err != nil {
		return err
	}
	for _, d := range DueHolds(&latest.Status) {
		if slices.Contains(s.released, d.Hold.Owner) {
			continue
		}
		if _, err := r.restoreHold(ctx, s, d.Hold.Owner); err != nil && !errors.Is(err, nodeops.ErrMalformedHolds) {
			return err
		}
	}
	return nil
}

// restoreHold puts owner's hold back on s's Node (nodeops.Ops.Restore) when the GPUNode's
// status read from the API server, not the cache, still says it is due: the pass that
// released a hold writes the status at its end, and the Node's change starts the next pass
// on a cache that may not show that write yet. When anything was put back it emits
// HoldRestored on the GPUNode and the Node; restored reports that it did.
func (r *Reconciler) restoreHold(ctx context.Context, s *scope, owner string) (restored bool, err error) {
	latest, err := r.latest(ctx, s)
	if latest == nil || err != nil {
		return false, err
	}
	i := slices.IndexFunc(DueHolds(&latest.Status), func(d DueHold) bool { return d.Hold.Owner == owner })
	if i < 0 {
		return false, nil
	}
	d := DueHolds(&latest.Status)[i]
	got, err := nodeops.Ops{Client: r.Client, Clock: r.Clock.Now}.Restore(ctx, s.node.Name, d.Hold)
	if err != nil {
		return false, fmt.Errorf("restore the holds of GPUNode %q: %w", s.gn.Name, err)
	}
	if !got.Any() {
		return false, nil
	}
	msg := truncate(fmt.Sprintf("restored %s: removed by someone other than its owner while %s", got, d.Why), maxEventNote)
	log.FromContext(ctx).Info("restored a hold someone else removed", "node", s.node.Name, "owner", owner, "restored", got.String())
	r.Recorder.Eventf(s.gn, s.node, corev1.EventTypeWarning, EventHoldRestored, "Restore", "%s", msg)
	r.Recorder.Eventf(s.node, s.gn, corev1.EventTypeWarning, EventHoldRestored, "Restore", "%s", msg)
	return true, nil
}

// latest is s's GPUNode read from the API server, once a pass: the cache may lag behind the
// status the last pass wrote, and what is due is decided from that status. Nil when the
// GPUNode is gone.
func (r *Reconciler) latest(ctx context.Context, s *scope) (*v1alpha1.GPUNode, error) {
	if s.latest != nil {
		return s.latest, nil
	}
	gn := &v1alpha1.GPUNode{}
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(s.gn), gn); err != nil {
		if apierrors.IsNotFound(err) { // deleted meanwhile: nothing is due
			return nil, nil
		}
		return nil, fmt.Errorf("read GPUNode %q to restore its holds: %w", s.gn.Name, err)
	}
	s.latest = gn
	return gn, nil
}

// reader reads GPUNodes from the API server (SetupWithManager sets it); without one,
// Client.
func (r *Reconciler) reader() client.Reader {
	if r.apiReader != nil {
		return r.apiReader
	}
	return r.Client
}
