package upgrade

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reasons an upgrade is refused before any node moves (its Accepted condition's reason).
const (
	RefuseVersionMatrix = "VersionMatrix"
	RefuseNoNodes       = "NoNodes"
	RefuseOverlap       = "Overlap"
)

// Refusal is why an upgrade may not run.
type Refusal struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Ref names an upgrade and when it was created: of two upgrades on the same nodes the
// older runs (the earlier creation, then the smaller name).
type Ref struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

func (r Ref) before(o Ref) bool {
	if !r.Created.Equal(o.Created) {
		return r.Created.Before(o.Created)
	}
	return r.Name < o.Name
}

// Other is another upgrade that has not finished (not Complete, Aborted or Refused), and
// the nodes it covers.
type Other struct {
	Ref
	Nodes []string `json:"nodes"`
}

// Check is what CheckMatrix judges.
type Check struct {
	Self Ref
	// Target is the upgrade's target; Pool the versions the pool runs now (the operands the
	// target leaves unset keep them).
	Target, Pool Versions
	Matrix       []Constraint
	// Nodes are the pool's member nodes.
	Nodes  []string
	Others []Other
}

// CheckMatrix says why an upgrade may not run: the target does not satisfy the version
// matrix, the pool has no nodes, or an older unfinished upgrade covers some of the same
// nodes. None: it may run. A matrix entry that cannot be read is a VersionMatrix refusal
// that names it.
func CheckMatrix(c Check) []Refusal {
	var out []Refusal
	if r, ok := checkMatrix(c.Target, c.Pool, c.Matrix); !ok {
		out = append(out, r)
	}
	if len(c.Nodes) == 0 {
		out = append(out, Refusal{RefuseNoNodes, "the pool has no member nodes: nothing to upgrade"})
	}
	mine := map[string]bool{}
	for _, n := range c.Nodes {
		mine[n] = true
	}
	others := slices.Clone(c.Others)
	slices.SortFunc(others, func(a, b Other) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range others {
		if o.Name == c.Self.Name || !o.before(c.Self) {
			continue
		}
		var shared []string
		for _, n := range o.Nodes {
			if mine[n] {
				shared = append(shared, n)
			}
		}
		if len(shared) > 0 {
			slices.Sort(shared)
			out = append(out, Refusal{RefuseOverlap, fmt.Sprintf("StackUpgrade %s is still running on %s", o.Name, nodeList(shared))})
		}
	}
	return out
}

func checkMatrix(target, pool Versions, matrix []Constraint) (Refusal, bool) {
	after := pool.Over(target)
	var why []string
	for i, c := range matrix {
		ok, reason, err := c.Allows(after)
		if err != nil {
			return Refusal{RefuseVersionMatrix, fmt.Sprintf("versionMatrix[%d]: %v", i, err)}, false
		}
		if ok {
			return Refusal{}, true
		}
		why = append(why, fmt.Sprintf("[%d] %s", i, reason))
	}
	if len(matrix) == 0 {
		why = append(why, "the matrix is empty")
	}
	return Refusal{RefuseVersionMatrix, fmt.Sprintf("%s matches no entry of versionMatrix: %s", after, strings.Join(why, "; "))}, false
}

// nodeList names up to five nodes and counts the rest: "3 nodes (a, b, c)".
func nodeList(nodes []string) string {
	const show = 5
	names := strings.Join(nodes[:min(len(nodes), show)], ", ")
	if len(nodes) > show {
		names += fmt.Sprintf(" and %d more", len(nodes)-show)
	}
	if len(nodes) == 1 {
		return "1 node of this pool (" + names + ")"
	}
	return fmt.Sprintf("%d nodes of this pool (%s)", len(nodes), names)
}
