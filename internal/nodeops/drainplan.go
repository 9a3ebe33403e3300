package nodeops

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Outcome is what a drain did with one pod.
type Outcome string

// Outcomes of a drain, per pod.
const (
	// OutcomeEvicted: the eviction was accepted and the pod is gone.
	OutcomeEvicted Outcome = "evicted"
	// OutcomeTerminating: the pod is being deleted (its eviction was accepted, now or by an
	// earlier drain, or it was already terminating) and was still present when the wait
	// ended. The kubelet finishes the deletion; a later drain waits for it again.
	OutcomeTerminating Outcome = "terminating"
	// OutcomeBlocked: every eviction was refused (429) because of a PodDisruptionBudget
	// until the drain's timeout.
	OutcomeBlocked Outcome = "blocked"
	// OutcomeSkipped: the pod is not to be evicted (Reason says why).
	OutcomeSkipped Outcome = "skipped"
	// OutcomeFailed: the eviction failed for another reason (Reason has the error).
	OutcomeFailed Outcome = "failed"
)

// Skip reasons.
const (
	SkipDaemonSet = "owned by a DaemonSet: its controller would recreate it on the node at once, and it tolerates the hold's taint"
	SkipMirror    = "a mirror pod of a static pod: the kubelet runs it from a file; the API cannot evict it"
	SkipAgent     = "gpunode's own agent: the node's recovery needs it"
	SkipProtected = "protected by the drain's protect selector"
	SkipFinished  = "finished (Succeeded or Failed): it holds no device"
)

// AgentLabels are the labels of gpunode's agent pods (the Helm chart's selector). A drain
// never evicts a pod that carries them.
func AgentLabels() labels.Set {
	return labels.Set{"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/component": "agent"}
}

var agentSelector = labels.SelectorFromSet(AgentLabels())

// PodFilter chooses the pods a drain evicts. The zero value chooses nothing and is refused
// by Drain, so that a caller that forgot to fill it never drains a whole node.
type PodFilter struct {
	all  bool
	set  bool
	keys map[types.NamespacedName]bool
}

// AllPods chooses every pod on the node (a node-level fault).
func AllPods() PodFilter { return PodFilter{all: true, set: true} }

// OnlyPods chooses the given pods (those on the faulty GPUs, found through the kubelet's
// pod-resources API). An empty list chooses none: there is nothing to drain.
func OnlyPods(keys ...types.NamespacedName) PodFilter {
	f := PodFilter{set: true, keys: make(map[types.NamespacedName]bool, len(keys))}
	for _, k := range keys {
		f.keys[k] = true
	}
	return f
}

// chooses reports whether the filter chooses key.
func (f PodFilter) chooses(key types.NamespacedName) bool { return f.all || f.keys[key] }

// PodOutcome is what a drain did with one pod.
type PodOutcome struct {
	Pod     types.NamespacedName `json:"pod"`
	UID     types.UID            `json:"uid,omitempty"`
	Outcome Outcome              `json:"outcome"`
	// Reason: why it was skipped, the error of a failure, or the API's refusal of a
	// blocked eviction.
	Reason string `json:"reason,omitempty"`
	// PDBs are the PodDisruptionBudgets ("namespace/name") that select a blocked pod.
	PDBs []string `json:"pdbs,omitempty"`
	// Attempts counts the eviction requests sent for the pod in this drain.
	Attempts int `json:"attempts,omitempty"`
}

// step is what the drain does next with a pod it sees.
type step int

const (
	stepIgnore step = iota // not chosen by the filter: not reported
	stepSkip               // reported as skipped with a reason
	stepWait               // already terminating: wait for it, do not evict again
	stepEvict
)

// planPod decides what a drain does with pod. Pure.
func planPod(pod *corev1.Pod, filter PodFilter, protect labels.Selector) (step, string) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if !filter.chooses(key) {
		return stepIgnore, ""
	}
	switch {
	case agentSelector.Matches(labels.Set(pod.Labels)):
		return stepSkip, SkipAgent
	case protect != nil && protect.Matches(labels.Set(pod.Labels)):
		return stepSkip, SkipProtected
	case pod.Annotations[corev1.MirrorPodAnnotationKey] != "":
		return stepSkip, SkipMirror
	case ownedByDaemonSet(pod):
		return stepSkip, SkipDaemonSet
	case pod.DeletionTimestamp != nil:
		return stepWait, ""
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return stepSkip, SkipFinished
	}
	return stepEvict, ""
}

func ownedByDaemonSet(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "DaemonSet" && (ref.APIVersion == "apps/v1" || ref.APIVersion == "extensions/v1beta1")
}

// blockingPDBs names the budgets among pdbs that select pod, sorted. As in policy/v1: a
// nil selector selects nothing, an empty one every pod of the budget's namespace.
func blockingPDBs(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for i := range pdbs {
		p := &pdbs[i]
		if p.Namespace != pod.Namespace || p.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// sortOutcomes orders outcomes by namespace and name.
func sortOutcomes(os []PodOutcome) {
	slices.SortFunc(os, func(a, b PodOutcome) int {
		return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
	})
}
