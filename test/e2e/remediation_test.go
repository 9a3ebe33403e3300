package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// XID 95 (uncontained ECC error) on a running node: the node is held, the agent writes an
// evidence bundle, resets the GPU once, acceptance passes, and the hold is released with
// the reset in status.remediation.history; the other node of the pool is never touched.
func TestAnXID95IsCapturedResetAcceptedAndReleasedWithItsHistoryRecorded(t *testing.T) {
	f := newRemFleet(t, "rem-xid95", 2, v1alpha1.RemediationPolicy{})
	f.startControllers()
	f.inService(time.Minute)
	n, other := f.nodes[0], f.nodes[1]
	uuid := n.uuid(t, 3)

	n.inject(t, 3, 95)
	var steps []v1alpha1.RemediationStep
	var bundle *v1alpha1.EvidenceSummary
	f.eventually(30*time.Second, "the node held, reset, accepted and released", func() error {
		if f.heldByRemediation(other.name) {
			t.Fatalf("node %s, which has no fault, is held by remediation", other.name)
		}
		gn := f.gpuNode(n.name)
		if gn == nil {
			return fmt.Errorf("no GPUNode %s", n.name)
		}
		if r := gn.Spec.Remediation; r != nil && (len(steps) == 0 || steps[len(steps)-1] != r.Step) {
			steps = append(steps, r.Step)
			if !slices.Equal(r.GPUs, []string{uuid}) {
				t.Fatalf("%s was asked for GPUs %v, want only GPU 3 (%s)", r.Step, r.GPUs, uuid)
			}
		}
		if st := gn.Status.Remediation; st != nil && st.Evidence != nil {
			bundle = st.Evidence.DeepCopy()
		}
		if st := gn.Status.Remediation; st == nil || len(st.History) == 0 || st.Current != nil {
			return fmt.Errorf("no finished step in status.remediation yet: %+v", gn.Status.Remediation)
		}
		return f.nodeInService(n.name)
	})

	if got := n.steps.resets.Load(); got != 1 {
		t.Errorf("the agent reset %d GPUs, want exactly 1", got)
	}
	if got := n.steps.reboots.Load(); got != 0 {
		t.Errorf("the agent rebooted %d times for a fault a reset clears", got)
	}
	if want := []v1alpha1.RemediationStep{v1alpha1.StepCaptureEvidence, v1alpha1.StepResetGPU}; !slices.Equal(steps, want) {
		t.Errorf("the agent was asked for %v, want %v", steps, want)
	}
	gn := f.gpuNode(n.name)
	h := gn.Status.Remediation.History
	if len(h) != 1 || h[0].Step != v1alpha1.StepResetGPU || h[0].Outcome != v1alpha1.OutcomeSucceeded || h[0].Finished == nil {
		t.Errorf("status.remediation.history = %+v, want one finished, successful reset-gpu", h)
	}
	if bundle == nil {
		t.Fatal("status.remediation never showed the evidence bundle")
	}
	entries, err := (&evidence.Store{Dir: n.evidence}).List()
	if err != nil || len(entries) != 1 || entries[0].SHA256 != bundle.SHA256 {
		t.Fatalf("evidence folder: %+v, %v; want the one bundle %s that status names", entries, err, bundle.SHA256)
	}
	sum, err := evidence.Verify(filepath.Join(n.evidence, entries[0].Name))
	if err != nil || sum.SHA256 != bundle.SHA256 {
		t.Fatalf("the bundle does not verify: %+v, %v", sum, err)
	}
	t.Logf("xid 95 on %s: steps %v, evidence %s (%d bytes), history %s %s", n.name, steps, bundle.SHA256[:12], bundle.SizeBytes, h[0].Step, h[0].Outcome)
}

// A fault that returns right after every step (XID 95 again as each step completes, before
// the agent answers) climbs the ladder once, reset-gpu then reboot-node, and ends in
// Maintenance, still held; it does not loop: no request and no step follows for two
// seconds. A person's release without service is judged by acceptance and fails.
func TestAFaultThatReturnsAfterEveryStepEndsInMaintenanceNotALoop(t *testing.T) {
	f := newRemFleet(t, "rem-returns", 2, v1alpha1.RemediationPolicy{})
	f.startControllers()
	f.inService(time.Minute)
	n := f.nodes[0]
	// The fault comes back once the step is over as the agent sees it: when its answer is
	// published. Injected from inside the step, it would be among the XIDs the step covered.
	ctx := t.Context()
	n.steps.afterEveryStep(func() {
		gn := f.gpuNode(n.name)
		if gn == nil || gn.Spec.Remediation == nil {
			t.Errorf("a step ran with no request on the GPUNode")
			return
		}
		go injectWhenAnswered(ctx, f, n, gn.Spec.Remediation.ID, sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95})
	})
	n.inject(t, 3, 95)
	f.eventually(time.Minute, "the node in Maintenance, held by remediation", func() error {
		gn := f.gpuNode(n.name)
		if gn == nil || gn.Status.Phase != v1alpha1.PhaseMaintenance || !f.heldByRemediation(n.name) {
			return fmt.Errorf("not yet in Maintenance: %+v", gn.Status.Remediation)
		}
		return nil
	})
	before := f.gpuNode(n.name)
	resets, reboots := n.steps.resets.Load(), n.steps.reboots.Load()
	time.Sleep(2 * time.Second)
	after := f.gpuNode(n.name)
	if after.Spec.Remediation.ID != before.Spec.Remediation.ID || n.steps.resets.Load() != resets || n.steps.reboots.Load() != reboots {
		t.Fatalf("the node in Maintenance was asked for more: request %d -> %d, resets %d -> %d, reboots %d -> %d",
			before.Spec.Remediation.ID, after.Spec.Remediation.ID, resets, n.steps.resets.Load(), reboots, n.steps.reboots.Load())
	}
	if resets != 1 || reboots != 1 {
		t.Errorf("the ladder ran %d resets and %d reboots, want one of each", resets, reboots)
	}
	if after.Status.Phase != v1alpha1.PhaseMaintenance || !f.heldByRemediation(n.name) {
		t.Fatalf("the node left Maintenance on its own: phase %s", after.Status.Phase)
	}
	var steps []string
	for _, a := range after.Status.Remediation.History {
		steps = append(steps, string(a.Step)+"="+string(a.Outcome))
	}
	if !slices.Equal(steps, []string{"reset-gpu=Succeeded", "reboot-node=Succeeded"}) {
		t.Errorf("history %v, want the reset and the reboot, each run once", steps)
	}
	t.Logf("fault returning after every step: %v, then Maintenance: %s", steps, after.Status.Remediation.Waiting)

	// A release without service: the acceptance asked for as released fails (the GPU's
	// aggregate ECC counters persist, as on real hardware), and the node goes back to
	// Maintenance, held, with no step run.
	n.steps.afterEveryStep(nil)
	f.release(n.name)
	f.eventually(time.Minute, "the release judged and the node back in Maintenance", func() error {
		gn := f.gpuNode(n.name)
		if gn.Spec.AcceptanceReason != v1alpha1.AcceptanceReasonReleased || gn.Status.LastAcceptance == nil ||
			gn.Status.LastAcceptance.Generation < gn.Spec.AcceptanceGeneration || gn.Status.Phase != v1alpha1.PhaseMaintenance {
			return fmt.Errorf("not judged yet: %s", f.describe(n.name))
		}
		return nil
	})
	if !f.heldByRemediation(n.name) || n.steps.resets.Load() != 1 || n.steps.reboots.Load() != 1 {
		t.Fatalf("after a failed release: %s; resets %d, reboots %d", f.describe(n.name), n.steps.resets.Load(), n.steps.reboots.Load())
	}
}

// XID 79 in a pool that allows no reboot goes straight to Maintenance (evidence captured);
// a person power-cycles the machine at the console and releases it: the agent counts the
// GPUs as serviced, the acceptance asked for as released passes, and the node is back in
// service without the agent having run any step.
func TestANodeAPersonServicedAndReleasedGoesBackIntoService(t *testing.T) {
	f := newRemFleet(t, "rem-serviced", 2, v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
		{Step: v1alpha1.StepRebootNode, Disabled: true}}})
	f.startControllers()
	f.inService(time.Minute)
	n := f.nodes[0]
	n.inject(t, 4, 79)
	var maintenance string
	f.eventually(time.Minute, "the node in Maintenance with its evidence", func() error {
		gn := f.gpuNode(n.name)
		if gn.Status.Phase != v1alpha1.PhaseMaintenance || gn.Status.Remediation == nil || gn.Status.Remediation.Evidence == nil {
			return fmt.Errorf("not yet: %s", f.describe(n.name))
		}
		maintenance = gn.Status.Remediation.Waiting
		return nil
	})
	t.Logf("in maintenance: %s", maintenance)
	if err := n.backend.Reboot(); err != nil { // the person's power cycle, not the agent's step
		t.Fatal(err)
	}
	f.release(n.name)
	f.eventually(time.Minute, "the released node back in service", func() error { return f.nodeInService(n.name) })
	if gn := f.gpuNode(n.name); gn.Spec.AcceptanceReason != v1alpha1.AcceptanceReasonReleased {
		t.Errorf("the acceptance after the release was asked for as %q, want %q", gn.Spec.AcceptanceReason, v1alpha1.AcceptanceReasonReleased)
	}
	if n.steps.resets.Load() != 0 || n.steps.reboots.Load() != 0 {
		t.Errorf("the agent ran steps in a pool that allows none for the fault: %d resets, %d reboots", n.steps.resets.Load(), n.steps.reboots.Load())
	}
	t.Logf("serviced and released: %s", f.describe(n.name))
}

// release sets the gpunode.dev/release annotation as `gpunode release` does (a second
// ahead, so that it is later than the maintenance, which the API keeps to the second).
func (f *remFleet) release(name string) {
	f.t.Helper()
	at := time.Now().Add(time.Second).UTC().Format(time.RFC3339)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the agent's heartbeat may write meanwhile
		gn := f.gpuNode(name)
		if gn.Annotations == nil {
			gn.Annotations = map[string]string{}
		}
		gn.Annotations[v1alpha1.AnnotationRelease] = at
		return f.c.Update(f.t.Context(), gn)
	})
	if err != nil {
		f.t.Fatalf("releasing %s: %v", name, err)
	}
}

// A controller killed after it asked for a reset, before the agent answered (the reset is
// held at a gate inside the agent's step), is replaced by a new one that resumes from the
// GPUNode: the reset runs exactly once, under the first request, and the node is accepted
// and released.
func TestAControllerKilledMidStepResumesWithoutASecondReset(t *testing.T) {
	f := newRemFleet(t, "rem-crash", 2, v1alpha1.RemediationPolicy{})
	stop := f.startControllers()
	f.inService(time.Minute)
	n := f.nodes[0]
	entered := n.steps.hold()
	n.inject(t, 2, 95)
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the agent was never asked for the reset")
	}
	asked := f.gpuNode(n.name).Spec.Remediation
	if asked == nil || asked.Step != v1alpha1.StepResetGPU {
		t.Fatalf("the agent is resetting but the request is %+v", asked)
	}
	stop() // the controller dies mid-step
	f.startControllers()
	time.Sleep(time.Second) // the new controller reads every GPUNode before the answer comes
	n.steps.open()

	f.eventually(time.Minute, "the node accepted and released by the new controller", func() error { return f.nodeInService(n.name) })
	if got := n.steps.resets.Load(); got != 1 {
		t.Fatalf("the GPU was reset %d times, want exactly once", got)
	}
	gn := f.gpuNode(n.name)
	if gn.Spec.Remediation.ID != asked.ID || gn.Spec.Remediation.Step != v1alpha1.StepResetGPU {
		t.Errorf("the last request is %+v, want the first controller's reset %d", gn.Spec.Remediation, asked.ID)
	}
	h := gn.Status.Remediation.History
	if len(h) != 1 || h[0].RequestID != asked.ID || h[0].Outcome != v1alpha1.OutcomeSucceeded {
		t.Errorf("history %+v, want the one reset %d, succeeded", h, asked.ID)
	}
}

// injectWhenAnswered injects fault into n once the agent has published its answer to request
// id (errors go to the test while it runs).
func injectWhenAnswered(ctx context.Context, f *remFleet, n *remNode, id int64, fault sim.Fault) {
	for ctx.Err() == nil {
		if gn := f.gpuNode(n.name); gn != nil && gn.Status.RemediationAnswer != nil && gn.Status.RemediationAnswer.ID >= id {
			if err := n.backend.Inject(fault); err != nil && ctx.Err() == nil {
				f.t.Errorf("injecting the fault again: %v", err)
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
