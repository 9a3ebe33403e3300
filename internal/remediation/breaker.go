package remediation

import (
	"fmt"
	"time"
)

// Breaker is a pool's circuit breaker, persisted (GPUNodePolicy status). Once tripped it
// stays tripped until a person resumes automation by setting ResumedAt (an annotation or
// `gpunode resume`) after TrippedAt; time alone never closes it.
type Breaker struct {
	TrippedAt time.Time `json:"trippedAt,omitzero"`
	// Reason says why it tripped, for the condition and the alert.
	Reason string `json:"reason,omitempty"`
	// Faulting of Nodes reported new faults within the window when it tripped.
	Faulting int `json:"faulting,omitempty"`
	Nodes    int `json:"nodes,omitempty"`
	// ResumedAt is a person's explicit resume.
	ResumedAt time.Time `json:"resumedAt,omitzero"`
}

// Tripped reports whether automation is paused.
func (b Breaker) Tripped() bool { return !b.TrippedAt.IsZero() && !b.ResumedAt.After(b.TrippedAt) }

// ReasonBreakerOpen is the condition reason while a breaker is tripped.
const ReasonBreakerOpen = "CircuitBreakerOpen"

// EvaluateBreaker is the breaker of a pool of poolSize nodes after looking at faultSince,
// when each node with a current fault first saw it. Faults within the window (after now
// minus the window) and after the last resume are new. The breaker trips when more than
// p.Count nodes have one, or more than p.Percent of the pool and at least p.MinNodes. A
// tripped breaker is returned unchanged: only a resume closes it.
func EvaluateBreaker(b Breaker, p BreakerPolicy, poolSize int, faultSince []time.Time, now time.Time) Breaker {
	if inFuture(b.ResumedAt, now) {
		b.ResumedAt = time.Time{} // refused (ParseStamp): it would close every later trip
	}
	if b.Tripped() || p.Disabled || poolSize == 0 {
		return b
	}
	from := now.Add(-p.Window)
	n := 0
	for _, t := range faultSince {
		if t.After(from) && t.After(b.ResumedAt) {
			n++
		}
	}
	var limit string
	switch {
	case p.Count > 0 && n > p.Count:
		limit = fmt.Sprintf("more than %d nodes", p.Count)
	case p.Percent > 0 && n >= p.MinNodes && n*100 > p.Percent*poolSize:
		limit = fmt.Sprintf("more than %d%%", p.Percent)
	default:
		return b
	}
	return Breaker{
		TrippedAt: now, Faulting: n, Nodes: poolSize, ResumedAt: b.ResumedAt,
		Reason: fmt.Sprintf("%d of %d nodes (%d%%) reported new faults within %s, %s: automation paused until a person resumes it",
			n, poolSize, n*100/poolSize, p.Window, limit),
	}
}
