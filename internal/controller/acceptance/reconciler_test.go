package acceptance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// waitTimeout bounds every wait for the controller; a pass takes milliseconds.
const waitTimeout = 20 * time.Second

// startController starts a manager running the Reconciler, changed by each option, against
// the test API server and stops it when t ends.
func startController(t *testing.T, options ...func(*Reconciler)) client.Client {
	t.Helper()
	cfg, c := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	uncached := client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Node{}, &corev1.Pod{}, &v1alpha1.AcceptanceRecord{}, &resourcev1.ResourceSlice{}}}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s, Client: uncached, // as the controller's manager reads them (remediation.ClientOptions)
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(Name), Clock: clock.RealClock{}, DaemonSets: mgr.GetAPIReader()}
	for _, o := range options {
		o(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the manager stopped with an error: %v", err)
		}
	})
	return c
}

// join plays the agent joining: the Node, held by acceptance, and its GPUNode with the
// facts published.
func join(t *testing.T, c client.Client, name string, gpus int, labels map[string]string) {
	t.Helper()
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	if err := (nodeops.Ops{Client: c}).Hold(ctx, name, v1alpha1.HoldOwnerAcceptance, "new node"); err != nil {
		t.Fatalf("holding Node %s as the agent: %v", name, err)
	}
	gn := gpuNode(name, gpus)
	status := gn.Status
	if err := c.Create(ctx, gn); err != nil {
		t.Fatalf("creating GPUNode %s: %v", name, err)
	}
	err := retryOnConflict(ctx, func() error { // the controller may have written it meanwhile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.AcceleratorClass, gn.Status.GPUCount, gn.Status.Health = status.AcceleratorClass, status.GPUCount, status.Health
		gn.Status.Inventory, gn.Status.Versions = status.Inventory, status.Versions
		return c.Status().Update(ctx, gn)
	})
	if err != nil {
		t.Fatalf("publishing GPUNode %s status: %v", name, err)
	}
}

// answer plays the agent answering the current request with a record of gpus GPUs.
func answer(t *testing.T, c client.Client, name string, gen int64, result v1alpha1.AcceptanceResult, gpus int) {
	t.Helper()
	ctx := t.Context()
	recName := fmt.Sprintf("%s-%d", name, gen)
	if err := c.Create(ctx, record(recName, name, gen, result, gpus)); err != nil {
		t.Fatalf("creating AcceptanceRecord %s: %v", recName, err)
	}
	err := retryOnConflict(ctx, func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		answered(gn, recName, result)
		return c.Status().Update(ctx, gn)
	})
	if err != nil {
		t.Fatalf("publishing the answer of GPUNode %s: %v", name, err)
	}
}

func retryOnConflict(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "the object has been modified") || ctx.Err() != nil {
			return err
		}
	}
}

// waitGPUNode polls GPUNode name until ok holds, failing with the last state seen.
func waitGPUNode(t *testing.T, c client.Client, name, what string, ok func(*v1alpha1.GPUNode) bool) *v1alpha1.GPUNode {
	t.Helper()
	gn := &v1alpha1.GPUNode{}
	deadline := time.Now().Add(waitTimeout)
	for {
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn)
		if err == nil && ok(gn) {
			return gn
		}
		if time.Now().After(deadline) {
			t.Fatalf("GPUNode %s: waited %s for %s; last seen: err %v, spec %+v, status %+v", name, waitTimeout, what, err, gn.Spec, gn.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// taints lists the gpunode taints of Node name as key=value.
func taints(t *testing.T, c client.Client, name string) []string {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("reading Node %s: %v", name, err)
	}
	var out []string
	for _, tt := range node.Spec.Taints {
		if nodeops.Owns(tt) {
			out = append(out, tt.Key+"="+tt.Value)
		}
	}
	return out
}

func condition(gn *v1alpha1.GPUNode, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(gn.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func createPolicy(t *testing.T, c client.Client, p *v1alpha1.GPUNodePolicy) {
	t.Helper()
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("creating GPUNodePolicy %s: %v", p.Name, err)
	}
}

func TestANewNodeIsAskedForAcceptanceAndReleasedWhenItPasses(t *testing.T) {
	c := startController(t)
	createPolicy(t, c, policy("pass-fleet", 10, map[string]string{"fleet": "pass"}, 8))
	join(t, c, "node-pass", 8, map[string]string{"fleet": "pass"})

	// The request (spec) and its pass's status are two writes: wait for both.
	gn := waitGPUNode(t, c, "node-pass", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool {
		r := condition(gn, v1alpha1.ConditionAcceptanceRequested).Reason
		return gn.Spec.AcceptanceGeneration == 1 && (r == v1alpha1.ReasonNewNode || r == v1alpha1.ReasonPending)
	})
	if gn.Spec.AcceptanceReason != "new node: never accepted" || gn.Status.Phase != v1alpha1.PhaseAccepting {
		t.Errorf("after the request: reason %q, phase %s; want the new-node reason and Accepting", gn.Spec.AcceptanceReason, gn.Status.Phase)
	}
	if got := taints(t, c, "node-pass"); !slices.Contains(got, v1alpha1.TaintNotAccepted+"=") {
		t.Fatalf("a node waiting for acceptance lost its taint: %v", got)
	}

	answer(t, c, "node-pass", 1, v1alpha1.AcceptancePassed, 8)
	gn = waitGPUNode(t, c, "node-pass", "InService", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService
	})
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonPassed {
		t.Errorf("Accepted condition = %+v, want True/Passed", cond)
	}
	if cond := condition(gn, v1alpha1.ConditionInService); cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonInService {
		t.Errorf("InService condition = %+v, want True/InService", cond)
	}
	if gn.Status.ObservedGeneration != gn.Generation {
		t.Errorf("status.observedGeneration %d, want the raised spec's generation %d", gn.Status.ObservedGeneration, gn.Generation)
	}
	if got := taints(t, c, "node-pass"); len(got) != 0 || len(gn.Status.Holds) != 0 {
		t.Errorf("an accepted node still carries taints %v and holds %v", got, gn.Status.Holds)
	}
}

func TestANodeWithFewerGPUsThanItsClassStaysHeldWithTheReasonAndAnEvent(t *testing.T) {
	c := startController(t)
	createPolicy(t, c, policy("short-fleet", 10, map[string]string{"fleet": "short"}, 8))
	join(t, c, "node-short", 7, map[string]string{"fleet": "short"})
	waitGPUNode(t, c, "node-short", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })

	answer(t, c, "node-short", 1, v1alpha1.AcceptancePassed, 7)
	const want = "gpu-count: 7 GPUs found, 8 expected"
	gn := waitGPUNode(t, c, "node-short", "Accepted=False", func(gn *v1alpha1.GPUNode) bool {
		return condition(gn, v1alpha1.ConditionAccepted).Status == metav1.ConditionFalse
	})
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Reason != v1alpha1.ReasonExpectationNotMet || cond.Message != want {
		t.Errorf("Accepted condition = %+v, want ExpectationNotMet: %q", cond, want)
	}
	if gn.Status.Phase != v1alpha1.PhaseAccepting {
		t.Errorf("phase = %s, want Accepting", gn.Status.Phase)
	}
	if len(gn.Status.Holds) != 1 || gn.Status.Holds[0].Owner != v1alpha1.HoldOwnerAcceptance || gn.Status.Holds[0].Message != want {
		t.Errorf("status holds = %+v, want the acceptance hold with the reason", gn.Status.Holds)
	}
	got := taints(t, c, "node-short")
	if !slices.Contains(got, v1alpha1.TaintNotAccepted+"=") || !slices.Contains(got, v1alpha1.TaintUnschedulable+"=gpu-count-7-GPUs-found-8-expected") {
		t.Errorf("taints = %v, want not-accepted and unschedulable with the reason", got)
	}
	for _, regarding := range []string{"GPUNode", "Node"} {
		waitEvent(t, c, regarding, "node-short", want)
	}
}

func waitEvent(t *testing.T, c client.Client, kind, name, note string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list); err != nil {
			t.Fatalf("listing events: %v", err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Note == note {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Warning event on %s %s with note %q after %s (%d events)", kind, name, note, waitTimeout, len(list.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAPolicyChangeAsksForAcceptanceAgain(t *testing.T) {
	c := startController(t)
	p := policy("change-fleet", 10, map[string]string{"fleet": "change"}, 8)
	createPolicy(t, c, p)
	join(t, c, "node-change", 8, map[string]string{"fleet": "change"})
	waitGPUNode(t, c, "node-change", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })
	answer(t, c, "node-change", 1, v1alpha1.AcceptancePassed, 8)
	waitGPUNode(t, c, "node-change", "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })

	err := retryOnConflict(t.Context(), func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.Classes[0].MinMemoryMiB = 81000
		return c.Update(t.Context(), p)
	})
	if err != nil {
		t.Fatalf("changing the policy: %v", err)
	}
	// The request (spec) and its condition (status) are two writes: wait for both.
	gn := waitGPUNode(t, c, "node-change", "acceptance to be requested again", func(gn *v1alpha1.GPUNode) bool {
		r := condition(gn, v1alpha1.ConditionAcceptanceRequested).Reason
		return gn.Spec.AcceptanceGeneration == 2 && (r == v1alpha1.ReasonPolicyChanged || r == v1alpha1.ReasonPending)
	})
	if want := `policy "change-fleet" changed`; gn.Spec.AcceptanceReason != want {
		t.Errorf("acceptance reason = %q, want %q", gn.Spec.AcceptanceReason, want)
	}
	if cond := condition(gn, v1alpha1.ConditionAcceptanceRequested); cond.Reason != v1alpha1.ReasonPolicyChanged && cond.Reason != v1alpha1.ReasonPending {
		t.Errorf("AcceptanceRequested condition = %+v, want PolicyChanged or Pending", cond)
	}
}

func TestANodeNoPolicySelectsIsAcceptedUnderTheBuiltInDefaultsAndReleased(t *testing.T) {
	c := startController(t)
	join(t, c, "node-orphan", 8, map[string]string{"fleet": "none-selects-this"})
	gn := waitGPUNode(t, c, "node-orphan", "acceptance to be requested under the built-in defaults", func(gn *v1alpha1.GPUNode) bool {
		return gn.Spec.AcceptanceGeneration == 1 && condition(gn, v1alpha1.ConditionPolicySelected).Reason == v1alpha1.ReasonBuiltInDefaults
	})
	cond := condition(gn, v1alpha1.ConditionPolicySelected)
	if cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, `no GPUNodePolicy selects Node "node-orphan": the built-in defaults apply`) {
		t.Errorf("PolicySelected = %+v, want True saying no GPUNodePolicy selects the node and the built-in defaults apply", cond)
	}
	if gn.Spec.AcceptanceReason != "new node: never accepted" {
		t.Errorf("acceptance reason = %q, want the new-node reason", gn.Spec.AcceptanceReason)
	}

	answer(t, c, "node-orphan", 1, v1alpha1.AcceptancePassed, 8)
	gn = waitGPUNode(t, c, "node-orphan", "InService", func(gn *v1alpha1.GPUNode) bool {
		return gn.Status.Phase == v1alpha1.PhaseInService
	})
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "under the built-in defaults") {
		t.Errorf("Accepted = %+v, want True under the built-in defaults", cond)
	}
	if got := taints(t, c, "node-orphan"); len(got) != 0 || len(gn.Status.Holds) != 0 {
		t.Errorf("a node accepted under the built-in defaults still carries taints %v and holds %v", got, gn.Status.Holds)
	}
}

func TestSetupWithManagerRefusesAReconcilerMissingADependency(t *testing.T) {
	cfg, c := testenv.Start(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	rec := mgr.GetEventRecorder(Name)
	tests := []struct {
		name    string
		r       *Reconciler
		missing string
	}{
		{"a reconciler without a client is refused", &Reconciler{Recorder: rec, Clock: clock.RealClock{}}, "no Client"},
		{"a reconciler without a recorder is refused", &Reconciler{Client: c, Clock: clock.RealClock{}}, "no Recorder"},
		{"a reconciler without a clock is refused", &Reconciler{Client: c, Recorder: rec}, "no Clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.SetupWithManager(mgr)
			if err == nil || !strings.Contains(err.Error(), tt.missing) {
				t.Errorf("SetupWithManager = %v, want an error naming %q", err, tt.missing)
			}
		})
	}
}
