package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// nodeConditions are the agent's conditions on the Node itself, where `kubectl describe
// node` and every node-condition tool see them: GPUHealthy (the GPUNode's condition) and
// GPUNodeAccepted (the last acceptance run's result).
func nodeConditions(health metav1.Condition, last *v1alpha1.AcceptanceSummary) []corev1.NodeCondition {
	acc := corev1.NodeCondition{Type: v1alpha1.ConditionAccepted, Status: corev1.ConditionUnknown,
		Reason: "NotRun", Message: "no acceptance run yet"}
	if last != nil {
		acc.Message = fmt.Sprintf("record %s: %d pass, %d warn, %d fail, %d skip", last.RecordName,
			last.Summary.Pass, last.Summary.Warn, last.Summary.Fail, last.Summary.Skip)
		acc.Status, acc.Reason = corev1.ConditionFalse, "AcceptanceFailed"
		if last.Result == v1alpha1.AcceptancePassed {
			acc.Status, acc.Reason = corev1.ConditionTrue, "AcceptancePassed"
		}
	}
	return []corev1.NodeCondition{
		{Type: corev1.NodeConditionType(health.Type), Status: corev1.ConditionStatus(health.Status), Reason: health.Reason, Message: health.Message},
		acc,
	}
}

// applyNodeConditions applies the conditions to the Node's status with server-side apply
// as gpunode-agent: the kubelet's conditions and everyone else's are left alone. A condition
// keeps its transition time while its status does not change.
func (a *Agent) applyNodeConditions(ctx context.Context, node *corev1.Node, conds []corev1.NodeCondition, resync bool) error {
	key := fingerprint(conds)
	if key == a.published.nodeConditions && !resync {
		return nil
	}
	now := metav1.NewTime(a.cfg.Clock().UTC().Truncate(1e9))
	st := corev1ac.NodeStatus()
	for _, c := range conds {
		transition := now
		for _, old := range node.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				transition = old.LastTransitionTime
			}
		}
		st.WithConditions(corev1ac.NodeCondition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithLastHeartbeatTime(now).WithLastTransitionTime(transition))
	}
	ac := corev1ac.Node(a.cfg.NodeName).WithStatus(st)
	if err := a.cfg.Client.Status().Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply conditions of node %q: %w", a.cfg.NodeName, err)
	}
	a.published.nodeConditions = key
	return nil
}
