package acceptance

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// Event reasons of the liveness hold.
const (
	EventAgentLost = "AgentLost"
	EventAgentBack = "AgentBack"
)

// liveness holds the node while its agent is lost and releases it once the agent is back
// and its GPUs are healthy (DecideAgent; condition AgentHeartbeat), with an Event each
// way. It asks for a pass when the latest heartbeat turns stale: heartbeats alone do not
// enqueue the node (heartbeatOnly), so a silent agent is found without any event.
func (r *Reconciler) liveness(ctx context.Context, s *scope) error {
	if s.node == nil {
		return nil
	}
	holds, err := nodeops.ParseHolds(s.node.Name, s.node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil { // nothing can be held or released until a person repairs it; reflect fails the pass
		log.FromContext(ctx).Error(err, "the agent of the GPUNode is not judged")
		return nil
	}
	_, held := holds.Find(v1alpha1.HoldOwnerLiveness)
	v := DecideAgent(&s.gn.Status, s.policy, held, r.watchingSince(), r.Clock.Now())
	requeueWithin(s, v.Recheck)
	r.setCondition(s.gn, v1alpha1.ConditionAgentHeartbeat, v.Status, v.Reason, v.Message)
	switch {
	case v.Hold && !held:
		if err := r.ops(ctx, s).Hold(ctx, s.node.Name, v1alpha1.HoldOwnerLiveness, v1alpha1.HoldReasonAgentLost); err != nil {
			return fmt.Errorf("hold GPUNode %q, its agent lost: %w", s.gn.Name, err)
		}
		r.Recorder.Eventf(s.gn, s.node, corev1.EventTypeWarning, EventAgentLost, "Hold", "%s", v.Message)
		r.Recorder.Eventf(s.node, s.gn, corev1.EventTypeWarning, EventAgentLost, "Hold", "%s", v.Message)
	case !v.Hold && held:
		s.released = append(s.released, v1alpha1.HoldOwnerLiveness)
		if err := r.ops(ctx, s).Release(ctx, s.node.Name, v1alpha1.HoldOwnerLiveness); err != nil {
			return fmt.Errorf("release GPUNode %q, its agent back: %w", s.gn.Name, err)
		}
		msg := "the agent is back and its GPUs are healthy: the " + v1alpha1.HoldReasonAgentLost + " hold is released"
		if v.Reason == v1alpha1.ReasonHeartbeatNotChecked || v.Reason == v1alpha1.ReasonNoHeartbeat {
			msg = "the " + v1alpha1.HoldReasonAgentLost + " hold is released: " + v.Message
		}
		r.Recorder.Eventf(s.gn, s.node, corev1.EventTypeNormal, EventAgentBack, "Release", "%s", msg)
	}
	return nil
}

// requeueWithin makes the pass run again within d at the latest (0: no change).
func requeueWithin(s *scope, d time.Duration) {
	if d > 0 && (s.result.RequeueAfter == 0 || d < s.result.RequeueAfter) {
		s.result.RequeueAfter = d
	}
}

// watchingSince is when this Reconciler made its first pass: a heartbeat it could not
// have seen counts from then (DecideAgent).
func (r *Reconciler) watchingSince() time.Time {
	r.firstPass.Do(func() { r.started = r.Clock.Now() })
	return r.started
}

// notHeartbeatOnly lets every event through but an update that changed nothing but the
// agent's heartbeat (heartbeatOnly): at the agent's --interval on every node, those would
// be most of the controller's passes, and each pass reads the Node from the API server.
func notHeartbeatOnly() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(*v1alpha1.GPUNode)
		b, ok2 := e.ObjectNew.(*v1alpha1.GPUNode)
		return !ok1 || !ok2 || !heartbeatOnly(a, b)
	}}
}

// heartbeatOnly reports whether the update from a to b changed only the agent's heartbeat
// (with the resourceVersion and managed fields every write changes), on a node that the
// liveness hold does not hold. Such an update decides nothing: the last pass asked to run
// again when the heartbeat turns stale, and reads the latest heartbeat then. On a held
// node a heartbeat is the agent's return, and is judged at once.
func heartbeatOnly(a, b *v1alpha1.GPUNode) bool {
	if equality.Semantic.DeepEqual(a.Status.Agent, b.Status.Agent) ||
		slices.ContainsFunc(b.Status.Holds, func(h v1alpha1.Hold) bool { return h.Owner == v1alpha1.HoldOwnerLiveness }) {
		return false
	}
	x, y := *a, *b // shallow copies: only their own fields are cleared
	x.ResourceVersion, y.ResourceVersion = "", ""
	x.ManagedFields, y.ManagedFields = nil, nil
	x.Status.Agent, y.Status.Agent = nil, nil
	return equality.Semantic.DeepEqual(x, y)
}
