package acceptance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
// removed it. It also fixes what due holds this pass sees: every later write of the Node's
// holds in the pass (ops) puts them back first, so that a hold stripped after this phase
// read the Node is restored with its since and its Event, never re-placed as a new hold. A
// malformed holds annotation is left for reflect to report.
func (r *Reconciler) restore(ctx context.Context, s *scope) error {
	if s.node == nil {
		return nil
	}
	latest, err := r.latest(ctx, s)
	if latest == nil || err != nil {
		return err
	}
	s.due = DueHolds(&latest.Status)
	annotated, err := nodeops.ParseHolds(s.node.Name, s.node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		log.FromContext(ctx).Error(err, "the holds of the GPUNode's Node are not restored")
		return nil
	}
	if _, missing := nodeops.RestoreHolds(annotated, s.node.Spec.Taints, s.node.CreationTimestamp.Time, s.dueHolds()); !missing.Any() {
		return nil // the Node as this pass read it shows everything: no write, no read
	}
	_, restored, err := r.ops(ctx, s).Restore(ctx, s.node.Name)
	if errors.Is(err, nodeops.ErrMalformedHolds) {
		log.FromContext(ctx).Error(err, "the holds of the GPUNode's Node are not restored")
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore the holds of GPUNode %q: %w", s.gn.Name, err)
	}
	if !restored.Any() {
		return nil
	}
	node := &corev1.Node{} // the later phases judge and mirror the Node as it is now
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.node.Name}, node); err != nil {
		return fmt.Errorf("get Node %q of GPUNode %q: %w", s.node.Name, s.gn.Name, err)
	}
	s.node = node
	return nil
}

// dueHolds are the holds this pass must keep on the Node: those DueHolds named when the pass
// began, but the ones the pass itself released.
func (s *scope) dueHolds() nodeops.Holds {
	var out nodeops.Holds
	for _, d := range s.due {
		if !slices.Contains(s.released, d.Hold.Owner) {
			out = append(out, d.Hold)
		}
	}
	return out
}

// ops writes s's Node's holds for this pass: each write first puts back the pass's due holds
// and the taints the Node's holds call for, wherever someone else removed them, and says so
// (restored). Every write of the Node's holds by this controller goes through it.
func (r *Reconciler) ops(ctx context.Context, s *scope) nodeops.Ops {
	return nodeops.Ops{
		Client: r.Client, Clock: r.Clock.Now, Due: s.dueHolds(),
		Restored: func(got nodeops.Restored) { r.restored(ctx, s, got) },
	}
}

// restored emits the Warning Event HoldRestored on the GPUNode and the Node for what a write
// put back, naming it and why it was due.
func (r *Reconciler) restored(ctx context.Context, s *scope, got nodeops.Restored) {
	var why []string
	for _, d := range s.due {
		if _, ok := got.Holds.Find(d.Hold.Owner); ok || len(got.Holds) == 0 {
			why = append(why, d.Why)
		}
	}
	if len(why) == 0 {
		why = []string{"the Node's holds call for them"}
	}
	msg := truncate(fmt.Sprintf("restored %s: removed by someone other than its owner while %s", got, strings.Join(why, "; ")), maxEventNote)
	log.FromContext(ctx).Info("restored a hold someone else removed", "node", s.node.Name, "restored", got.String())
	r.Recorder.Eventf(s.gn, s.node, corev1.EventTypeWarning, EventHoldRestored, "Restore", "%s", msg)
	r.Recorder.Eventf(s.node, s.gn, corev1.EventTypeWarning, EventHoldRestored, "Restore", "%s", msg)
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
