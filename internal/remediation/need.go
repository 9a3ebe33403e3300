package remediation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// Need is what a node's faults call for, read from its facts alone.
type Need struct {
	// Remediate: some fault needs the ladder (or maintenance).
	Remediate bool `json:"remediate"`
	// Start is the lowest step that can clear every fault (StepMaintenance for service).
	Start Step `json:"start,omitempty"`
	// GPUs are the indices of the faulty GPUs, sorted; NodeWide when a node fault counts.
	GPUs     []int `json:"gpus,omitempty"`
	NodeWide bool  `json:"nodeWide,omitempty"`
	// Unusable: the node cannot run work at all (a GPU lost, a fatal node fault); such
	// a node is held whatever the budget or the breaker say.
	Unusable bool `json:"unusable,omitempty"`
	// Since is when the earliest of the faults was first seen.
	Since time.Time `json:"since,omitzero"`
	// Causes of the faults, "GPU 3: xid-79" or "node: driver-not-loaded".
	Causes []string `json:"causes,omitempty"`
}

// Assess reads what a node's faults call for:
//
//   - An unhealthy GPU needs its required action's step, and at least reset-gpu: the
//     health engine returns an unhealthy GPU to healthy only after a recovery that covers
//     its action (a reset or more) and a passing check, so evicting its pods alone could
//     never clear it. drain-p2p on an unhealthy GPU (an NVLink down) therefore drains the
//     GPU's pods and resets it.
//   - A degraded GPU needs nothing (its action is advisory) unless the policy says
//     RemediateDegraded and the action is restart-app or drain-p2p: then restart-app.
//   - A node fault needs its action's step, for the whole node.
//   - Service, or an action this package does not know, needs maintenance.
//
// A lost GPU or a fatal node fault makes the node unusable.
func Assess(f Facts, p Policy) Need {
	var n Need
	start := -1
	note := func(s Step, since time.Time, cause string) {
		n.Remediate = true
		start = max(start, s.Rank())
		if n.Since.IsZero() || since.Before(n.Since) {
			n.Since = since
		}
		if len(n.Causes) < MaxStateCauses {
			n.Causes = append(n.Causes, cause)
		}
	}
	for _, g := range f.GPUs {
		var s Step
		switch {
		case g.Health == health.Unhealthy:
			s = StepFor(g.Action)
			if s.Rank() < StepResetGPU.Rank() {
				s = StepResetGPU
			}
		case g.Health == health.Degraded && p.RemediateDegraded &&
			(g.Action == fault.ActionRestartApp || g.Action == fault.ActionDrainP2P):
			s = StepRestartApp
		default:
			continue
		}
		n.GPUs = append(n.GPUs, g.Index)
		if g.Lost() {
			n.Unusable = true
		}
		note(s, g.Since, fmt.Sprintf("GPU %d: %s", g.Index, causeList(g.Causes, g.Action)))
	}
	for _, nf := range f.NodeFaults {
		if nf.Action == fault.ActionNone && !nf.Fatal {
			continue
		}
		n.NodeWide = true
		n.Unusable = n.Unusable || nf.Fatal
		note(StepFor(nf.Action), nf.Since, "node: "+nf.Cause)
	}
	if n.Remediate {
		n.Start = StepMaintenance
		if start < len(Ladder) {
			n.Start = Ladder[start]
		}
		slices.Sort(n.GPUs)
		n.GPUs = slices.Compact(n.GPUs)
	}
	return n
}

func causeList(causes []string, a fault.Action) string {
	if len(causes) == 0 {
		return "action " + string(a)
	}
	const show = 3
	if len(causes) > show {
		return strings.Join(causes[:show], ",") + fmt.Sprintf(",+%d", len(causes)-show)
	}
	return strings.Join(causes, ",")
}

// overlaps reports whether the need touches the episode's scope: any of gpus (all GPUs
// when nodeWide) or a node fault.
func (n Need) overlaps(gpus []int, nodeWide bool) bool {
	if !n.Remediate {
		return false
	}
	if nodeWide || n.NodeWide {
		return true
	}
	for _, g := range n.GPUs {
		if slices.Contains(gpus, g) {
			return true
		}
	}
	return false
}
