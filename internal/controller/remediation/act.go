package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
)

// defaultDrainTimeout bounds one pass's eviction when Reconciler.DrainTimeout is zero. It
// is short: the controller runs one worker, and the decision asks again while pods remain
// (the policy's drainTimeout bounds the whole drain).
const defaultDrainTimeout = 2 * time.Second

// podDeleteWait is how long one pass waits for an evicted pod to go before it leaves the
// pod terminating and returns.
const podDeleteWait = 500 * time.Millisecond

// agentSteps are the actions the agent carries out through spec.remediation.
var agentSteps = map[remediation.ActionKind]v1alpha1.RemediationStep{
	remediation.ActionCaptureEvidence: v1alpha1.StepCaptureEvidence,
	remediation.ActionResetGPU:        v1alpha1.StepResetGPU,
	remediation.ActionRebootNode:      v1alpha1.StepRebootNode,
	remediation.ActionPowerCycle:      v1alpha1.StepPowerCycle,
}

// Request is the GPUNode update a decision makes: its State in the annotation, the agent's
// latest request in spec.remediation, and an acceptance request in spec.acceptanceGeneration.
// It is pure: upd is gn's copy with the changes, and requested lists the requests made.
func Request(gn *v1alpha1.GPUNode, f remediation.Facts, d remediation.Decision) (upd *v1alpha1.GPUNode, requested []remediation.Action, err error) {
	state, err := RenderState(d.State)
	if err != nil {
		return nil, nil, fmt.Errorf("persist remediation of GPUNode %q: %w", gn.Name, err)
	}
	upd = gn.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[AnnotationState] = state
	for _, a := range d.Actions {
		if step, ok := agentSteps[a.Kind]; ok {
			if cur := upd.Spec.Remediation; cur != nil && cur.ID >= a.ID {
				continue // asked already: an ID is never asked twice, nor goes down
			}
			upd.Spec.Remediation = &v1alpha1.RemediationRequest{
				ID: a.ID, Step: step, GPUs: f.UUIDs(a.GPUs), Reason: truncate(reasonOf(d), 256),
			}
			requested = append(requested, a)
		}
		if a.Kind == remediation.ActionRequestAcceptance && a.ID > upd.Spec.AcceptanceGeneration {
			upd.Spec.AcceptanceGeneration = a.ID
			upd.Spec.AcceptanceReason = truncate(fmt.Sprintf("remediation: after %s (%s)", d.State.Step, reasonOf(d)), 256)
			if d.State.AfterRelease {
				// A person serviced the node: the agent treats its GPUs as serviced first.
				upd.Spec.AcceptanceReason = v1alpha1.AcceptanceReasonReleased
			}
			requested = append(requested, a)
		}
	}
	return upd, requested, nil
}

func reasonOf(d remediation.Decision) string {
	if d.State.Reason != "" {
		return d.State.Reason
	}
	return d.Message
}

// persist writes the decision's State together with the requests it makes, in one apply
// guarded by resourceVersion: a step is recorded as started in the same write that asks
// for it, never after.
func (r *Reconciler) persist(ctx context.Context, gn *v1alpha1.GPUNode, f remediation.Facts, d remediation.Decision) error {
	upd, requested, err := Request(gn, f, d)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(upd.Annotations, gn.Annotations) && equality.Semantic.DeepEqual(upd.Spec, gn.Spec) {
		return nil
	}
	if err := r.applyNode(ctx, gn, upd); err != nil {
		return fmt.Errorf("persist remediation of GPUNode %q: %w", gn.Name, err)
	}
	for _, a := range requested {
		r.Recorder.Eventf(gn, nil, corev1.EventTypeNormal, d.Reason, "Request"+camel(string(a.Kind)),
			"requested %s (id %d) for %s: %s", a.Kind, a.ID, gpuText(f.UUIDs(a.GPUs)), d.Message)
	}
	return nil
}

// applyHold places or releases remediation's hold as the decision says; placed reports a
// new hold placed. A hold the decision keeps is restored when someone else removed it from
// the Node (its annotation entry or gpunode's taints); one placed again for a node whose
// state (before, the state the pass read) was already held is a hold someone else removed,
// and comes back with the since the GPUNode recorded for it. Both give a Warning Event
// HoldRestored, as does any other stripped taint one of these writes puts back.
func (r *Reconciler) applyHold(ctx context.Context, gn *v1alpha1.GPUNode, before remediation.Phase, d remediation.Decision) (placed bool, err error) {
	say := func(got nodeops.Restored) {
		r.Recorder.Eventf(gn, nil, corev1.EventTypeWarning, EventHoldRestored, "Restore",
			"restored %s: removed by someone other than its owner while remediation is %s", got, before)
	}
	ops := nodeops.Ops{Client: r.Client, Clock: r.Clock.Now}
	switch d.Hold {
	case remediation.HoldPlace:
		ops.Due = nodeops.Holds{r.hold(gn, d.HoldReason, heldPhases[before])}
		_, restored, err := ops.Restore(ctx, gn.Spec.NodeName)
		if err != nil {
			return false, fmt.Errorf("hold GPUNode %q for remediation: %w", gn.Name, err)
		}
		if err := r.awaitHoldSeen(ctx, gn.Spec.NodeName, true); err != nil {
			return false, err
		}
		if heldPhases[before] && restored.Any() {
			say(restored)
		}
		r.Recorder.Eventf(gn, nil, corev1.EventTypeWarning, d.Reason, "Hold", "%s", d.HoldReason)
		return true, nil
	case remediation.HoldRelease:
		ops.Restored = say
		if err := ops.Release(ctx, gn.Spec.NodeName, remediation.OwnerRemediation); err != nil {
			return false, fmt.Errorf("release GPUNode %q from remediation: %w", gn.Name, err)
		}
		if err := r.awaitHoldSeen(ctx, gn.Spec.NodeName, false); err != nil {
			return false, err
		}
		r.Recorder.Eventf(gn, nil, corev1.EventTypeNormal, d.Reason, "Release", "%s", d.Message)
	case remediation.HoldKeep:
		if d.HoldReason == "" { // not held: nothing to keep
			return false, nil
		}
		ops.Due, ops.Restored = nodeops.Holds{r.hold(gn, d.HoldReason, true)}, say
		if _, _, err := ops.Restore(ctx, gn.Spec.NodeName); err != nil {
			return false, fmt.Errorf("keep GPUNode %q held for remediation: %w", gn.Name, err)
		}
	}
	return false, nil
}

// hold is remediation's hold with reason: since now, or, when held says the node was held
// already, since the time the GPUNode's status recorded for it (a hold someone removed
// comes back as it was).
func (r *Reconciler) hold(gn *v1alpha1.GPUNode, reason string, held bool) nodeops.Hold {
	h := nodeops.Hold{Owner: remediation.OwnerRemediation, Reason: reason, Since: r.Clock.Now().UTC().Truncate(time.Second)}
	if !held {
		return h
	}
	for _, rec := range gn.Status.Holds {
		if rec.Owner == remediation.OwnerRemediation && !rec.Since.IsZero() {
			h.Since = rec.Since.UTC()
		}
	}
	return h
}

// EventHoldRestored is the reason of the Warning Event that says remediation's hold was put
// back after someone else removed it (acceptance.EventHoldRestored, the same reason).
const EventHoldRestored = "HoldRestored"

// heldPhases are the phases in which remediation holds the node.
var heldPhases = map[remediation.Phase]bool{
	remediation.PhaseQuarantined: true, remediation.PhaseRecovering: true,
	remediation.PhaseAccepting: true, remediation.PhaseMaintenance: true,
}

// act carries out the controller's own actions; the agent's were asked for by persist.
// sel is the pool's driverPodSelector (nil: none).
func (r *Reconciler) act(ctx context.Context, gn *v1alpha1.GPUNode, d remediation.Decision, sel *v1alpha1.PodSelector) error {
	for _, a := range d.Actions {
		switch a.Kind {
		case remediation.ActionEvictPods:
			if err := r.evict(ctx, gn, a); err != nil {
				return err
			}
		case remediation.ActionReloadDriver:
			if _, err := r.reloadDriver(ctx, gn, sel, a.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// evict drains the pods of the action's GPUs: every pod of the node for a node-wide action,
// otherwise exactly the pods status.gpuHealth lists on those GPUs (the kubelet's
// pod-resources, as the agent publishes them). One pass drains for at most DrainTimeout;
// the decision asks again while pods remain.
func (r *Reconciler) evict(ctx context.Context, gn *v1alpha1.GPUNode, a remediation.Action) error {
	filter := nodeops.AllPods()
	if len(a.GPUs) > 0 {
		keys := gpuPods(gn, a.GPUs)
		if len(keys) == 0 {
			r.Recorder.Eventf(gn, nil, corev1.EventTypeWarning, "NoPodsKnown", "EvictPods",
				"evict-pods for GPU %v: status.gpuHealth names no pod on them, nothing evicted", a.GPUs)
			return nil
		}
		filter = nodeops.OnlyPods(keys...)
	}
	timeout := r.DrainTimeout
	if timeout <= 0 {
		timeout = defaultDrainTimeout
	}
	res, err := nodeops.Drainer{Client: r.Client}.Drain(ctx, gn.Spec.NodeName, nodeops.DrainOptions{
		Pods: filter, Timeout: timeout, PodDeleteTimeout: podDeleteWait, PollInterval: podDeleteWait / 2})
	if err != nil {
		return fmt.Errorf("evict pods of GPUNode %q: %w", gn.Name, err)
	}
	log.FromContext(ctx).Info("evicted pods", "result", res.String())
	typ := corev1.EventTypeNormal
	if !res.Done() {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(gn, nil, typ, "EvictPods", "EvictPods", "%s", res.String())
	return nil
}

// gpuPods are the pods ("namespace/name") status.gpuHealth lists on the GPUs with the
// given indices.
func gpuPods(gn *v1alpha1.GPUNode, indices []int) []types.NamespacedName {
	var out []types.NamespacedName
	for _, g := range gn.Status.GPUHealth {
		if !slices.Contains(indices, int(g.Index)) {
			continue
		}
		for _, p := range g.Pods {
			ns, name, ok := strings.Cut(p, "/")
			key := types.NamespacedName{Namespace: ns, Name: name}
			if ok && !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
	}
	return out
}

func camel(kebab string) string {
	parts := strings.Split(kebab, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

func gpuText(uuids []string) string {
	if len(uuids) == 0 {
		return "the whole node"
	}
	return strings.Join(uuids, ",")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
