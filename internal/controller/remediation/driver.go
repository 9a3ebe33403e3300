package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// AnnotationControllerStep is the GPUNode annotation holding the step the controller carries
// out itself (reload-driver) as JSON (ControllerStep): the driver pods it deleted and, once
// known, the outcome. It is written before the first pod is deleted, so a restarted
// controller never deletes a driver pod for the same request twice; it only deletes what it
// recorded (by UID) and waits for the replacement.
const AnnotationControllerStep = "gpunode.dev/remediation-controller-step"

// controllerStepPoll is how often a pass checks a reload-driver in progress.
const controllerStepPoll = time.Second

// ControllerStep is a step the controller carries out, as recorded on the GPUNode.
type ControllerStep struct {
	// ID is the request the step carries out; Step is reload-driver.
	ID      int64                    `json:"id"`
	Step    v1alpha1.RemediationStep `json:"step"`
	Started time.Time                `json:"started"`
	// Pods are the driver pods deleted: a replacement is any other Ready pod.
	Pods []DriverPod `json:"pods,omitempty"`
	// Outcome, Finished and Message are set once the step ended.
	Outcome  v1alpha1.StepOutcome `json:"outcome,omitempty"`
	Finished time.Time            `json:"finished,omitzero"`
	Message  string               `json:"message,omitempty"`
}

// DriverPod is one deleted driver pod.
type DriverPod struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// ReadControllerStep returns the controller step recorded on gn (nil when none); a
// malformed annotation is an error naming the node.
func ReadControllerStep(gn *v1alpha1.GPUNode) (*ControllerStep, error) {
	v := gn.Annotations[AnnotationControllerStep]
	if v == "" {
		return nil, nil
	}
	cs := &ControllerStep{}
	if err := json.Unmarshal([]byte(v), cs); err != nil {
		return nil, fmt.Errorf("read annotation %s of GPUNode %q: %w", AnnotationControllerStep, gn.Name, err)
	}
	return cs, nil
}

// reloadDriver starts or follows the reload-driver of request id on gn's node: the first
// call records the driver pods the selector finds on the node and deletes them; later calls
// delete any recorded pod still there (by UID: never a replacement) and record Succeeded
// once another pod matching the selector on the node is Ready. No selector, or no driver
// pod on the node, is recorded as Failed at once. The timeout is the decision's.
func (r *Reconciler) reloadDriver(ctx context.Context, gn *v1alpha1.GPUNode, sel *v1alpha1.PodSelector, id int64) (*ControllerStep, error) {
	cs, err := ReadControllerStep(gn)
	if err != nil {
		return nil, err
	}
	if cs != nil && cs.ID == id && cs.Outcome != "" {
		return cs, nil
	}
	now := r.Clock.Now()
	if sel == nil {
		return r.recordStep(ctx, gn, &ControllerStep{ID: id, Step: v1alpha1.StepReloadDriver, Started: now,
			Outcome: v1alpha1.OutcomeFailed, Finished: now, Message: "the pool's policy names no driverPodSelector"})
	}
	pods, err := r.driverPods(ctx, gn.Spec.NodeName, sel)
	if err != nil {
		return nil, err
	}
	if cs == nil || cs.ID != id {
		cs = &ControllerStep{ID: id, Step: v1alpha1.StepReloadDriver, Started: now}
		for _, p := range pods {
			cs.Pods = append(cs.Pods, DriverPod{Name: p.Name, UID: p.UID})
		}
		if len(cs.Pods) == 0 {
			cs.Outcome, cs.Finished = v1alpha1.OutcomeFailed, now
			cs.Message = fmt.Sprintf("no pod in namespace %s matching the driverPodSelector runs on node %s", sel.Namespace, gn.Spec.NodeName)
		}
		// Recorded before any deletion: a restarted controller deletes nothing else.
		if cs, err = r.recordStep(ctx, gn, cs); err != nil || cs.Outcome != "" {
			return cs, err
		}
		r.Recorder.Eventf(gn, nil, corev1.EventTypeWarning, "ReloadingDriver", "ReloadDriver",
			"deleting driver pod(s) %s in namespace %s (request %d)", podNames(cs.Pods), sel.Namespace, id)
	}
	var waiting []string
	for _, p := range pods {
		recorded := slices.ContainsFunc(cs.Pods, func(d DriverPod) bool { return d.UID == p.UID })
		switch {
		case recorded && p.DeletionTimestamp == nil:
			if err := r.deletePod(ctx, sel.Namespace, p); err != nil {
				return nil, err
			}
		case !recorded && p.DeletionTimestamp == nil && podReady(&p):
			cs.Outcome, cs.Finished = v1alpha1.OutcomeSucceeded, r.Clock.Now()
			cs.Message = fmt.Sprintf("driver pod %s/%s replaced %s and is Ready", sel.Namespace, p.Name, podNames(cs.Pods))
			r.Recorder.Eventf(gn, nil, corev1.EventTypeNormal, "DriverReloaded", "ReloadDriver", "%s", cs.Message)
			return r.recordStep(ctx, gn, cs)
		case !recorded:
			waiting = append(waiting, p.Name)
		}
	}
	log.FromContext(ctx).V(1).Info("waiting for a Ready driver pod", "request", id, "notReady", waiting)
	return cs, nil
}

// driverPods lists the pods the selector finds on node, from the API server.
func (r *Reconciler) driverPods(ctx context.Context, node string, sel *v1alpha1.PodSelector) ([]corev1.Pod, error) {
	ls, err := metav1.LabelSelectorAsSelector(&sel.Selector)
	if err != nil {
		return nil, fmt.Errorf("driverPodSelector of node %s: %w", node, err)
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(sel.Namespace), client.MatchingLabelsSelector{Selector: ls}); err != nil {
		return nil, fmt.Errorf("list driver pods in namespace %s for node %s: %w", sel.Namespace, node, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

// deletePod deletes the pod only if it is still the one recorded (UID precondition).
func (r *Reconciler) deletePod(ctx context.Context, ns string, p corev1.Pod) error {
	err := r.Client.Delete(ctx, &p, client.Preconditions{UID: &p.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete driver pod %s/%s: %w", ns, p.Name, err)
	}
	return nil
}

// recordStep writes cs into gn's annotation, guarded by resourceVersion.
func (r *Reconciler) recordStep(ctx context.Context, gn *v1alpha1.GPUNode, cs *ControllerStep) (*ControllerStep, error) {
	b, err := json.Marshal(cs)
	if err != nil {
		return nil, fmt.Errorf("render the controller step of GPUNode %q: %w", gn.Name, err)
	}
	upd := gn.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[AnnotationControllerStep] = string(b)
	if err := r.applyNode(ctx, gn, upd); err != nil {
		return nil, fmt.Errorf("record %s (request %d) of GPUNode %q: %w", cs.Step, cs.ID, gn.Name, err)
	}
	return cs, nil
}

// followControllerStep follows a reload-driver the persisted state shows started, before
// the decision: its outcome, once recorded, is a fact of this very pass. It also starts a
// step whose start a crash lost (recorded in the state, no pod deleted yet). It reports
// whether the step is still in progress.
func (r *Reconciler) followControllerStep(ctx context.Context, gn *v1alpha1.GPUNode, fl *loaded) (bool, error) {
	f := &fl.fleet.Nodes[fl.self]
	s := f.State
	if s.Phase != remediation.PhaseRecovering || s.Step != remediation.StepReloadDriver || s.RequestID == 0 {
		return false, nil
	}
	if f.Outcome != nil && f.Outcome.ID >= s.RequestID {
		return false, nil
	}
	var sel *v1alpha1.PodSelector
	if p := fl.policies[f.Pool]; p != nil {
		sel = p.Spec.Remediation.DriverPodSelector
	}
	cs, err := r.reloadDriver(ctx, gn, sel, s.RequestID)
	if err != nil || cs.Outcome == "" {
		return err == nil, err
	}
	f.Outcome = &remediation.Outcome{ID: cs.ID, Result: outcomeResult(cs.Outcome), At: cs.Finished, Detail: cs.Message}
	return false, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podNames(ps []DriverPod) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ",")
}
