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
// node` and every node-condition tool see them: GPUHealthy (the GPUNode's condition). The
// acceptance verdict is the GPUNode's Accepted condition, the controller's alone; the
// condition GPUNodeAccepted the agent once set here is left out, so server-side apply
// removes it from the Node at the agent's next write.
func nodeConditions(health metav1.Condition) []corev1.NodeCondition {
	return []corev1.NodeCondition{
		{Type: corev1.NodeConditionType(health.Type), Status: corev1.ConditionStatus(health.Status), Reason: health.Reason, Message: health.Message},
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
