package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

// runManager runs the Reconciler in a real manager (watches, cache, ClientOptions) until
// the test ends.
func runManager(t testing.TB) {
	t.Helper()
	cfg, _ := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Client: ClientOptions(), Logger: logr.Discard(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(Name), Clock: clock.RealClock{}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestThroughAManagerAHoldReleasedInThePoolAdmitsTheNodeThatWaitedForBudgetAndALostHoldComesBack(t *testing.T) {
	one := intstrOf(1)
	a := newHarness(t, "rem-mgr-a", 1, v1alpha1.RemediationPolicy{Budget: &v1alpha1.BudgetPolicy{MaxUnavailable: &one}})
	b := a.sibling("rem-mgr-b", 1)
	ops := nodeops.Ops{Client: a.c}
	if err := ops.Hold(t.Context(), a.name, v1alpha1.HoldOwnerOperator, "kernel upgrade"); err != nil {
		t.Fatal(err)
	}
	runManager(t)

	b.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	waitFor(t, "the faulty node waits for the budget the operator's hold spends", func() bool {
		return b.state().Phase == remediation.PhaseSuspect
	})
	time.Sleep(500 * time.Millisecond) // nothing but a released hold may admit it now
	if b.held() {
		t.Fatal("the faulty node was held beyond the pool's budget of one")
	}

	if err := ops.Release(t.Context(), a.name, v1alpha1.HoldOwnerOperator); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiting node is held once the operator's hold is released", b.held)
	waitFor(t, "the admitted node's agent is asked for evidence", func() bool {
		r := b.get().Spec.Remediation
		return r != nil && r.Step == v1alpha1.StepCaptureEvidence
	})

	if err := ops.Release(t.Context(), b.name, v1alpha1.HoldOwnerRemediation); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "remediation's hold, removed by someone else, comes back", b.held)
}
