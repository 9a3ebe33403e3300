package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/testenv"
)

// askForStep sets spec.remediation as the controller does.
func askForStep(t *testing.T, c client.Client, name string, req v1alpha1.RemediationRequest) {
	t.Helper()
	gn, err := getGPUNode(c, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Spec.Remediation = &req
	if err := c.Patch(context.Background(), gn, patch, client.FieldOwner(v1alpha1.FieldManagerRemediation)); err != nil {
		t.Fatal(err)
	}
}

// answerTo waits for status.remediationAnswer to answer id.
func answerTo(t *testing.T, c client.Client, name string, id int64) *v1alpha1.RemediationAnswer {
	t.Helper()
	var ans *v1alpha1.RemediationAnswer
	eventually(t, fmt.Sprintf("status.remediationAnswer answers request %d", id), func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if ans = gn.Status.RemediationAnswer; ans == nil || ans.ID < id {
			return fmt.Errorf("remediationAnswer is %+v", ans)
		}
		return nil
	})
	return ans
}

// gpuHealth is GPU index's health in the published status; an error until it is there.
func gpuHealth(c client.Client, name string, index int32) (v1alpha1.GPUHealth, error) {
	gn, err := getGPUNode(c, name)
	if err != nil {
		return v1alpha1.GPUHealth{}, err
	}
	for _, g := range gn.Status.GPUHealth {
		if g.Index == index {
			return g, nil
		}
	}
	return v1alpha1.GPUHealth{}, fmt.Errorf("no GPU %d in the status yet", index)
}

// healthIs waits for GPU index to have health h, and returns its UUID.
func healthIs(t *testing.T, c client.Client, name string, index int32, h v1alpha1.Health) string {
	t.Helper()
	var g v1alpha1.GPUHealth
	eventually(t, fmt.Sprintf("GPU %d is %s", index, h), func() error {
		var err error
		if g, err = gpuHealth(c, name, index); err == nil && g.Health != h {
			err = fmt.Errorf("GPU %d: %+v", index, g)
		}
		return err
	})
	return g.UUID
}

// remediationAgent is a simulated agent with recovery steps, evidence and a journal.
func remediationAgent(t *testing.T, c client.Client) (string, agent.Config, *sim.Backend) {
	t.Helper()
	name := newNode(t, c, nil)
	cfg, b := simConfig(t, c, name)
	cfg.Steps = recovery.Sim{Backend: b.Backend}
	cfg.Journal = agent.FileJournal{Path: filepath.Join(t.TempDir(), "step.json")}
	cfg.Evidence = func(_ context.Context, req v1alpha1.RemediationRequest, findings []health.Finding) (*v1alpha1.EvidenceSummary, error) {
		return &v1alpha1.EvidenceSummary{SHA256: strings.Repeat("ab", 32), Path: "/var/lib/gpunode/evidence/x.tar.gz",
			SizeBytes: int64(len(findings)), Created: metav1.Now(), Trigger: req.Reason}, nil
	}
	return name, cfg, b.Backend
}

func TestAGPUResetClearsAnXID95AndTheGPUPassesItsCheck(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	healthIs(t, c, name, 3, v1alpha1.HealthHealthy)
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95}); err != nil {
		t.Fatal(err)
	}
	uuid := healthIs(t, c, name, 3, v1alpha1.HealthUnhealthy)

	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepCaptureEvidence, GPUs: []string{uuid}, Reason: "gpu 3: xid-95"})
	ans := answerTo(t, c, name, 1)
	if ans.Outcome != v1alpha1.OutcomeSucceeded || ans.Evidence == nil || ans.Evidence.SizeBytes == 0 {
		t.Fatalf("evidence answer = %+v, want Succeeded with a bundle counting the findings", ans)
	}

	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	ans = answerTo(t, c, name, 2)
	if ans.Outcome != v1alpha1.OutcomeSucceeded || !strings.Contains(ans.Message, "1 healthy, 0 still unhealthy") {
		t.Fatalf("reset answer = %+v, want Succeeded with the GPU's check passed", ans)
	}
	healthIs(t, c, name, 3, v1alpha1.HealthHealthy)
}

func TestAGPUResetDoesNotClearAFaultThatNeedsAReboot(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	healthIs(t, c, name, 2, v1alpha1.HealthHealthy)
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 2, XID: 79}); err != nil {
		t.Fatal(err)
	}
	uuid := healthIs(t, c, name, 2, v1alpha1.HealthUnhealthy)
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	if ans := answerTo(t, c, name, 1); ans.Outcome != v1alpha1.OutcomeSucceeded || !strings.Contains(ans.Message, "0 healthy, 1 still unhealthy") {
		t.Fatalf("reset answer = %+v, want the GPU still unhealthy (xid 79 needs a reboot)", ans)
	}
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepRebootNode})
	if ans := answerTo(t, c, name, 2); ans.Outcome != v1alpha1.OutcomeSucceeded || !strings.Contains(ans.Message, "8 healthy, 0 still unhealthy") {
		t.Fatalf("reboot answer = %+v, want every GPU healthy", ans)
	}
	healthIs(t, c, name, 2, v1alpha1.HealthHealthy)
}

func TestAGPUResetIsRefusedWhileAProcessUsesTheGPU(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	uuid := healthIs(t, c, name, 1, v1alpha1.HealthHealthy)
	b.SetProcesses(uuid, []gpu.Process{{PID: 777, Kind: "compute"}})
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 5, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	ans := answerTo(t, c, name, 5)
	if ans.Outcome != v1alpha1.OutcomeRefused || !strings.Contains(ans.Message, "777") {
		t.Fatalf("answer = %+v, want Refused naming process 777", ans)
	}
}

func TestARebootIsAnsweredWithTheNewBootIDAndAStartedStepIsNeverRepeated(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
	before := b.BootID()
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepRebootNode})
	ans := answerTo(t, c, name, 1)
	if ans.Outcome != v1alpha1.OutcomeSucceeded || ans.BootID == before || ans.BootID != b.BootID() {
		t.Fatalf("reboot answer = %+v (boot before %s), want Succeeded with the new boot ID", ans, before)
	}

	// A step recorded in the journal by an agent that died mid-step is not started again.
	// The agent forgets the reboot's entry on a pass after its answer is published; the
	// planted entry must come after that, or the agent clears it as the reboot's.
	j := cfg.Journal.(agent.FileJournal)
	journalEmpty := func() error {
		if e, ok, err := j.Load(); err != nil || ok {
			return fmt.Errorf("journal holds %+v (err %w)", e, err)
		}
		return nil
	}
	eventually(t, "the journal forgets the reboot once its answer is published", journalEmpty)
	if err := j.Save(agent.JournalEntry{ID: 2, Step: v1alpha1.StepResetGPU, GPUs: []string{"GPU-x"}, BootID: b.BootID(), Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	resets := len(b.KernelLog())
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepResetGPU, GPUs: []string{"GPU-x"}})
	ans = answerTo(t, c, name, 2)
	if ans.Outcome != v1alpha1.OutcomeFailed || !strings.Contains(ans.Message, "not started again") {
		t.Fatalf("answer = %+v, want Failed: not started again", ans)
	}
	if got := len(b.KernelLog()); got != resets {
		t.Errorf("kernel log grew from %d to %d lines: a reset ran again", resets, got)
	}
	eventually(t, "the journal forgets the step once its answer is published", journalEmpty)
}

func TestAnAgentWithoutStepsRefusesEveryRequest(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, _ := simConfig(t, c, name)
	start(t, cfg)
	eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepRebootNode})
	if ans := answerTo(t, c, name, 1); ans.Outcome != v1alpha1.OutcomeRefused {
		t.Fatalf("answer = %+v, want Refused", ans)
	}
}

// recordCheck returns the check id of node's AcceptanceRecord for generation gen.
func recordCheck(t *testing.T, c client.Client, node string, gen int64, id string) v1alpha1.Check {
	t.Helper()
	for _, r := range recordsOf(t, c, node) {
		if r.Spec.AcceptanceGeneration != gen {
			continue
		}
		for _, ch := range r.Spec.Checks {
			if ch.ID == id {
				return ch
			}
		}
	}
	t.Fatalf("no check %s in the record of generation %d", id, gen)
	return v1alpha1.Check{}
}

func TestAcceptanceAfterAResetDoesNotCountTheXIDTheResetClearedButCountsANewOne(t *testing.T) {
	_, c := testenv.Start(t)
	name, cfg, b := remediationAgent(t, c)
	start(t, cfg)
	healthIs(t, c, name, 5, v1alpha1.HealthHealthy)
	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 5, XID: 95}); err != nil {
		t.Fatal(err)
	}
	uuid := healthIs(t, c, name, 5, v1alpha1.HealthUnhealthy)

	askForAcceptance(t, c, name, 1)
	if last := acceptedAt(t, c, name, 1); last.Result != v1alpha1.AcceptanceFailed {
		t.Fatalf("acceptance before the reset = %s, want failed (xid 95 since boot)", last.Result)
	}
	askForStep(t, c, name, v1alpha1.RemediationRequest{ID: 1, Step: v1alpha1.StepResetGPU, GPUs: []string{uuid}})
	answerTo(t, c, name, 1)
	askForAcceptance(t, c, name, 2)
	if last := acceptedAt(t, c, name, 2); last.Result != v1alpha1.AcceptancePassed {
		t.Fatalf("acceptance after the reset = %s, want passed", last.Result)
	}
	ch := recordCheck(t, c, name, 2, "hardware.xid-since-boot")
	if ch.Status != "pass" || !strings.Contains(ch.Message, "1 cleared by a recovery step") || !strings.Contains(strings.Join(ch.Evidence, "\n"), "cleared by gpu-reset at") {
		t.Errorf("xid check after the reset = %+v, want a pass that reports the cleared XID", ch)
	}

	if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 5, XID: 95}); err != nil { // the same line again: a new fault
		t.Fatal(err)
	}
	healthIs(t, c, name, 5, v1alpha1.HealthUnhealthy)
	askForAcceptance(t, c, name, 3)
	if last := acceptedAt(t, c, name, 3); last.Result != v1alpha1.AcceptanceFailed {
		t.Fatalf("acceptance after the XID came back = %s, want failed", last.Result)
	}
}
