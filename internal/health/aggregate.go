package health

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gpunode/gpunode/internal/fault"
)

// Limits of the Aggregator.
const (
	// DefaultMaxFindings is how many distinct (GPU, cause) findings an Aggregator keeps
	// unless told otherwise: 8 GPUs with every cause this package knows fit many times over.
	DefaultMaxFindings = 1024
	// EvidenceFirst is how many of its first evidence lines a finding keeps; one more slot
	// holds the latest line, so a finding never has more than MaxEvidence lines.
	EvidenceFirst = 3
	// MaxEvidence is the most evidence lines a kept finding has.
	MaxEvidence = EvidenceFirst + 1
	// MaxTextBytes is the longest summary or evidence line kept; longer ones are cut.
	MaxTextBytes = 512
)

type key struct{ gpu, cause string }

// Aggregator deduplicates findings per (GPU, cause) with bounded memory: a repeat bumps
// Count and LastSeen, keeps the worst severity and action, and keeps the first EvidenceFirst
// evidence lines and the latest; a repeat does not allocate. At most max distinct findings
// are kept; past that, a new finding replaces the least severe kept one when it is more
// severe, and whatever is not kept is counted in one node-level overflow finding (cause
// CauseOverflow) that carries the worst severity and action it absorbed, so a flood can
// never hide what a fault requires.
//
// An Aggregator is safe for concurrent use: the health monitor adds from its sources while
// the exporter and the status publisher read. It never reads the clock.
type Aggregator struct {
	mu       sync.Mutex
	max      int
	kept     map[key]*Finding
	byWeight []int // how many kept findings have each weight
	overflow *Finding
}

// NewAggregator keeps at most maxFindings distinct findings (DefaultMaxFindings when <= 0).
func NewAggregator(maxFindings int) *Aggregator {
	if maxFindings <= 0 {
		maxFindings = DefaultMaxFindings
	}
	return &Aggregator{
		max:      maxFindings,
		kept:     make(map[key]*Finding, min(maxFindings, 64)),
		byWeight: make([]int, len(fault.Severities)*len(fault.Actions)),
	}
}

// Add records one finding and reports whether it is new (the first for its GPU and cause).
// The Aggregator keeps no reference to f's Evidence slice.
func (a *Aggregator) Add(f Finding) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := key{f.GPU, f.Cause}
	if e, ok := a.kept[k]; ok {
		a.byWeight[weight(e)]--
		merge(e, f)
		a.byWeight[weight(e)]++
		return false
	}
	if len(a.kept) >= a.max {
		v := a.victim(weight(&f))
		if v == nil {
			a.absorb(&f)
			return false
		}
		a.absorb(v)
		a.byWeight[weight(v)]--
		delete(a.kept, key{v.GPU, v.Cause})
	}
	e := f
	e.Summary = clip(f.Summary)
	e.Count = max(f.Count, 1)
	e.Evidence = make([]string, 0, MaxEvidence)
	for _, ev := range f.Evidence {
		addEvidence(&e, ev)
	}
	fixTimes(&e)
	a.kept[k] = &e
	a.byWeight[weight(&e)]++
	return true
}

// Get returns a copy of the finding kept for a GPU and cause.
func (a *Aggregator) Get(gpuUUID, cause string) (Finding, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gpuUUID == "" && cause == CauseOverflow && a.overflow != nil {
		return a.overflowCopy(), true
	}
	if e, ok := a.kept[key{gpuUUID, cause}]; ok {
		return deepCopy(e), true
	}
	return Finding{}, false
}

// Len is how many distinct findings are kept (the overflow finding not counted).
func (a *Aggregator) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.kept)
}

// Findings returns a copy of every kept finding, ordered by GPU index, then most severe
// first, then cause; the overflow finding, if any, comes last.
func (a *Aggregator) Findings() []Finding {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Finding, 0, len(a.kept)+1)
	for _, e := range a.kept {
		out = append(out, deepCopy(e))
	}
	slices.SortFunc(out, func(x, y Finding) int {
		return cmp.Or(cmp.Compare(x.GPUIndex, y.GPUIndex), cmp.Compare(x.GPU, y.GPU),
			cmp.Compare(y.Severity.Rank(), x.Severity.Rank()), cmp.Compare(y.Action.Rank(), x.Action.Rank()),
			cmp.Compare(x.Cause, y.Cause))
	})
	if a.overflow != nil {
		out = append(out, a.overflowCopy())
	}
	return out
}

// Clear forgets every finding of one GPU (after it recovered and passed its checks) and
// returns how many it forgot. Clear("") forgets the node-level findings and the overflow.
func (a *Aggregator) Clear(gpuUUID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for k, e := range a.kept {
		if k.gpu == gpuUUID {
			a.byWeight[weight(e)]--
			delete(a.kept, k)
			n++
		}
	}
	if gpuUUID == "" && a.overflow != nil {
		a.overflow = nil
		n++
	}
	return n
}

// victim is the least severe kept finding (the oldest among equals) when it weighs less
// than w, else nil. It scans only when such a finding exists.
func (a *Aggregator) victim(w int) *Finding {
	low := -1
	for i := 0; i < w && i < len(a.byWeight); i++ {
		if a.byWeight[i] > 0 {
			low = i
			break
		}
	}
	if low < 0 {
		return nil
	}
	var v *Finding
	for _, e := range a.kept {
		if weight(e) != low {
			continue
		}
		if v == nil || e.LastSeen.Before(v.LastSeen) || (e.LastSeen.Equal(v.LastSeen) && cmp.Or(strings.Compare(e.GPU, v.GPU), strings.Compare(e.Cause, v.Cause)) < 0) {
			v = e
		}
	}
	return v
}

// absorb counts a finding that is not kept in the overflow finding.
func (a *Aggregator) absorb(f *Finding) {
	o := a.overflow
	if o == nil {
		o = &Finding{GPUIndex: -1, Component: fault.ComponentNode, Severity: fault.SeverityWarning,
			Action: fault.ActionNone, Source: f.Source, Cause: CauseOverflow, Evidence: make([]string, 0, MaxEvidence)}
		a.overflow = o
	}
	sum := f.Summary
	if len(sum) > 120 {
		sum = clipTo(sum, 120)
	}
	addEvidence(o, nodeOr(f.GPU)+" "+f.Cause+" x"+strconv.Itoa(max(f.Count, 1))+": "+sum)
	merge(o, Finding{Severity: f.Severity, Action: f.Action, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen, Count: f.Count})
}

func (a *Aggregator) overflowCopy() Finding {
	o := deepCopy(a.overflow)
	o.Summary = fmt.Sprintf("%d observations of findings not kept: more than %d distinct findings on this node", o.Count, a.max)
	return o
}

// merge folds a repeat into a kept finding.
func merge(e *Finding, f Finding) {
	fixTimes(&f)
	if !f.LastSeen.Before(e.LastSeen) && f.Summary != "" {
		e.Summary = clip(f.Summary)
	}
	if e.FirstSeen.IsZero() || (!f.FirstSeen.IsZero() && f.FirstSeen.Before(e.FirstSeen)) {
		e.FirstSeen = f.FirstSeen
	}
	if f.LastSeen.After(e.LastSeen) {
		e.LastSeen = f.LastSeen
	}
	e.Severity = fault.MaxSeverity(e.Severity, f.Severity)
	e.Action = fault.Max(e.Action, f.Action)
	n := max(f.Count, 1)
	if e.Count > math.MaxInt-n {
		e.Count = math.MaxInt
	} else {
		e.Count += n
	}
	for _, ev := range f.Evidence {
		addEvidence(e, ev)
	}
}

// addEvidence keeps the first EvidenceFirst lines and, in one more slot, the latest.
func addEvidence(e *Finding, line string) {
	line = clip(line)
	if len(e.Evidence) < MaxEvidence {
		e.Evidence = append(e.Evidence, line)
		return
	}
	e.Evidence[MaxEvidence-1] = line
}

// fixTimes fills a missing FirstSeen or LastSeen from the other.
func fixTimes(f *Finding) {
	switch {
	case f.LastSeen.IsZero():
		f.LastSeen = f.FirstSeen
	case f.FirstSeen.IsZero() || f.FirstSeen.After(f.LastSeen):
		f.FirstSeen = f.LastSeen
	}
}

// weight orders findings for eviction: severity first, then action. An unknown severity
// weighs as a warning, an unknown action as none.
func weight(f *Finding) int {
	s := f.Severity.Rank()
	if s < 0 {
		s = fault.SeverityWarning.Rank()
	}
	return s*len(fault.Actions) + max(f.Action.Rank(), 0)
}

func deepCopy(e *Finding) Finding {
	c := *e
	c.Evidence = slices.Clone(e.Evidence)
	return c
}

func nodeOr(uuid string) string {
	if uuid == "" {
		return "node"
	}
	return uuid
}

// clip bounds a text to MaxTextBytes without keeping the long original alive.
func clip(s string) string { return clipTo(s, MaxTextBytes) }

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
