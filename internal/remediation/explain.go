package remediation

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Explanation is why a node is (or is not) held, by whom, since when and what happens next:
// `gpunode explain node NAME`. It is built from the same inputs as DecideFleet, and holds the
// Decision itself, so the account and the controller cannot disagree.
type Explanation struct {
	Node  string `json:"node"`
	Phase Phase  `json:"phase,omitempty"`
	// Holds are every owner's holds, oldest first.
	Holds []Hold `json:"holds,omitempty"`
	// Fault is what the facts show now; Episode what remediation is doing about it.
	Fault     Need      `json:"fault"`
	Episode   State     `json:"episode"`
	Admission Admission `json:"admission"`
	Decision  Decision  `json:"decision"`
	// Next says what happens next; NextAt when time alone moves it (zero: on new facts).
	Next   string    `json:"next"`
	NextAt time.Time `json:"nextAt,omitzero"`
}

// Explain accounts for one node's holds and remediation.
func Explain(f Facts, p Policy, adm Admission, now time.Time) Explanation {
	p = p.WithDefaults()
	need := Assess(f, p)
	d := decide(f, p, need, adm, now)
	holds := slices.Clone(f.Holds)
	slices.SortStableFunc(holds, func(a, b Hold) int { return a.Since.Compare(b.Since) })
	return Explanation{
		Node: f.Node, Phase: d.Phase, Holds: holds, Fault: need, Episode: d.State,
		Admission: adm, Decision: d, Next: next(f.Node, d, adm), NextAt: d.WaitUntil,
	}
}

// next says what the decision leads to.
func next(nodeName string, d Decision, adm Admission) string {
	s := d.State
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch d.Wait {
	case WaitBudget:
		return "remediation places its hold once the budget has room (" + adm.Message() + "); the fault stays recorded meanwhile"
	case WaitPaused:
		if d.Reason == ReasonRemediationDisabled {
			return "nothing starts: remediation is disabled for the pool; a node that cannot run work is still held"
		}
		return "nothing starts until a person resumes automation in the pool (the breaker tripped); holds of unusable nodes are still placed"
	case WaitHold:
		return "remediation places its hold, then continues with " + stepOr(s.Step, "maintenance")
	case WaitEvidence:
		return fmt.Sprintf("once the evidence bundle (request %d) is recorded, %s starts; if it is not recorded by %s the node goes to maintenance", s.Evidence.ID, s.Step, at(d.WaitUntil))
	case WaitBackoff:
		return fmt.Sprintf("%s starts at %s, when its backoff ends", s.Step, at(d.WaitUntil))
	case WaitDrain:
		if s.Phase == PhaseRecovering {
			return fmt.Sprintf("restart-app succeeds once the pods are gone; at %s it counts as failed and the ladder escalates", at(d.WaitUntil))
		}
		return fmt.Sprintf("%s starts once the pods are gone, or at %s (a reset or a driver reload cannot run on a busy GPU: it escalates instead)", s.Step, at(d.WaitUntil))
	case WaitOutcome:
		return fmt.Sprintf("waits for the outcome of %s (request %d); with none by %s it escalates: a started step is never started again", s.Step, s.RequestID, at(d.WaitUntil))
	case WaitAcceptance:
		if s.AfterRelease {
			return fmt.Sprintf("a passing acceptance (generation %d) returns the node to service; a failing one, or none by %s, sends it back to maintenance", s.AcceptanceGeneration, at(d.WaitUntil))
		}
		return fmt.Sprintf("a passing acceptance (generation %d) with the fault gone releases the hold; a failing one, a returning fault, or none by %s escalates past %s", s.AcceptanceGeneration, at(d.WaitUntil), s.Step)
	case WaitRelease:
		return "stays in maintenance until a person releases it (`gpunode release " + nodeName + "` or the gpunode.dev/release annotation); acceptance then decides"
	}
	switch d.Hold {
	case HoldRelease:
		return "remediation releases its hold"
	case HoldPlace:
		return "remediation places its hold"
	}
	return "nothing: remediation has no claim on the node"
}

func stepOr(s Step, def string) string {
	if s == "" {
		return def
	}
	return string(s)
}

// String renders the explanation for a person, one fact a line.
func (e Explanation) String() string {
	var b strings.Builder
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	fmt.Fprintf(&b, "node %s: phase %s\n", e.Node, stepOr(Step(e.Phase), "none (in service as far as remediation knows)"))
	if len(e.Holds) == 0 {
		b.WriteString("holds: none\n")
	}
	for _, h := range e.Holds {
		fmt.Fprintf(&b, "held by %s since %s: %s\n", h.Owner, at(h.Since), h.Reason)
	}
	if e.Fault.Remediate {
		unusable := ""
		if e.Fault.Unusable {
			unusable = " (the node cannot run work)"
		}
		fmt.Fprintf(&b, "fault since %s%s: %s; needs %s\n", at(e.Fault.Since), unusable, strings.Join(e.Fault.Causes, "; "), e.Fault.Start)
	} else {
		b.WriteString("fault: none in the GPUs' health or the node's faults\n")
	}
	s := e.Episode
	if s.Step != "" {
		fmt.Fprintf(&b, "step: %s on %s", s.Step, gpuText(scopeOf(s)))
		if !s.StepStarted.IsZero() {
			fmt.Fprintf(&b, ", started %s (request %d)", at(s.StepStarted), s.RequestID)
		}
		b.WriteString("\n")
	}
	if s.Evidence.ID != 0 {
		if s.Evidence.Recorded() {
			fmt.Fprintf(&b, "evidence: request %d recorded %s sha256 %s\n", s.Evidence.ID, at(s.Evidence.RecordedAt), s.Evidence.SHA256)
		} else {
			fmt.Fprintf(&b, "evidence: request %d asked %s, not recorded yet\n", s.Evidence.ID, at(s.Evidence.RequestedAt))
		}
	}
	for _, a := range s.Attempts {
		fmt.Fprintf(&b, "attempt: %s on %s at %s: %s", a.Step, gpuText(a.GPUs), at(a.Started), a.Result)
		if a.Detail != "" {
			b.WriteString(" (" + a.Detail + ")")
		}
		b.WriteString("\n")
	}
	if s.Reason != "" {
		fmt.Fprintf(&b, "why: %s\n", s.Reason)
	}
	fmt.Fprintf(&b, "now: %s: %s\n", e.Decision.Reason, e.Decision.Message)
	fmt.Fprintf(&b, "next: %s\n", e.Next)
	return b.String()
}

func scopeOf(s State) []int {
	if s.Step.PerGPU() && !s.NodeWide {
		return s.GPUs
	}
	return nil
}
