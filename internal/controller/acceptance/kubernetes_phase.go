package acceptance

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// DefaultKubernetesRecheck is how soon a node held by a failed L2 check is judged again
// when Reconciler.KubernetesRecheck is zero.
const DefaultKubernetesRecheck = 20 * time.Second

// maxEventNote is the API's limit on an Event's note.
const maxEventNote = 1024

// podNodeNameField selects the pods bound to a Node (a field the API server indexes).
const podNodeNameField = "spec.nodeName"

// The RBAC layer L2 uses to read the node's DRA devices.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=list

// judgeKubernetes judges layer L2 of s's node with record, the answer to its request, and
// folds the judgement into v (see KubernetesJudgement.Apply). The result is the condition
// KubernetesInventory, an Event on the GPUNode when it changes, and, while a gating check
// fails, another pass after the recheck interval (the Node's status is not watched).
func (r *Reconciler) judgeKubernetes(ctx context.Context, s *scope, record *v1alpha1.AcceptanceRecord, v Verdict) (Verdict, error) {
	if v.Reason == v1alpha1.ReasonRecordMismatch {
		return v, nil
	}
	gates := KubernetesGates(s.policy)
	if !NeedKubernetesJudgement(s.gn, record.Name, gates, v.Accepted) {
		return v, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{podNodeNameField: s.node.Name}); err != nil {
		return v, fmt.Errorf("list the pods on Node %q to judge layer kubernetes of GPUNode %q: %w", s.node.Name, s.gn.Name, err)
	}
	published, err := ListNodeSlices(ctx, r.Client, s.node.Name)
	if err != nil {
		return v, fmt.Errorf("judge layer kubernetes of GPUNode %q: %w", s.gn.Name, err)
	}
	facts := KubernetesFacts{Node: s.node, GPUNode: s.gn, Pods: pods.Items, Slices: published}
	facts.DaemonSets, facts.DaemonSetsErr = r.listDaemonSets(ctx)
	j := KubernetesJudgement{Record: record.Name, Gates: gates, Checks: KubernetesChecks(facts)}
	status, reason, msg := j.Condition()
	if r.setCondition(s.gn, v1alpha1.ConditionKubernetesInventory, status, reason, msg) {
		typ := corev1.EventTypeNormal
		if reason != v1alpha1.ReasonKubernetesPassed {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(s.gn, s.node, typ, v1alpha1.ConditionKubernetesInventory+reason, "JudgeKubernetes", "%s", truncate(msg, maxEventNote))
	}
	failed := j.Failed()
	log.FromContext(ctx).V(1).Info("judged layer kubernetes", "record", record.Name, "gates", gates,
		"checks", len(j.Checks), "failed", len(failed), "condition", reason)
	out := j.Apply(v)
	if out.Accepted != v.Accepted { // held by L2: Kubernetes's view may catch up
		recheck := r.KubernetesRecheck
		if recheck <= 0 {
			recheck = DefaultKubernetesRecheck
		}
		if s.result.RequeueAfter == 0 || recheck < s.result.RequeueAfter {
			s.result.RequeueAfter = recheck
		}
	}
	return out, nil
}

// listDaemonSets reads every namespace's DaemonSets through r.DaemonSets (uncached: read
// once per judged record); nil: not read.
func (r *Reconciler) listDaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	if r.DaemonSets == nil {
		return nil, errors.New("the controller reads no DaemonSets")
	}
	var list appsv1.DaemonSetList
	if err := r.DaemonSets.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list DaemonSets: %w", err)
	}
	return list.Items, nil
}
