package upgrade

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// PickCanaries is the upgrade's canary nodes. Once picked they are recorded (Node.Canary)
// and stay the canaries. With a selector: every node it matches. Otherwise CanaryCount
// nodes (default 1) among those that may start, spread over the values of the first
// failure-domain key, by name within a domain. None may start: none picked yet.
func PickCanaries(nodes []Node, s Spec) []string {
	var out []string
	for _, n := range nodes {
		if n.Canary {
			out = append(out, n.Name)
		}
	}
	if len(out) > 0 {
		slices.Sort(out)
		return out
	}
	if s.CanarySelector != nil {
		for _, n := range byName(nodes) {
			if s.CanarySelector.Matches(labels.Set(n.Labels)) {
				out = append(out, n.Name)
			}
		}
		return out
	}
	want := max(s.CanaryCount, 1)
	key := ""
	if len(s.DomainKeys) > 0 {
		key = s.DomainKeys[0]
	}
	seen := map[string]bool{}
	var rest []string
	for _, n := range byName(nodes) {
		if !n.eligible(s.Target) {
			continue
		}
		if d := n.Labels[key]; !seen[d] && len(out) < want {
			seen[d] = true
			out = append(out, n.Name)
			continue
		}
		rest = append(rest, n.Name)
	}
	out = append(out, rest[:min(len(rest), want-len(out))]...)
	slices.Sort(out)
	return out
}
