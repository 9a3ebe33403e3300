package nodeops

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Drain defaults.
const (
	DefaultDrainTimeout  = 5 * time.Minute
	DefaultPollInterval  = time.Second
	DefaultRetryInterval = time.Second
	DefaultMaxRetry      = 10 * time.Second
)

// Drainer evicts pods from a node through the Eviction API (pods/eviction, policy/v1), so
// that PodDisruptionBudgets are honoured: the API server refuses an eviction that would
// break a budget (429 TooManyRequests) and the drain retries it with backoff until its
// timeout. A drain does not cordon or taint: take a hold first (Ops.Hold), whose taint
// keeps new pods away while the drain runs.
//
// Client should read from the API server, not from a cache: the pods are listed with the
// field selector spec.nodeName. RBAC: pods get/list, pods/eviction create,
// poddisruptionbudgets list (to name the budgets that block a pod).
type Drainer struct {
	Client client.Client
}

// DrainOptions configure one drain.
type DrainOptions struct {
	// Pods chooses the pods to evict: AllPods() or OnlyPods(keys...). Required.
	Pods PodFilter
	// Timeout bounds the whole drain (default DefaultDrainTimeout).
	Timeout time.Duration
	// PodDeleteTimeout bounds the wait for one pod's deletion after its eviction was
	// accepted (or after it was first seen terminating); past it the pod is reported
	// terminating and no longer waited for. Zero: wait until Timeout.
	PodDeleteTimeout time.Duration
	// GracePeriodSeconds overrides the pods' termination grace period; nil keeps theirs.
	GracePeriodSeconds *int64
	// PollInterval is how often the node's pods are listed again (default 1 s).
	PollInterval time.Duration
	// RetryInterval is the first wait before an eviction refused by a budget is retried; it
	// doubles per refusal up to MaxRetryInterval (defaults 1 s and 10 s).
	RetryInterval, MaxRetryInterval time.Duration
	// Protect selects more pods never evicted, whatever Pods says (nil: none). gpunode's
	// agent (AgentLabels) is never evicted in any case.
	Protect labels.Selector
}

func (o DrainOptions) withDefaults() DrainOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultDrainTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.MaxRetryInterval < o.RetryInterval {
		o.MaxRetryInterval = max(DefaultMaxRetry, o.RetryInterval)
	}
	return o
}

// podState is the drain's memory of one pod (by UID: a pod recreated under the same
// name is another pod).
type podState struct {
	PodOutcome
	since   time.Time // eviction accepted, or first seen terminating
	next    time.Time // earliest next eviction attempt
	backoff time.Duration
	final   bool // nothing more to do or wait for
}

// Drain evicts the chosen pods of node nodeName and waits for them to go, until every one
// is gone, skipped or past its deletion wait, or until the timeout. It is re-entrant: it
// keeps no state between calls, so calling it again continues: pods already terminating
// are waited for, not evicted again, and blocked ones are retried. The error is non-nil
// only for invalid options, when the first listing of the node's pods fails, or when ctx
// (not the drain's own timeout) ends it; the result is valid in every case.
//
// Skipped: DaemonSet pods (recreated at once, and they tolerate the taints), mirror pods
// (static pods: the API cannot evict them), gpunode's agent, pods Protect selects and
// finished pods. Pods that are already terminating are not evicted again but waited for.
func (d Drainer) Drain(ctx context.Context, nodeName string, opt DrainOptions) (DrainResult, error) {
	start := time.Now()
	res := DrainResult{Node: nodeName}
	if nodeName == "" {
		return res, errors.New("drain: empty node name")
	}
	if !opt.Pods.set {
		return res, fmt.Errorf("drain node %s: no pod filter (pass AllPods() or OnlyPods(keys...))", nodeName)
	}
	opt = opt.withDefaults()
	dctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	states := map[types.UID]*podState{}
	for round := 0; ; round++ {
		pods := &corev1.PodList{}
		err := d.Client.List(dctx, pods, client.MatchingFields{"spec.nodeName": nodeName})
		if err != nil && round == 0 && dctx.Err() == nil {
			return res, fmt.Errorf("drain node %s: list its pods: %w", nodeName, err)
		}
		if err == nil {
			d.round(dctx, pods.Items, states, opt)
		}
		if allFinal(states) {
			break
		}
		select {
		case <-dctx.Done():
		case <-time.After(opt.PollInterval):
		}
		if dctx.Err() != nil {
			res.TimedOut = true
			break
		}
	}
	for _, s := range states {
		if s.Outcome == "" {
			s.Outcome, s.Reason = OutcomeFailed, "the drain ended before its eviction was answered"
		}
		res.Pods = append(res.Pods, s.PodOutcome)
	}
	sortOutcomes(res.Pods)
	res.Took = time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("drain node %s: %w", nodeName, err)
	}
	return res, nil
}

// round handles one listing of the node's pods.
func (d Drainer) round(ctx context.Context, pods []corev1.Pod, states map[types.UID]*podState, opt DrainOptions) {
	now := time.Now()
	seen := map[types.UID]bool{}
	budgets := map[string][]policyv1.PodDisruptionBudget{} // by namespace, listed once a round
	for i := range pods {
		pod := &pods[i]
		seen[pod.UID] = true
		s := states[pod.UID]
		if s != nil && s.final {
			continue
		}
		step, reason := planPod(pod, opt.Pods, opt.Protect)
		if step == stepIgnore {
			continue
		}
		if s == nil {
			s = &podState{PodOutcome: PodOutcome{Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, UID: pod.UID}}
			states[pod.UID] = s
		}
		switch step {
		case stepSkip:
			s.Outcome, s.Reason, s.final = OutcomeSkipped, reason, true
		case stepWait:
			s.wait(now, opt)
		case stepEvict:
			if s.Outcome == OutcomeTerminating {
				s.wait(now, opt) // accepted, not yet visible as terminating
				continue
			}
			if now.Before(s.next) {
				continue
			}
			d.evict(ctx, pod, s, now, opt, budgets)
		}
	}
	for uid, s := range states {
		if !seen[uid] && !s.final {
			s.Outcome, s.Reason, s.PDBs, s.final = OutcomeEvicted, "", nil, true
			if s.Attempts == 0 {
				s.Reason = "gone before this drain evicted it"
			}
		}
	}
}

// wait marks s terminating and final once it has been waited for PodDeleteTimeout.
func (s *podState) wait(now time.Time, opt DrainOptions) {
	if s.Outcome != OutcomeTerminating || s.since.IsZero() {
		s.Outcome, s.Reason, s.PDBs, s.since = OutcomeTerminating, "", nil, now
	}
	if opt.PodDeleteTimeout > 0 && now.Sub(s.since) >= opt.PodDeleteTimeout {
		s.Reason = fmt.Sprintf("still present %s after its deletion began; the kubelet finishes it", opt.PodDeleteTimeout)
		s.final = true
	}
}

// evict sends one eviction for pod and records the answer in s.
func (d Drainer) evict(ctx context.Context, pod *corev1.Pod, s *podState, now time.Time, opt DrainOptions, budgets map[string][]policyv1.PodDisruptionBudget) {
	uid := pod.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: opt.GracePeriodSeconds, Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := d.Client.SubResource("eviction").Create(ctx, pod, ev)
	if err != nil && ctx.Err() != nil {
		return // the drain's own time ran out mid-request: keep what the last answer said
	}
	s.Attempts++
	switch {
	case err == nil:
		s.wait(now, opt)
	case apierrors.IsNotFound(err):
		s.Outcome, s.Reason, s.final = OutcomeEvicted, "", true
	case apierrors.IsTooManyRequests(err):
		if _, ok := budgets[pod.Namespace]; !ok {
			budgets[pod.Namespace] = d.budgets(ctx, pod.Namespace)
		}
		s.Outcome, s.Reason, s.PDBs = OutcomeBlocked, refusal(err), blockingPDBs(pod, budgets[pod.Namespace])
		s.retryLater(now, opt)
	case permanent(err):
		s.Outcome, s.Reason, s.final = OutcomeFailed, err.Error(), true
	default: // a conflict (the pod was replaced), a timeout, a server error: try again
		s.Outcome, s.Reason = OutcomeFailed, err.Error()
		s.retryLater(now, opt)
	}
}

func (s *podState) retryLater(now time.Time, opt DrainOptions) {
	if s.backoff == 0 {
		s.backoff = opt.RetryInterval
	} else {
		s.backoff = min(2*s.backoff, opt.MaxRetryInterval)
	}
	s.next = now.Add(s.backoff)
}

// budgets lists the namespace's PodDisruptionBudgets; nil when they cannot be read (the
// refusal's own message still says which budget).
func (d Drainer) budgets(ctx context.Context, namespace string) []policyv1.PodDisruptionBudget {
	l := &policyv1.PodDisruptionBudgetList{}
	if err := d.Client.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return nil
	}
	return l.Items
}

// refusal is the API server's reason for a 429, with its causes ("The disruption budget
// web needs 2 healthy pods and has 2 currently").
func refusal(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err.Error()
	}
	msg := st.Status().Message
	if det := st.Status().Details; det != nil {
		for _, c := range det.Causes {
			msg += ": " + c.Message
		}
	}
	return msg
}

// permanent reports errors that retrying cannot fix.
func permanent(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}

func allFinal(states map[types.UID]*podState) bool {
	for _, s := range states {
		if !s.final {
			return false
		}
	}
	return true
}
