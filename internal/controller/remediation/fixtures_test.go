package remediation

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

// at is a fixed time, to the second (the API keeps times to the second).
var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sha is an evidence bundle's digest.
const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// harness drives the Reconciler pass by pass on a fake clock against the test API server,
// and plays the agent.
type harness struct {
	t      testing.TB
	c      client.Client
	r      *Reconciler
	clock  *clocktesting.FakePassiveClock
	events *events.FakeRecorder
	name   string
	pool   string
}

// newHarness creates a Node (labelled pool=name) with a GPUNode of gpus healthy GPUs, and
// a policy for the pool with the given remediation settings.
func newHarness(t testing.TB, name string, gpus int, rp v1alpha1.RemediationPolicy) *harness {
	t.Helper()
	name = unique(name)
	_, c := testenv.Start(t)
	h := &harness{t: t, c: c, clock: clocktesting.NewFakePassiveClock(at), events: events.NewFakeRecorder(200), name: name}
	h.r = &Reconciler{Client: c, Recorder: h.events, Clock: h.clock}
	ctx := t.Context()
	pol := &v1alpha1.GPUNodePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GPUNodePolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Remediation:  rp,
		},
	}
	if err := c.Create(ctx, pol); err != nil {
		t.Fatalf("creating GPUNodePolicy %s: %v", name, err)
	}
	h.join(name, gpus)
	return h
}

// sibling joins another node, name, to h's pool; it shares h's clock, Reconciler and Events.
func (h *harness) sibling(name string, gpus int) *harness {
	h.t.Helper()
	pool := h.pool
	if pool == "" {
		pool = h.name
	}
	s := *h
	s.name = unique(name)
	s.pool = pool
	s.join(s.name, gpus)
	return &s
}

// join creates Node name, labelled with the pool, and its GPUNode with gpus healthy GPUs.
func (h *harness) join(name string, gpus int) {
	t, c, ctx := h.t, h.c, h.t.Context()
	t.Helper()
	pool := h.pool
	if pool == "" {
		pool = name
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}}
	if err := c.Create(ctx, gn); err != nil {
		t.Fatalf("creating GPUNode %s: %v", name, err)
	}
	h.agent("publishes its GPUs, all healthy", func(gn *v1alpha1.GPUNode) {
		gn.Status.GPUCount, gn.Status.Health = int32(gpus), v1alpha1.HealthHealthy
		for i := range gpus {
			gn.Status.Inventory.GPUs = append(gn.Status.Inventory.GPUs, v1alpha1.GPUInfo{
				Index: int32(i), UUID: uuid(i), Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
			})
			gn.Status.GPUHealth = append(gn.Status.GPUHealth, v1alpha1.GPUHealth{
				Index: int32(i), UUID: uuid(i), Health: v1alpha1.HealthHealthy, Action: "none", Since: metav1.NewTime(at),
			})
		}
	})
}

// runs numbers the objects of repeated runs (go test -count) against one API server.
var runs atomic.Int64

func unique(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

func uuid(i int) string { return fmt.Sprintf("GPU-%04d", i) }

// get reads the GPUNode.
func (h *harness) get() *v1alpha1.GPUNode {
	h.t.Helper()
	gn := &v1alpha1.GPUNode{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: h.name}, gn); err != nil {
		h.t.Fatalf("reading GPUNode %s: %v", h.name, err)
	}
	return gn
}

// agent plays the agent writing the GPUNode's status.
func (h *harness) agent(what string, change func(*v1alpha1.GPUNode)) {
	h.t.Helper()
	gn := h.get()
	change(gn)
	if err := h.c.Status().Update(h.t.Context(), gn); err != nil {
		h.t.Fatalf("the agent %s: %v", what, err)
	}
}

// setGPU sets GPU i's health as the agent's health engine would.
func (h *harness) setGPU(i int, health v1alpha1.Health, action v1alpha1.Action, causes ...string) {
	h.t.Helper()
	h.agent(fmt.Sprintf("marks GPU %d %s", i, health), func(gn *v1alpha1.GPUNode) {
		for j := range gn.Status.GPUHealth {
			if g := &gn.Status.GPUHealth[j]; int(g.Index) == i {
				g.Health, g.Action, g.Causes, g.Since = health, action, causes, metav1.NewTime(h.clock.Now())
			}
		}
	})
}

// answer plays the agent answering spec.remediation.
func (h *harness) answer(outcome v1alpha1.StepOutcome, evidence bool) {
	h.t.Helper()
	h.agent("answers its request", func(gn *v1alpha1.GPUNode) {
		req := gn.Spec.Remediation
		if req == nil {
			h.t.Fatal("the agent has no request to answer")
		}
		now := metav1.NewTime(h.clock.Now())
		a := &v1alpha1.RemediationAnswer{ID: req.ID, Step: req.Step, Outcome: outcome, Started: now, Finished: now, Message: "as asked"}
		if evidence {
			a.Evidence = &v1alpha1.EvidenceSummary{SHA256: sha, Path: "/var/lib/gpunode/evidence/b.tar.gz", SizeBytes: 4096, Created: now}
		}
		gn.Status.RemediationAnswer = a
	})
}

// accept plays the agent answering the current acceptance generation.
func (h *harness) accept(result v1alpha1.AcceptanceResult) {
	h.t.Helper()
	h.agent("answers acceptance", func(gn *v1alpha1.GPUNode) {
		gn.Status.LastAcceptance = &v1alpha1.AcceptanceSummary{
			RecordName: fmt.Sprintf("%s-%d", gn.Name, gn.Spec.AcceptanceGeneration), Generation: gn.Spec.AcceptanceGeneration,
			Result: result, Time: metav1.NewTime(h.clock.Now()),
		}
	})
}

// pass advances the clock by step and runs one reconcile, and the one right after it
// when it placed the hold (as the queue would, at once).
func (h *harness) pass(step time.Duration) ctrl.Result {
	h.t.Helper()
	h.clock.SetTime(h.clock.Now().Add(step))
	for {
		res, err := h.r.Reconcile(h.t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Name: h.name}})
		if err != nil {
			h.t.Fatalf("reconcile at %s: %v", h.clock.Now().Format(time.RFC3339), err)
		}
		if res.RequeueAfter != AfterHoldPlaced {
			return res
		}
	}
}

// held reports whether the Node carries remediation's hold.
func (h *harness) held() bool {
	h.t.Helper()
	holds, err := nodeops.Ops{Client: h.c}.Get(h.t.Context(), h.name)
	if err != nil {
		h.t.Fatalf("reading holds of Node %s: %v", h.name, err)
	}
	_, ok := holds.Find(remediation.OwnerRemediation)
	return ok
}

// state reads the persisted remediation state.
func (h *harness) state() remediation.State {
	h.t.Helper()
	s, err := ReadState(h.get())
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// sawEvent reports whether an Event whose text contains all of parts was emitted.
func (h *harness) sawEvent(parts ...string) bool {
	for {
		select {
		case e := <-h.events.Events:
			if containsAll(e, parts) {
				return true
			}
		default:
			return false
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// policy reads the pool's GPUNodePolicy.
func (h *harness) policy() *v1alpha1.GPUNodePolicy {
	h.t.Helper()
	pool := h.pool
	if pool == "" {
		pool = h.name
	}
	p := &v1alpha1.GPUNodePolicy{}
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: pool}, p); err != nil {
		h.t.Fatalf("reading GPUNodePolicy %s: %v", pool, err)
	}
	return p
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func intstrOf(n int32) intstr.IntOrString { return intstr.FromInt32(n) }

// claim is the phase the remediation controller claims for gn (status.remediation.phase),
// which the acceptance controller turns into status.phase.
func claim(gn *v1alpha1.GPUNode) v1alpha1.Phase {
	if gn.Status.Remediation == nil {
		return ""
	}
	return gn.Status.Remediation.Phase
}
