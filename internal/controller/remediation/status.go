package remediation

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// mirror writes the decision's summary into gn's status.remediation (for people; the
// annotation is what decisions read), with the phase remediation claims while it has a
// claim on the node: the acceptance controller turns it into status.phase
// (internal/lifecycle), the phase's one writer.
func mirror(gn *v1alpha1.GPUNode, f remediation.Facts, d remediation.Decision) {
	s := d.State
	if s.Phase == remediation.PhaseNone && d.Phase == remediation.PhaseNone && len(s.Attempts) == 0 {
		gn.Status.Remediation = nil
		return
	}
	st := &v1alpha1.RemediationStatus{Phase: v1alpha1.Phase(d.Phase), Trigger: truncate(trigger(s), 256)}
	if !s.FaultSince.IsZero() {
		t := metav1.NewTime(s.FaultSince)
		st.FaultSince = &t
	}
	if d.Wait != remediation.WaitNothing || d.Reason != remediation.ReasonNoFault {
		st.Waiting = truncate(d.Reason+": "+d.Message, 1024)
	}
	st.Evidence = evidence(gn, s)
	attempts := s.Attempts
	if n := len(attempts) - v1alpha1.MaxRemediationHistory; n > 0 {
		attempts = attempts[n:]
	}
	for _, a := range attempts {
		sa := stepAttempt(f, a)
		st.History = append(st.History, sa)
		if a.Result == remediation.AttemptPending && a.ID == s.RequestID {
			cur := sa
			st.Current = &cur
		}
	}
	gn.Status.Remediation = st
}

// evidence is the bundle the state records: from the agent's answer to the capture
// request, or, once later answers replaced it, as status.remediation already shows it.
func evidence(gn *v1alpha1.GPUNode, s remediation.State) *v1alpha1.EvidenceSummary {
	if !s.Evidence.Recorded() {
		return nil
	}
	if a := gn.Status.RemediationAnswer; a != nil && a.Evidence != nil && a.ID == s.Evidence.ID {
		return a.Evidence.DeepCopy()
	}
	if old := gn.Status.Remediation; old != nil && old.Evidence != nil && old.Evidence.SHA256 == s.Evidence.SHA256 {
		return old.Evidence.DeepCopy()
	}
	return nil
}

func trigger(s remediation.State) string {
	if len(s.Causes) > 0 {
		return strings.Join(s.Causes, "; ")
	}
	return s.Reason
}

// stepAttempt maps one attempt of a step to the API.
func stepAttempt(f remediation.Facts, a remediation.Attempt) v1alpha1.StepAttempt {
	out := v1alpha1.StepAttempt{
		Step: v1alpha1.RemediationStep(a.Step), GPUs: f.UUIDs(a.GPUs), RequestID: a.ID,
		Started: metav1.NewTime(a.Started), Message: truncate(a.Detail, 1024),
	}
	if !a.Ended.IsZero() {
		t := metav1.NewTime(a.Ended)
		out.Finished = &t
	}
	switch a.Result {
	case remediation.AttemptSucceeded, remediation.AttemptCleared, remediation.AttemptNotCleared:
		out.Outcome = v1alpha1.OutcomeSucceeded
	case remediation.AttemptFailed:
		out.Outcome = v1alpha1.OutcomeFailed
	case remediation.AttemptTimedOut:
		out.Outcome = v1alpha1.OutcomeTimedOut
	}
	if a.Result == remediation.AttemptNotCleared && out.Message == "" {
		out.Message = "the step ran but did not clear the fault"
	}
	return out
}
