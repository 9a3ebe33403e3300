package upgrade

import (
	"fmt"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	oldStack = Versions{Driver: "570.172.08", Toolkit: "1.17.8"}
	target   = Versions{Driver: "580.95.05"}
)

// fleet is n pending nodes on the old stack, node-00.., in racks of perRack nodes and two
// zones.
func fleet(n, perRack int) []Node {
	out := make([]Node, n)
	for i := range out {
		rack := i / perRack
		out[i] = Node{
			Name:    fmt.Sprintf("node-%02d", i),
			Labels:  map[string]string{"rack": fmt.Sprintf("r%d", rack), "zone": fmt.Sprintf("z%d", rack%2)},
			Running: oldStack, State: Pending,
		}
	}
	return out
}

func spec() Spec {
	return Spec{Target: target, CanaryCount: 1, Soak: 10 * time.Minute, DomainKeys: []string{"rack"}, MaxPerDomain: 1, MaxUnavailable: 2}
}

// done marks node i upgraded in wave w, its gate passed at t.
func done(nodes []Node, i, w int, t time.Time) {
	nodes[i].State, nodes[i].Wave, nodes[i].FinishedAt = Done, w, t
	nodes[i].Running = oldStack.Over(target)
}

func started(d Decision) []string {
	var out []string
	for _, s := range d.Start {
		out = append(out, s.Node)
	}
	return out
}
