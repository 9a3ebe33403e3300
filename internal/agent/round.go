package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/applyfields"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// ReasonNotAccepted is the hold reason of a node that has not passed acceptance (the
// gpunode.dev/not-accepted taint).
const ReasonNotAccepted = "not-accepted"

// round publishes once: it makes sure the GPUNode exists, applies the labels, runs a
// requested acceptance and applies the status. The first error ends the round, except that
// the status is still published when acceptance could not be (so the latest facts win).
func (a *Agent) round(ctx context.Context) error {
	node := &corev1.Node{}
	if err := a.cfg.Client.Get(ctx, client.ObjectKey{Name: a.cfg.NodeName}, node); err != nil {
		return fmt.Errorf("get node %q: %w", a.cfg.NodeName, err)
	}
	paused := a.notePause(node.Labels) // before the facts: a pause releases the GPUs
	gn, err := a.ensure(ctx)
	if err != nil {
		return err
	}
	facts := a.gather(ctx, false, a.cfg.HostOptions)
	lbls := nodeLabels(facts, a.cfg.Mapping, a.cfg.Labels)
	resync := a.cfg.Clock().Sub(a.published.at) >= a.cfg.Resync
	if err := a.applyLabels(ctx, lbls, resync); err != nil {
		return err
	}
	a.during(func() { a.remediate(ctx, gn) }) // before the status: a step changes GPU health
	selectable := maps.Clone(node.Labels)
	if selectable == nil {
		selectable = map[string]string{}
	}
	maps.Copy(selectable, lbls)
	// Before the status too: acceptance after a release decides the GPUs' health, which
	// must be published in the same write as the record that decided it.
	var accErr error
	a.during(func() { accErr = a.acceptance(ctx, gn, selectable, acceleratorClass(lbls)) })
	st := observedStatus(facts, lbls, a.mon.Health(), node.Status.NodeInfo.KubeletVersion)
	st.Versions.Agent = cut(a.cfg.Tool.Version, 64) // a pool's agent DaemonSet waits for its version
	if facts.GPU != nil {
		a.parents.update(facts.GPU.Devices)
		withUsage(&st, a.usageOf(ctx, facts.GPU.Devices))
	}
	st.GPUAPI = a.cfg.GPUAPI
	st.LastAcceptance = a.last
	st.RemediationAnswer = a.answer
	st.Stack = stackStatus(facts, paused, a.stack, a.cfg.Clock())
	st.Conditions = []metav1.Condition{a.conditionNow(healthCondition(facts, &st, gn.Generation))}
	if err := a.applyStatus(ctx, st, resync); err != nil {
		return errors.Join(accErr, err)
	}
	a.roundPublished()
	a.stack = st.Stack
	a.answerPublished(st.RemediationAnswer)
	return errors.Join(accErr, a.applyNodeConditions(ctx, node, nodeConditions(st.Conditions[0]), resync))
}

// ensure returns the node's GPUNode, creating it at first start after holding the node. A
// restarted agent takes lastAcceptance and its condition from the existing status. Once
// ensured, the version the GPUNode watch delivered last is taken without a read (a change of
// the spec wakes a round as soon as it is delivered, so no request waits on it).
func (a *Agent) ensure(ctx context.Context) (*v1alpha1.GPUNode, error) {
	name := a.cfg.NodeName
	if gn := a.watched.gpuNode.Load(); gn != nil && a.ensured {
		return gn.DeepCopy(), nil
	}
	gn := &v1alpha1.GPUNode{}
	err := a.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, gn)
	if err == nil {
		if !a.ensured {
			a.last = gn.Status.LastAcceptance.DeepCopy()
			a.answer = gn.Status.RemediationAnswer.DeepCopy()
			a.condition = meta.FindStatusCondition(gn.Status.Conditions, v1alpha1.ConditionGPUHealthy)
			a.stack = gn.Status.Stack.DeepCopy()
			a.ensured = true
		}
		return gn, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get GPUNode %q: %w", name, err)
	}
	// First start (or the GPUNode was deleted): hold before creating, so that a crash in
	// between holds again on restart rather than never.
	if err := (nodeops.Ops{Client: a.cfg.Client, Clock: a.cfg.Clock}).Hold(ctx, name, v1alpha1.HoldOwnerAcceptance, ReasonNotAccepted); err != nil {
		return nil, err
	}
	gn = &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}}
	if err := a.cfg.Client.Create(ctx, gn, client.FieldOwner(v1alpha1.FieldManagerAgent)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return a.ensure(ctx)
		}
		return nil, fmt.Errorf("create GPUNode %q: %w", name, err)
	}
	a.cfg.Log.Info("created GPUNode and held the node until accepted", "node", name)
	a.last, a.pending, a.condition, a.answer, a.stack, a.ensured = nil, nil, nil, nil, nil, true
	a.published = published{}
	return gn, nil
}

// applyLabels applies the agent's node labels with server-side apply: the agent owns
// exactly these keys, so a key it stops publishing is removed and nobody else's is touched.
func (a *Agent) applyLabels(ctx context.Context, lbls map[string]string, resync bool) error {
	key := fingerprint(lbls)
	if key == a.published.labels && !resync {
		return nil
	}
	ac := corev1ac.Node(a.cfg.NodeName).WithLabels(lbls)
	if err := a.cfg.Client.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply labels of node %q: %w", a.cfg.NodeName, err)
	}
	a.published.labels = key
	return nil
}

// applyStatus applies the agent's status fields to the GPUNode's status subresource with
// server-side apply; the phase and holds are left out, so the controller keeps them.
func (a *Agent) applyStatus(ctx context.Context, st v1alpha1.GPUNodeStatus, resync bool) error {
	key := fingerprint(st)
	if key == a.published.status && !resync {
		return nil
	}
	status, err := applyfields.Of(st)
	if err != nil {
		return fmt.Errorf("GPUNode %q status: %w", a.cfg.NodeName, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": a.cfg.NodeName},
		"status":   status,
	}}
	err = a.cfg.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("apply status of GPUNode %q: %w", a.cfg.NodeName, err)
	}
	a.published.status, a.published.at = key, a.cfg.Clock()
	return nil
}

// conditionNow keeps the condition's transition time while its status does not change.
func (a *Agent) conditionNow(c metav1.Condition) metav1.Condition {
	c.LastTransitionTime = metav1.NewTime(a.cfg.Clock().UTC().Truncate(1e9))
	if a.condition != nil && a.condition.Status == c.Status {
		c.LastTransitionTime = a.condition.LastTransitionTime
	}
	a.condition = &c
	return c
}

// fingerprint is v's JSON form, for change detection.
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
