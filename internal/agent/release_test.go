package agent_test

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/testenv"
)

// askForAcceptanceBecause raises spec.acceptanceGeneration with a reason, as the
// controller does (a release from Maintenance gives AcceptanceReasonReleased).
func askForAcceptanceBecause(t *testing.T, c client.Client, name string, gen int64, reason string) {
	t.Helper()
	gn, err := getGPUNode(c, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Spec.AcceptanceGeneration, gn.Spec.AcceptanceReason = gen, reason
	if err := c.Patch(context.Background(), gn, patch, client.FieldOwner(v1alpha1.FieldManagerAcceptance)); err != nil {
		t.Fatal(err)
	}
}

// publishedWith waits for the acceptance of gen and returns GPU index's health as
// published in the same status.
func publishedWith(t *testing.T, c client.Client, name string, gen int64, index int32) (*v1alpha1.AcceptanceSummary, v1alpha1.GPUHealth) {
	t.Helper()
	last := acceptedAt(t, c, name, gen)
	g, err := gpuHealth(c, name, index)
	if err != nil {
		t.Fatal(err)
	}
	return last, g
}

func TestAReleasedGPUThatWasServicedIsHealthyAgainOnlyAfterAPassingAcceptance(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	healthIs(t, c, name, 6, v1alpha1.HealthHealthy)
	// XID 61 goes to the vendor (action service); a person repairs the GPU and the node
	// boots again, so the kernel log no longer holds it.
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 6, XID: 61}); err != nil {
		t.Fatal(err)
	}
	healthIs(t, c, name, 6, v1alpha1.HealthUnhealthy)
	if err := b.Reboot(); err != nil {
		t.Fatal(err)
	}

	// An acceptance that is not a release passes but clears nothing: only a person may say
	// that a GPU needing service was serviced.
	askForAcceptanceBecause(t, c, name, 1, "new node")
	last, g := publishedWith(t, c, name, 1, 6)
	if last.Result != v1alpha1.AcceptancePassed || g.Health != v1alpha1.HealthUnhealthy || g.Action != "service" {
		t.Fatalf("after an ordinary acceptance (%s): GPU 6 %+v, want still unhealthy needing service", last.Result, g)
	}

	askForAcceptanceBecause(t, c, name, 2, v1alpha1.AcceptanceReasonReleased)
	last, g = publishedWith(t, c, name, 2, 6)
	if last.Result != v1alpha1.AcceptancePassed || g.Health != v1alpha1.HealthHealthy || g.Action != "none" || len(g.Causes) != 0 {
		t.Fatalf("after the release's acceptance (%s): GPU 6 %+v, want healthy in the same status write", last.Result, g)
	}
}

func TestAReleasedGPUWhoseRowRemapFailurePersistsStaysUnhealthyAfterAFailingAcceptance(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	healthIs(t, c, name, 1, v1alpha1.HealthHealthy)
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 1, XID: 64}); err != nil {
		t.Fatal(err)
	}
	healthIs(t, c, name, 1, v1alpha1.HealthUnhealthy)

	// Released without the board being replaced: the row-remap failure is still there.
	askForAcceptanceBecause(t, c, name, 1, v1alpha1.AcceptanceReasonReleased)
	last, g := publishedWith(t, c, name, 1, 1)
	if last.Result != v1alpha1.AcceptanceFailed {
		t.Fatalf("acceptance = %s, want failed (row-remap failure)", last.Result)
	}
	if g.Health != v1alpha1.HealthUnhealthy || g.Action != "service" || g.AwaitingCheck {
		t.Fatalf("GPU 1 = %+v, want unhealthy needing service and no longer awaiting a check", g)
	}
	// The healthy GPUs stay healthy: a failing run fails only the serviced ones.
	if h, err := gpuHealth(c, name, 0); err != nil || h.Health != v1alpha1.HealthHealthy {
		t.Fatalf("GPU 0 = %+v (%v), want healthy", h, err)
	}
	// The cause says why: the fault itself, or the failed acceptance when the monitor had
	// not seen the fault again before the run ended.
	if !slices.Contains(g.Causes, "row-remap-failure") && !slices.Contains(g.Causes, "check-failed/acceptance") {
		t.Errorf("GPU 1 causes %v name neither the fault nor the failed acceptance", g.Causes)
	}
}
