package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/recovery"
)

// Steps carries out the agent's destructive remediation steps on its node:
// recovery.Host on a real node, recovery.Sim on a simulated one (recovery.Steps documents
// each step).
type Steps = recovery.Steps

// EvidenceWriter writes an evidence bundle for a request (before any destructive step)
// with the findings the agent's monitor holds, and returns its summary.
type EvidenceWriter func(ctx context.Context, req v1alpha1.RemediationRequest, findings []health.Finding) (*v1alpha1.EvidenceSummary, error)

// Journal keeps the step in flight across agent restarts: a step is recorded before it
// starts, so a restarted agent never starts it again (it answers from what it finds).
type Journal interface {
	// Load returns the step in flight; ok is false when none is recorded.
	Load() (j JournalEntry, ok bool, err error)
	// Save records the step in flight atomically; Clear forgets it.
	Save(j JournalEntry) error
	Clear() error
}

// JournalEntry is a step in flight, from before it starts until its answer is published.
type JournalEntry struct {
	ID      int64                    `json:"id"`
	Step    v1alpha1.RemediationStep `json:"step"`
	GPUs    []string                 `json:"gpus,omitempty"`
	BootID  string                   `json:"bootID"`
	Started time.Time                `json:"started"`
	// Done is set once the step itself succeeded, with the XIDs it covered (Cleared): a
	// restarted agent then records the recovery and checks the GPUs, and does not run the
	// step again.
	Done    bool          `json:"done,omitempty"`
	Cleared []ClearedLine `json:"cleared,omitempty"`
	// Answer is set once the step is answered: a restarted agent publishes it as it is.
	Answer *v1alpha1.RemediationAnswer `json:"answer,omitempty"`
}

// remediate answers the controller's remediation request when it has not been answered:
// it carries out the step, then keeps the answer until it is published.
func (a *Agent) remediate(ctx context.Context, gn *v1alpha1.GPUNode) {
	req := gn.Spec.Remediation
	if req == nil || a.answered(gn) >= req.ID {
		return
	}
	ans := a.carryOut(ctx, *req)
	if ans == nil {
		return // in flight: answered after the reboot
	}
	a.answer = ans
	a.cfg.Log.Info("remediation step answered", "node", a.cfg.NodeName, "id", ans.ID, "step", ans.Step,
		"outcome", ans.Outcome, "message", ans.Message)
}

// answered is the highest request ID answered, by this agent or a previous one.
func (a *Agent) answered(gn *v1alpha1.GPUNode) int64 {
	n := int64(0)
	if gn.Status.RemediationAnswer != nil {
		n = gn.Status.RemediationAnswer.ID
	}
	if a.answer != nil && a.answer.ID > n {
		n = a.answer.ID
	}
	return n
}

// carryOut runs one step and returns its answer; nil while the node is rebooting. With a
// journal, the step is recorded before it starts, marked done (with the XIDs it covered)
// as soon as it succeeded, and answered in the journal before the answer is published: an
// agent restarted at any point neither runs the step again nor loses what it did.
func (a *Agent) carryOut(ctx context.Context, req v1alpha1.RemediationRequest) *v1alpha1.RemediationAnswer {
	now := a.cfg.Clock()
	ans := &v1alpha1.RemediationAnswer{ID: req.ID, Step: req.Step, Started: metav1.NewTime(now.UTC().Truncate(time.Second))}
	entry := &JournalEntry{ID: req.ID, Step: req.Step, GPUs: req.GPUs, Started: now}
	finish := func(o v1alpha1.StepOutcome, msg string) *v1alpha1.RemediationAnswer {
		ans.Outcome, ans.Message = o, truncate(msg, 1024)
		ans.Finished = metav1.NewTime(a.cfg.Clock().UTC().Truncate(time.Second))
		if a.cfg.Steps != nil {
			ans.BootID, _ = a.cfg.Steps.BootID(ctx)
		}
		a.journalAnswer(entry, ans)
		return ans
	}
	if a.cfg.Steps == nil {
		return finish(v1alpha1.OutcomeRefused, "remediation steps are not enabled on this agent")
	}
	boot, err := a.cfg.Steps.BootID(ctx)
	if err != nil {
		return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("reading the boot ID: %v", err))
	}
	entry.BootID = boot
	if a.cfg.Journal != nil {
		j, ok, err := a.cfg.Journal.Load()
		switch {
		case err != nil:
			return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("reading the remediation journal: %v", err))
		case ok && j.ID == req.ID && j.Answer != nil:
			a.journaled = j.ID
			return j.Answer.DeepCopy() // answered before a restart; not published yet
		case ok && j.ID == req.ID:
			*entry = j
			ans.Started = metav1.NewTime(j.Started.UTC().Truncate(time.Second))
			return a.resume(ctx, j, boot, finish)
		}
		if err := a.cfg.Journal.Save(*entry); err != nil {
			return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("recording the step before starting it: %v", err))
		}
	}
	pre, _ := a.cfg.Backend.Snapshot(ctx) // what the GPU check compares counters with
	switch req.Step {
	case v1alpha1.StepCaptureEvidence:
		if a.cfg.Evidence == nil {
			return finish(v1alpha1.OutcomeRefused, "evidence capture is not enabled on this agent")
		}
		sum, err := a.cfg.Evidence(ctx, req, a.mon.Findings())
		if err != nil {
			return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("capturing evidence: %v", err))
		}
		ans.Evidence = sum
		return finish(v1alpha1.OutcomeSucceeded, fmt.Sprintf("evidence bundle %s (%d bytes)", sum.Path, sum.SizeBytes))
	case v1alpha1.StepResetGPU:
		return a.resetGPUs(ctx, entry, pre, finish)
	case v1alpha1.StepRebootNode, v1alpha1.StepPowerCycle:
		run := a.cfg.Steps.RebootNode
		if req.Step == v1alpha1.StepPowerCycle {
			run = a.cfg.Steps.PowerCycle
		}
		done, err := run(ctx)
		switch {
		case err != nil:
			return finish(outcomeOf(err), fmt.Sprintf("%s: %v", req.Step, err))
		case !done:
			a.cfg.Log.Info("node going down for remediation; answering after the boot", "node", a.cfg.NodeName, "step", req.Step)
			return nil
		}
		note := a.recovered(ctx, nil, health.RecoveryNodeReboot, nil)
		return finish(v1alpha1.OutcomeSucceeded, fmt.Sprintf("%s done; GPU checks: %s%s", req.Step, a.checkGPUs(ctx, pre, nil), note))
	}
	return finish(v1alpha1.OutcomeRefused, fmt.Sprintf("step %q is not the agent's", req.Step))
}

// resume answers a step a previous agent process started: a reboot or power cycle
// succeeded when the boot ID changed; a step marked done is recorded and checked; anything
// else is never started again, and fails.
func (a *Agent) resume(ctx context.Context, j JournalEntry, boot string,
	finish func(v1alpha1.StepOutcome, string) *v1alpha1.RemediationAnswer) *v1alpha1.RemediationAnswer {
	a.cfg.Log.Info("answering a step a previous agent process started", "node", a.cfg.NodeName, "id", j.ID, "step", j.Step, "done", j.Done)
	switch {
	case (j.Step == v1alpha1.StepRebootNode || j.Step == v1alpha1.StepPowerCycle) && boot != j.BootID:
		note := a.recovered(ctx, nil, health.RecoveryNodeReboot, nil)
		return finish(v1alpha1.OutcomeSucceeded, fmt.Sprintf("%s done (boot %s -> %s); GPU checks: %s%s", j.Step, j.BootID, boot, a.checkGPUs(ctx, nil, nil), note))
	case j.Step == v1alpha1.StepRebootNode || j.Step == v1alpha1.StepPowerCycle:
		return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("%s was started but the node did not reboot (boot ID unchanged)", j.Step))
	case j.Step == v1alpha1.StepResetGPU && j.Done && boot == j.BootID:
		note := a.recovered(ctx, j.GPUs, health.RecoveryGPUReset, j.Cleared)
		return finish(v1alpha1.OutcomeSucceeded, fmt.Sprintf("reset %d GPU(s) before the agent restarted; GPU checks: %s%s", len(j.GPUs), a.checkGPUs(ctx, nil, j.GPUs), note))
	}
	return finish(v1alpha1.OutcomeFailed, fmt.Sprintf("the agent restarted while %s ran; it is not started again", j.Step))
}

// resetGPUs resets each GPU in turn; the first refusal or failure ends the step.
func (a *Agent) resetGPUs(ctx context.Context, entry *JournalEntry, pre *gpu.Snapshot,
	finish func(v1alpha1.StepOutcome, string) *v1alpha1.RemediationAnswer) *v1alpha1.RemediationAnswer {
	uuids := entry.GPUs
	if len(uuids) == 0 {
		return finish(v1alpha1.OutcomeRefused, "reset-gpu names no GPU")
	}
	for _, u := range uuids {
		if err := a.cfg.Steps.ResetGPU(ctx, u); err != nil {
			return finish(outcomeOf(err), fmt.Sprintf("reset of GPU %s: %v", u, err))
		}
	}
	lines, note := a.stepDone(ctx, entry, uuids, health.RecoveryGPUReset)
	note += a.recovered(ctx, uuids, health.RecoveryGPUReset, lines)
	return finish(v1alpha1.OutcomeSucceeded, fmt.Sprintf("reset %d GPU(s); GPU checks: %s%s", len(uuids), a.checkGPUs(ctx, pre, uuids), note))
}

// stepDone reads which XIDs the step that just succeeded covered and marks the step done
// with them in the journal; it returns them and a note for the answer when that failed.
func (a *Agent) stepDone(ctx context.Context, entry *JournalEntry, uuids []string, kind health.RecoveryKind) ([]ClearedLine, string) {
	note := ""
	lines, err := a.coveredBy(ctx, uuids, kind)
	if err != nil {
		a.cfg.Log.Warn("reading the XIDs a recovery covered failed; they will be judged", "node", a.cfg.NodeName, "err", err)
		note = fmt.Sprintf("; %v", err)
	}
	if a.cfg.Journal == nil {
		return lines, note
	}
	entry.Done, entry.Cleared = true, lines
	if err := a.cfg.Journal.Save(*entry); err != nil {
		a.cfg.Log.Warn("marking the step done in the remediation journal failed", "node", a.cfg.NodeName, "err", err)
		note += fmt.Sprintf("; marking the step done: %v", err)
	}
	return lines, note
}

// journalAnswer keeps the answer in the journal until it is published (answerPublished).
func (a *Agent) journalAnswer(entry *JournalEntry, ans *v1alpha1.RemediationAnswer) {
	if a.cfg.Journal == nil {
		return
	}
	entry.Answer = ans.DeepCopy()
	if err := a.cfg.Journal.Save(*entry); err != nil {
		a.cfg.Log.Warn("keeping the answer in the remediation journal failed", "node", a.cfg.NodeName, "err", err)
		return
	}
	a.journaled = ans.ID
}

// answerPublished forgets the journal's step once its answer is in the published status.
func (a *Agent) answerPublished(published *v1alpha1.RemediationAnswer) {
	if a.journaled == 0 || published == nil || published.ID < a.journaled || a.cfg.Journal == nil {
		return
	}
	if err := a.cfg.Journal.Clear(); err != nil {
		a.cfg.Log.Warn("clearing the remediation journal failed", "node", a.cfg.NodeName, "err", err)
		return
	}
	a.journaled = 0
}

func outcomeOf(err error) v1alpha1.StepOutcome {
	if errors.Is(err, recovery.ErrRefused) {
		return v1alpha1.OutcomeRefused
	}
	return v1alpha1.OutcomeFailed
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
