package deviceplugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

// numaOnly is eight GPUs g0..g7 without topology, 0-3 on NUMA node 0 and 4-7 on node 1.
func numaOnly() Resource {
	r := Resource{Name: ResourceName, Replicas: 1}
	for i := range 8 {
		g := gpu.Device{Index: i, UUID: fmt.Sprintf("g%d", i), NUMANode: i / 4}
		r.Devices = append(r.Devices, Device{ID: g.UUID, GPU: g, Replica: -1})
	}
	return r
}

// hgx is eight GPUs g0..g7 wired as on an HGX board: pairs (0,1), (2,3), ... behind one
// PCIe switch, 0-3 and 4-7 on two NUMA nodes, all NVLinked with 18 links except the GPUs in
// slow (linked with 2), and those in none (not linked at all).
func hgx(slow, none []int) Resource {
	r := Resource{Name: ResourceName, Replicas: 1}
	links := func(i int) int {
		switch {
		case slices.Contains(none, i):
			return 0
		case slices.Contains(slow, i):
			return 2
		}
		return 18
	}
	for i := range 8 {
		g := gpu.Device{Index: i, UUID: fmt.Sprintf("g%d", i), NUMANode: i / 4}
		for j := range 8 {
			if j == i {
				continue
			}
			path := gpu.PCIeSystem
			switch {
			case i/2 == j/2:
				path = gpu.PCIeSingleSwitch
			case i/4 == j/4:
				path = gpu.PCIeNUMANode
			}
			g.Peers = append(g.Peers, gpu.Peer{Index: j, PCIe: path, NVLinks: min(links(i), links(j))})
		}
		r.Devices = append(r.Devices, Device{ID: g.UUID, GPU: g, Replica: -1})
	}
	return r
}

var all8 = []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"}

func TestPreferredAllocationChoosesTheBestConnectedGPUs(t *testing.T) {
	cases := []struct {
		name            string
		r               Resource
		available, must []string
		size            int
		want            []string
		wantErr         string
	}{
		{"from an idle HGX board a pair behind one PCIe switch is chosen, lowest first", hgx(nil, nil), all8, nil, 2, []string{"g0", "g1"}, ""},
		{"a GPU with few NVLinks is avoided while better-linked pairs are free", hgx([]int{0, 1}, nil), all8, nil, 2, []string{"g2", "g3"}, ""},
		{"NVLink beats a shared PCIe switch", hgx(nil, []int{2}), []string{"g2", "g3", "g5"}, nil, 2, []string{"g3", "g5"}, ""},
		{"without NVLink the shared PCIe switch wins over the NUMA node", hgx(nil, all8Idx()), []string{"g0", "g2", "g3"}, nil, 2, []string{"g2", "g3"}, ""},
		{"four GPUs stay on one NUMA node", hgx(nil, all8Idx()), []string{"g1", "g2", "g4", "g5", "g6", "g7"}, nil, 4, []string{"g4", "g5", "g6", "g7"}, ""},
		{"a must-include GPU is kept and its switch partner joins it", hgx(nil, nil), all8, []string{"g5"}, 2, []string{"g5", "g4"}, ""},
		{"without topology the GPUs stay on one NUMA node, the fuller one first", numaOnly(), []string{"g2", "g3", "g4", "g5", "g6", "g7"}, nil, 2, []string{"g2", "g3"}, ""},
		{"without topology a request that only fits the other node goes there", numaOnly(), []string{"g3", "g4", "g5", "g6", "g7"}, nil, 3, []string{"g4", "g5", "g6"}, ""},
		{"a request larger than a NUMA node takes a whole node and the rest", numaOnly(), []string{"g0", "g4", "g5", "g6", "g7"}, nil, 5, []string{"g0", "g4", "g5", "g6", "g7"}, ""},
		{"input order does not change the answer", hgx(nil, nil), []string{"g7", "g1", "g6", "g0"}, nil, 2, []string{"g0", "g1"}, ""},
		{"unknown devices are never chosen", hgx(nil, nil), []string{"x9", "g6", "g7"}, nil, 2, []string{"g6", "g7"}, ""},
		{"a size below the must-include count is refused", hgx(nil, nil), all8, []string{"g0", "g1"}, 1, nil, "less than"},
		{"a size above what is available is refused", hgx(nil, nil), []string{"g0"}, nil, 2, nil, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := preferred(c.r, c.available, c.must, c.size)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("preferred error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("preferred(%v, must %v, %d) = %v, %v; want %v", c.available, c.must, c.size, got, err, c.want)
			}
		})
	}
}

func all8Idx() []int { return []int{0, 1, 2, 3, 4, 5, 6, 7} }

func TestPreferredReplicasSpreadOverGPUs(t *testing.T) {
	base := numaOnly()
	base.Devices = base.Devices[:3]
	r, err := Resources(gpusOf(base), Sharing{TimeSlicing: TimeSlicing{Resources: []Replicated{{Name: ResourceName, Replicas: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	shared := r[0]
	ids := func(r Resource) []string {
		var out []string
		for _, d := range r.Devices {
			out = append(out, d.ID)
		}
		return out
	}(shared)
	cases := []struct {
		name            string
		available, must []string
		size            int
		want            []string
	}{
		{"three replicas land on three GPUs", ids, nil, 3, []string{"g0::0", "g1::0", "g2::0"}},
		{"the GPU with the most free replicas goes first", slices.Delete(slices.Clone(ids), 0, 2), nil, 1, []string{"g1::0"}},
		{"a must-include replica's GPU is used last", ids, []string{"g1::3"}, 3, []string{"g1::3", "g0::0", "g2::0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := preferred(shared, c.available, c.must, c.size)
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("preferred = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func gpusOf(r Resource) []gpu.Device {
	var out []gpu.Device
	for _, d := range r.Devices {
		out = append(out, d.GPU)
	}
	return out
}

func TestTheGreedySearchAgreesOnALargeNode(t *testing.T) {
	// 32 GPUs choose 8 is past the exhaustive limit: the greedy search still keeps the
	// set on one NUMA node.
	r := Resource{Name: ResourceName, Replicas: 1}
	var avail []string
	for i := range 32 {
		g := gpu.Device{Index: i, UUID: fmt.Sprintf("g%02d", i), NUMANode: i / 8}
		r.Devices = append(r.Devices, Device{ID: g.UUID, GPU: g, Replica: -1})
		if i != 0 && i != 9 {
			avail = append(avail, g.UUID)
		}
	}
	got, err := preferred(r, avail, nil, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"g16", "g17", "g18", "g19", "g20", "g21", "g22", "g23"}
	if !slices.Equal(got, want) {
		t.Errorf("preferred = %v, want the first whole NUMA node %v", got, want)
	}
}
