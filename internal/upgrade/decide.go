package upgrade

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Phase is where the whole upgrade stands (the StackUpgrade's status.phase).
type Phase string

// Phases Decide returns.
const (
	PhaseCanary   Phase = "Canary"
	PhaseSoaking  Phase = "Soaking"
	PhaseRolling  Phase = "Rolling"
	PhasePaused   Phase = "Paused"
	PhaseHalted   Phase = "Halted"
	PhaseAborted  Phase = "Aborted"
	PhaseComplete Phase = "Complete"
)

// Start is one node to start now.
type Start struct {
	Node   string
	Canary bool
	Wave   int
}

// Decision is what the upgrade does now.
type Decision struct {
	Phase Phase
	// Wave is the current wave (0: the canaries).
	Wave int
	// Start: the nodes to hold and upgrade now, in order.
	Start []Start
	// Canaries: every canary, picked once and recorded, started or not.
	Canaries []string
	// Message says what happens and what is next, with the numbers.
	Message string
	// RequeueAt: when the decision changes by the clock alone (the soak ends); zero: only
	// a change of the facts changes it.
	RequeueAt time.Time
	// Unavailable: the pool's unavailable nodes before Start; Limit its maximum.
	Unavailable, Limit int
}

// Decide says which nodes start now: the canaries first, alone; once every canary passed
// its gate and soaked, waves of pending nodes, each after the previous wave finished and
// soaked. A node starts only while the pool has fewer than Limit unavailable nodes and
// each of its failure domains fewer than MaxPerDomain, every owner's holds counted; a node
// in remediation or held by another owner never starts. A failed gate halts the upgrade,
// pause and abort stop new starts.
func Decide(nodes []Node, s Spec, now time.Time) Decision {
	d := Decision{Limit: s.Limit(len(nodes)), Canaries: PickCanaries(nodes, s)}
	var failed, inProgress, finished []string
	wave := 0
	for _, n := range nodes {
		switch {
		case n.State == Failed:
			failed = append(failed, n.Name+": "+n.Message)
		case n.State == InProgress:
			inProgress = append(inProgress, n.Name)
		case n.finished(s.Target):
			finished = append(finished, n.Name)
		}
		if n.unavailable() {
			d.Unavailable++
		}
		if n.State != Pending {
			wave = max(wave, n.Wave)
		}
	}
	d.Wave = wave
	switch {
	case len(failed) > 0:
		slices.Sort(failed)
		d.Phase, d.Message = PhaseHalted, "halted: a gate failed, no new node starts: "+strings.Join(failed, "; ")
		return d
	case len(finished) == len(nodes):
		d.Phase, d.Message = PhaseComplete, fmt.Sprintf("all %d nodes run %s", len(nodes), s.Target)
		return d
	case s.Abort:
		d.Phase, d.Message = PhaseAborted, fmt.Sprintf("aborted: %d of %d nodes upgraded, %d finishing", len(finished), len(nodes), len(inProgress))
		return d
	case s.Paused:
		d.Phase, d.Message = PhasePaused, fmt.Sprintf("paused: %d of %d nodes upgraded, %d finishing", len(finished), len(nodes), len(inProgress))
		return d
	}
	canary := map[string]bool{}
	for _, c := range d.Canaries {
		canary[c] = true
	}
	canariesLeft := 0
	for _, n := range nodes {
		if canary[n.Name] && !n.finished(s.Target) {
			canariesLeft++
		}
	}
	if canariesLeft > 0 {
		d.Phase, d.Wave = PhaseCanary, 0
		d.start(nodes, s, func(n Node) bool { return canary[n.Name] }, 0, true)
		d.Message = fmt.Sprintf("canaries: %d of %d to go, %d starting now; %s", canariesLeft, len(d.Canaries), len(d.Start), d.budget())
		return d
	}
	d.Phase = PhaseRolling
	if len(inProgress) > 0 {
		d.Message = fmt.Sprintf("wave %d: %d nodes in progress (%s); %d of %d upgraded", wave, len(inProgress), strings.Join(first(inProgress), ", "), len(finished), len(nodes))
		return d
	}
	if end := lastFinish(nodes, wave).Add(s.Soak); now.Before(end) {
		d.Phase, d.RequeueAt = PhaseSoaking, end
		d.Message = fmt.Sprintf("wave %d soaks until %s; %d of %d upgraded", wave, end.UTC().Format(time.RFC3339), len(finished), len(nodes))
		return d
	}
	d.Wave = wave + 1
	d.start(nodes, s, func(Node) bool { return true }, d.Wave, false)
	if len(d.Start) == 0 {
		d.Wave = wave
		d.Message = fmt.Sprintf("%d nodes wait: none may start (held by another owner, in remediation or over the budget); %s", len(nodes)-len(finished), d.budget())
		return d
	}
	d.Message = fmt.Sprintf("wave %d: %d nodes starting; %d of %d upgraded; %s", d.Wave, len(d.Start), len(finished), len(nodes), d.budget())
	return d
}

func (d *Decision) budget() string {
	return fmt.Sprintf("%d of %d unavailable allowed in use", d.Unavailable, d.Limit)
}

// start appends the eligible nodes pick takes, by name, while the pool and every failure
// domain of the node have room.
func (d *Decision) start(nodes []Node, s Spec, pick func(Node) bool, wave int, canary bool) {
	used := make([]map[string]int, len(s.DomainKeys))
	for i := range used {
		used[i] = map[string]int{}
	}
	for _, n := range nodes {
		if n.unavailable() {
			for i, k := range s.DomainKeys {
				used[i][n.Labels[k]]++
			}
		}
	}
	held := d.Unavailable
	for _, n := range byName(nodes) {
		if held >= d.Limit {
			return
		}
		if !pick(n) || !n.eligible(s.Target) || !roomIn(used, s, n) {
			continue
		}
		for i, k := range s.DomainKeys {
			used[i][n.Labels[k]]++
		}
		held++
		d.Start = append(d.Start, Start{Node: n.Name, Canary: canary, Wave: wave})
	}
}

func roomIn(used []map[string]int, s Spec, n Node) bool {
	for i, k := range s.DomainKeys {
		if used[i][n.Labels[k]] >= s.perDomain() {
			return false
		}
	}
	return true
}

func byName(nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// lastFinish is the latest gate of the nodes of wave w (zero when none finished there).
func lastFinish(nodes []Node, w int) time.Time {
	var t time.Time
	for _, n := range nodes {
		if n.State == Done && n.Wave == w && n.FinishedAt.After(t) {
			t = n.FinishedAt
		}
	}
	return t
}

func first(names []string) []string {
	slices.Sort(names)
	if len(names) > 5 {
		return append(names[:5:5], fmt.Sprintf("%d more", len(names)-5))
	}
	return names
}
