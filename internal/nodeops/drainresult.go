package nodeops

import (
	"fmt"
	"strings"
	"time"
)

// DrainResult is what a drain did, pod by pod (sorted by namespace and name). Pods the
// filter did not choose are not listed.
type DrainResult struct {
	Node string       `json:"node"`
	Pods []PodOutcome `json:"pods"`
	// TimedOut is true when the drain's timeout ended it with pods still blocked,
	// failing or being waited for.
	TimedOut bool          `json:"timedOut"`
	Took     time.Duration `json:"took"`
}

// With returns the outcomes of one kind.
func (r DrainResult) With(o Outcome) []PodOutcome {
	var out []PodOutcome
	for _, p := range r.Pods {
		if p.Outcome == o {
			out = append(out, p)
		}
	}
	return out
}

// Done reports whether every chosen pod is gone or skipped: none blocked, failed or still
// terminating. A drain that is not done can be called again: it continues.
func (r DrainResult) Done() bool {
	for _, p := range r.Pods {
		if p.Outcome != OutcomeEvicted && p.Outcome != OutcomeSkipped {
			return false
		}
	}
	return true
}

// String is a one-line summary for logs and Events.
func (r DrainResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drain of node %s: %d evicted, %d terminating, %d blocked, %d skipped, %d failed in %s",
		r.Node, len(r.With(OutcomeEvicted)), len(r.With(OutcomeTerminating)), len(r.With(OutcomeBlocked)),
		len(r.With(OutcomeSkipped)), len(r.With(OutcomeFailed)), r.Took.Round(time.Millisecond))
	for _, p := range r.With(OutcomeBlocked) {
		fmt.Fprintf(&b, "; %s blocked by %s", p.Pod, strings.Join(p.PDBs, ","))
	}
	if r.TimedOut {
		b.WriteString(" (timed out)")
	}
	return b.String()
}
