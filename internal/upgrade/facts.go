package upgrade

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// State is where one node's upgrade stands.
type State string

// States of a node's upgrade.
const (
	// Pending: not started.
	Pending State = "Pending"
	// InProgress: held by the upgrade, somewhere between drain and gate.
	InProgress State = "InProgress"
	// Done: runs the target and passed its gate.
	Done State = "Done"
	// Failed: its gate failed.
	Failed State = "Failed"
)

// Node is one member node of the pool as the planner sees it.
type Node struct {
	Name   string
	Labels map[string]string
	// HeldByOthers: the node carries a hold of another owner (acceptance, remediation,
	// operator, stack, liveness...): it is unavailable already and counts in the budget.
	HeldByOthers bool
	// InRemediation: remediation has a claim on the node (an episode, or a fault waiting
	// for budget): it is never upgraded meanwhile.
	InRemediation bool
	// Running is what the node reports.
	Running Versions
	State   State
	// Canary: the upgrade picked it as a canary (recorded in status).
	Canary bool
	// Wave it started in (0: the canaries).
	Wave int
	// FinishedAt: when its gate passed or failed.
	FinishedAt time.Time
	// Message: why it failed, for the halt.
	Message string
}

// Spec is the planner's view of a StackUpgrade's spec, defaults applied.
type Spec struct {
	Target Versions
	// CanaryCount nodes are picked when CanarySelector is nil.
	CanaryCount    int
	CanarySelector labels.Selector
	Soak           time.Duration
	DomainKeys     []string
	// MaxPerDomain unavailable nodes per value of each domain key.
	MaxPerDomain int
	// MaxUnavailable nodes, or MaxUnavailablePercent of the pool (rounded up); both set,
	// the smaller. Every owner's holds count.
	MaxUnavailable        int
	MaxUnavailablePercent int
	Paused, Abort         bool
}

// Limit is the pool's maximum unavailable nodes for a pool of size nodes (at least 1).
func (s Spec) Limit(size int) int {
	l := -1
	if s.MaxUnavailablePercent > 0 {
		l = (s.MaxUnavailablePercent*size + 99) / 100
	}
	if s.MaxUnavailable > 0 && (l < 0 || s.MaxUnavailable < l) {
		l = s.MaxUnavailable
	}
	return max(l, 1)
}

func (s Spec) perDomain() int { return max(s.MaxPerDomain, 1) }

// unavailable says whether n counts against the budget now.
func (n Node) unavailable() bool { return n.HeldByOthers || n.InRemediation || n.State == InProgress }

// eligible says whether n may start now (budget aside).
func (n Node) eligible(target Versions) bool {
	return n.State == Pending && !n.HeldByOthers && !n.InRemediation && !n.Running.Reaches(target)
}

// finished says whether n needs nothing more from the upgrade.
func (n Node) finished(target Versions) bool {
	return n.State == Done || (n.State == Pending && n.Running.Reaches(target))
}
