package acceptance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/lifecycle"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// maxConditionMessage is the API's limit on a condition's message.
const maxConditionMessage = 32768

// loadNode reads the GPUNode's Node (from the API server). A missing Node leaves s.node nil:
// nothing is requested, judged or held until it exists.
func (r *Reconciler) loadNode(ctx context.Context, s *scope) error {
	node := &corev1.Node{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.gn.Spec.NodeName}, node)
	switch {
	case apierrors.IsNotFound(err):
		log.FromContext(ctx).Info("the GPUNode's Node does not exist", "node", s.gn.Spec.NodeName)
		return nil
	case err != nil:
		return fmt.Errorf("get Node %q of GPUNode %q: %w", s.gn.Spec.NodeName, s.gn.Name, err)
	}
	s.node = node
	return nil
}

// selectPolicy picks the governing policy (condition PolicySelected): the GPUNodePolicy
// that selects the node, or the built-in defaults when none does (nodepolicy.BuiltIn).
func (r *Reconciler) selectPolicy(ctx context.Context, s *scope) error {
	if s.node == nil {
		return nil
	}
	var list v1alpha1.GPUNodePolicyList
	if err := r.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("list GPUNodePolicies for GPUNode %q: %w", s.gn.Name, err)
	}
	policy, err := SelectPolicy(s.node.Labels, list.Items)
	if err != nil {
		log.FromContext(ctx).Error(err, "some GPUNodePolicies were not considered")
	}
	if policy == nil {
		s.policy = nodepolicy.BuiltIn()
		r.setCondition(s.gn, v1alpha1.ConditionPolicySelected, metav1.ConditionTrue, v1alpha1.ReasonBuiltInDefaults, fmt.Sprintf(
			"no GPUNodePolicy selects Node %q: the built-in defaults apply (acceptance as `gpunode accept` without --policy, remediation's defaults, agentLostAfter %s)",
			s.node.Name, DefaultAgentLostAfter))
		return nil
	}
	s.policy = policy
	r.setCondition(s.gn, v1alpha1.ConditionPolicySelected, metav1.ConditionTrue, v1alpha1.ReasonSelected,
		fmt.Sprintf("GPUNodePolicy %q (priority %d, generation %d)", policy.Name, policy.Spec.Priority, policy.Generation))
	return nil
}

// evaluate judges the answer to the current request, if it is in, with layer L2 (what
// Kubernetes sees of the node, judgeKubernetes): a pass releases the acceptance hold, a
// failure takes (or keeps) it with the verdict as its reason.
func (r *Reconciler) evaluate(ctx context.Context, s *scope) error {
	gn := s.gn
	if s.node == nil || s.policy == nil || gn.Spec.AcceptanceGeneration == 0 || Outstanding(gn) {
		if meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionAccepted) == nil {
			r.setCondition(gn, v1alpha1.ConditionAccepted, metav1.ConditionUnknown, v1alpha1.ReasonNeverRun, "no acceptance run has been judged yet")
		}
		return nil
	}
	name := gn.Status.LastAcceptance.RecordName
	record := &v1alpha1.AcceptanceRecord{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, record); err != nil {
		if apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("the answered AcceptanceRecord is not readable yet", "record", name)
			s.result.RequeueAfter = recordRetry
			return nil
		}
		return fmt.Errorf("get AcceptanceRecord %q of GPUNode %q: %w", name, gn.Name, err)
	}
	v, err := r.judgeKubernetes(ctx, s, record, Evaluate(gn, s.policy, record))
	if err != nil {
		return err
	}
	if v.Accepted {
		s.released = append(s.released, v1alpha1.HoldOwnerAcceptance)
		if err := r.ops(ctx, s).Release(ctx, s.node.Name, v1alpha1.HoldOwnerAcceptance); err != nil {
			return fmt.Errorf("accept GPUNode %q: %w", gn.Name, err)
		}
		if r.setCondition(gn, v1alpha1.ConditionAccepted, metav1.ConditionTrue, v.Reason, v.Message) {
			r.Recorder.Eventf(gn, s.node, corev1.EventTypeNormal, v.Reason, "Accept", "%s", v.Message)
		}
		return nil
	}
	if err := r.ops(ctx, s).Hold(ctx, s.node.Name, v1alpha1.HoldOwnerAcceptance, v.Message); err != nil {
		return fmt.Errorf("keep GPUNode %q held: %w", gn.Name, err)
	}
	if r.setCondition(gn, v1alpha1.ConditionAccepted, metav1.ConditionFalse, v.Reason, v.Message) {
		r.Recorder.Eventf(gn, s.node, corev1.EventTypeWarning, v.Reason, "Hold", "%s", v.Message)
		r.Recorder.Eventf(s.node, gn, corev1.EventTypeWarning, v.Reason, "Hold", "%s", v.Message)
	}
	return nil
}

// request raises spec.acceptanceGeneration when DecideRequest says so, recording the basis
// in the same write (condition AcceptanceRequested).
func (r *Reconciler) request(ctx context.Context, s *scope) error {
	gn := s.gn
	if s.node == nil || s.policy == nil {
		return nil
	}
	if StackWaits(gn, s.node.Labels) {
		r.setCondition(gn, v1alpha1.ConditionAcceptanceRequested, metav1.ConditionFalse, v1alpha1.ReasonWaitingForStack,
			"the node's driver is not ready and its stack (a StackPool, or the GPU Operator) brings it: acceptance is asked for once it is")
		return nil
	}
	current := CurrentBasis(gn, s.policy)
	recorded, ok := RecordedBasis(gn)
	d := DecideRequest(gn, recorded, ok, current)
	if !d.Needed {
		status := metav1.ConditionFalse
		if d.Reason == v1alpha1.ReasonPending {
			status = metav1.ConditionTrue
		}
		r.setCondition(gn, v1alpha1.ConditionAcceptanceRequested, status, d.Reason, d.Message)
		return nil
	}
	if err := r.applyRequest(ctx, gn, gn.Spec.AcceptanceGeneration+1, truncate(d.Message, 256), current.Render()); err != nil {
		return err
	}
	msg := fmt.Sprintf("acceptance generation %d requested: %s", gn.Spec.AcceptanceGeneration, d.Message)
	r.setCondition(gn, v1alpha1.ConditionAcceptanceRequested, metav1.ConditionTrue, d.Reason, msg)
	r.Recorder.Eventf(gn, s.node, corev1.EventTypeNormal, d.Reason, "RequestAcceptance", "%s", msg)
	return nil
}

// reflect mirrors the Node's holds into status and sets the phase and the InService
// condition, all three decided by lifecycle.Decide: this is the one writer of the phase and
// of status.holds, the record DueHolds reads. The holds it mirrors are those of a read that
// put back the pass's due holds first (ops): a hold stripped during the pass is restored,
// with its Event, never dropped from the record (then the next pass would take it anew).
func (r *Reconciler) reflect(ctx context.Context, s *scope) error {
	if s.node == nil {
		return nil
	}
	holds, _, err := r.ops(ctx, s).Restore(ctx, s.node.Name)
	if err != nil {
		return fmt.Errorf("read holds of GPUNode %q: %w", s.gn.Name, err)
	}
	f := lifecycle.Facts{
		Holds:     holds,
		Accepted:  meta.IsStatusConditionTrue(s.gn.Status.Conditions, v1alpha1.ConditionAccepted),
		Published: InventoryPublished(s.gn),
	}
	if rem := s.gn.Status.Remediation; rem != nil {
		f.Remediation = rem.Phase
	}
	out := lifecycle.Decide(f)
	s.gn.Status.Holds, s.gn.Status.Phase = out.Holds, out.Phase
	r.setCondition(s.gn, v1alpha1.ConditionInService, out.InService.Status, out.InService.Reason, out.InService.Message)
	return nil
}

// setCondition sets a condition on gn and reports whether it changed (status, reason or
// message).
func (r *Reconciler) setCondition(gn *v1alpha1.GPUNode, typ string, status metav1.ConditionStatus, reason, msg string) bool {
	old := meta.FindStatusCondition(gn.Status.Conditions, typ)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != msg
	meta.SetStatusCondition(&gn.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(msg, maxConditionMessage),
		ObservedGeneration: gn.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	return changed
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
