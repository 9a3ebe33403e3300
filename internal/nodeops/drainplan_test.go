package nodeops

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func planned(edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: "llama-0", Labels: map[string]string{"app": "llama"}}}
	if edit != nil {
		edit(p)
	}
	return p
}

func controlledBy(kind, apiVersion string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, APIVersion: apiVersion, Name: "owner", UID: "u", Controller: &yes}}
	}
}

func TestPlanPod(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name   string
		pod    *corev1.Pod
		filter PodFilter
		want   step
		reason string
	}{
		{"a plain running pod is evicted when every pod is chosen", planned(nil), AllPods(), stepEvict, ""},
		{"a pod in the chosen set is evicted", planned(nil), OnlyPods(types.NamespacedName{Namespace: "train", Name: "llama-0"}), stepEvict, ""},
		{"a pod outside the chosen set is ignored and not reported", planned(nil), OnlyPods(types.NamespacedName{Namespace: "train", Name: "llama-1"}), stepIgnore, ""},
		{"a pod of the same name in another namespace is not chosen", planned(nil), OnlyPods(types.NamespacedName{Namespace: "infer", Name: "llama-0"}), stepIgnore, ""},
		{"an empty set chooses nothing", planned(nil), OnlyPods(), stepIgnore, ""},
		{"the zero filter chooses nothing", planned(nil), PodFilter{}, stepIgnore, ""},
		{"a DaemonSet pod is skipped", planned(controlledBy("DaemonSet", "apps/v1")), AllPods(), stepSkip, SkipDaemonSet},
		{"a ReplicaSet pod is evicted", planned(controlledBy("ReplicaSet", "apps/v1")), AllPods(), stepEvict, ""},
		{"a mirror pod is skipped", planned(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"} }), AllPods(), stepSkip, SkipMirror},
		{"gpunode's agent is skipped even when chosen by name", planned(func(p *corev1.Pod) {
			p.Labels = map[string]string{"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/component": "agent"}
		}), OnlyPods(types.NamespacedName{Namespace: "train", Name: "llama-0"}), stepSkip, SkipAgent},
		{"a terminating pod is waited for, not evicted again", planned(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), AllPods(), stepWait, ""},
		{"a finished pod is skipped", planned(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), AllPods(), stepSkip, SkipFinished},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := planPod(tc.pod, tc.filter, nil)
			if got != tc.want || reason != tc.reason {
				t.Errorf("planPod = %v %q, want %v %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestBlockingPDBs(t *testing.T) {
	pod := planned(nil)
	pdb := func(ns, name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	match := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llama"}}
	tests := []struct {
		name string
		pdbs []policyv1.PodDisruptionBudget
		want []string
	}{
		{"a budget selecting the pod's labels blocks it", []policyv1.PodDisruptionBudget{pdb("train", "llama", match)}, []string{"train/llama"}},
		{"a budget of another namespace does not", []policyv1.PodDisruptionBudget{pdb("infer", "llama", match)}, nil},
		{"a budget selecting other labels does not", []policyv1.PodDisruptionBudget{pdb("train", "web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})}, nil},
		{"an empty selector selects every pod of its namespace (policy/v1)", []policyv1.PodDisruptionBudget{pdb("train", "all", &metav1.LabelSelector{})}, []string{"train/all"}},
		{"a nil selector selects nothing", []policyv1.PodDisruptionBudget{pdb("train", "none", nil)}, nil},
		{"several budgets are named, sorted", []policyv1.PodDisruptionBudget{pdb("train", "z", match), pdb("train", "a", match)}, []string{"train/a", "train/z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := blockingPDBs(pod, tc.pdbs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("blockingPDBs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDrainResultDoneOnlyWhenEveryChosenPodIsGoneOrSkipped(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []Outcome
		want     bool
	}{
		{"no pods: done", nil, true},
		{"evicted and skipped: done", []Outcome{OutcomeEvicted, OutcomeSkipped}, true},
		{"one still terminating: not done", []Outcome{OutcomeEvicted, OutcomeTerminating}, false},
		{"one blocked: not done", []Outcome{OutcomeBlocked}, false},
		{"one failed: not done", []Outcome{OutcomeFailed, OutcomeEvicted}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r DrainResult
			for _, o := range tc.outcomes {
				r.Pods = append(r.Pods, PodOutcome{Outcome: o})
			}
			if r.Done() != tc.want {
				t.Errorf("Done() = %v, want %v", r.Done(), tc.want)
			}
		})
	}
}

func TestProtectSelectorAddsToTheAgent(t *testing.T) {
	agent := planned(func(p *corev1.Pod) { p.Labels = AgentLabels() })
	tests := []struct {
		name    string
		pod     *corev1.Pod
		protect labels.Selector
		want    string
	}{
		{"the agent stays protected when the selector protects nothing", agent, labels.Nothing(), SkipAgent},
		{"a pod the selector matches is protected", planned(nil), labels.SelectorFromSet(labels.Set{"app": "llama"}), SkipProtected},
		{"a pod the selector does not match is evicted", planned(nil), labels.SelectorFromSet(labels.Set{"app": "web"}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, reason := planPod(tc.pod, AllPods(), tc.protect); reason != tc.want {
				t.Errorf("reason %q, want %q", reason, tc.want)
			}
		})
	}
}

func TestRetryBackoffDoublesUpToItsCap(t *testing.T) {
	opt := DrainOptions{RetryInterval: 100 * time.Millisecond, MaxRetryInterval: 350 * time.Millisecond}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var s podState
	var got []time.Duration
	for range 5 {
		s.retryLater(now, opt)
		got = append(got, s.next.Sub(now))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("retry waits %v, want %v", got, want)
	}
}
