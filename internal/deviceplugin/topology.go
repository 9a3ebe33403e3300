package deviceplugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpunode/gpunode/internal/gpu"
)

// GetPreferredAllocation picks, for each container, the devices to give it (see preferred).
func (p *Plugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	out := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids, err := preferred(p.resource, cr.GetAvailableDeviceIDs(), cr.GetMustIncludeDeviceIDs(), int(cr.GetAllocationSize()))
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "preferred allocation of %s: %v", p.resource.Name, err)
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return out, nil
}

// exhaustiveLimit bounds the sets of whole GPUs compared one by one; past it the set is
// grown greedily.
const exhaustiveLimit = 20000

// preferred chooses size devices of r from available: the must-include devices, then
//   - time-slicing replicas spread over GPUs: each next replica from the GPU with the fewest
//     replicas chosen so far, then the most replicas free, then by index;
//   - MIG devices by GPU and MIG index;
//   - whole GPUs by topology: the set whose worst pair has the best interconnect
//     (NVLink, more links first, then PCIe: same board, one switch, several switches, host
//     bridge, NUMA node, system; without topology, the NUMA node), then the best sum over
//     pairs, then the set that leaves the fewest GPUs free on the NUMA nodes it touches
//     (to keep whole nodes free), then the lowest indices.
//
// The answer is deterministic: the order of available does not change it. IDs this
// resource does not have are never chosen.
func preferred(r Resource, available, must []string, size int) ([]string, error) {
	if size < len(must) {
		return nil, fmt.Errorf("allocation size %d is less than the %d devices that must be included", size, len(must))
	}
	if size > len(available) {
		return nil, fmt.Errorf("allocation size %d is more than the %d devices available", size, len(available))
	}
	byID := make(map[string]Device, len(r.Devices))
	for _, d := range r.Devices {
		byID[d.ID] = d
	}
	var chosen, cands []Device
	for _, id := range must {
		if d, ok := byID[id]; ok {
			chosen = append(chosen, d)
		}
	}
	for _, id := range available {
		if d, ok := byID[id]; ok && !slices.Contains(must, id) && !slices.ContainsFunc(cands, func(c Device) bool { return c.ID == id }) {
			cands = append(cands, d)
		}
	}
	slices.SortFunc(cands, Device.order)
	need := min(size-len(chosen), len(cands))
	var rest []Device
	switch {
	case r.Replicas > 1:
		rest = spread(chosen, cands, need)
	case slices.ContainsFunc(r.Devices, func(d Device) bool { return d.MIG != nil }):
		rest = cands[:need]
	default:
		rest = bestSet(chosen, cands, need)
	}
	out := slices.Clone(must)
	for _, d := range rest {
		out = append(out, d.ID)
	}
	return out, nil
}

// spread picks need replicas, each from the GPU with the fewest chosen, then most free.
func spread(chosen, cands []Device, need int) []Device {
	used, free := map[string]int{}, map[string]int{}
	for _, d := range chosen {
		used[d.Target()]++
	}
	for _, d := range cands {
		free[d.Target()]++
	}
	var out []Device
	left := slices.Clone(cands)
	for range need {
		i := 0
		for j := 1; j < len(left); j++ {
			a, b := left[j], left[i]
			if c := cmp.Or(cmp.Compare(used[a.Target()], used[b.Target()]), cmp.Compare(free[b.Target()], free[a.Target()]), a.order(b)); c < 0 {
				i = j
			}
		}
		d := left[i]
		left = slices.Delete(left, i, i+1)
		used[d.Target()]++
		free[d.Target()]--
		out = append(out, d)
	}
	return out
}

// score ranks a set of whole GPUs; lower is better, compared field by field.
type score struct{ worst, sum, leftover int }

func (s score) compare(o score) int {
	return cmp.Or(cmp.Compare(s.worst, o.worst), cmp.Compare(s.sum, o.sum), cmp.Compare(s.leftover, o.leftover))
}

// bestSet chooses need of cands to add to chosen, by score then lowest indices (cands
// are sorted by index, and sets are tried in lexicographic order, so the first best wins).
func bestSet(chosen, cands []Device, need int) []Device {
	free := map[int]int{}
	for _, d := range cands {
		free[d.GPU.NUMANode]++
	}
	eval := func(set []Device) score {
		all := append(slices.Clone(chosen), set...)
		var s score
		for i := range all {
			for j := i + 1; j < len(all); j++ {
				c := pairCost(all[i].GPU, all[j].GPU)
				s.worst, s.sum = max(s.worst, c), s.sum+c
			}
		}
		taken := map[int]int{}
		for _, d := range set {
			taken[d.GPU.NUMANode]++
		}
		for node, n := range taken {
			s.leftover += free[node] - n
		}
		return s
	}
	if binomial(len(cands), need) > exhaustiveLimit {
		return greedy(cands, need, eval)
	}
	var best []Device
	var bestScore score
	cur := make([]Device, 0, need)
	var walk func(from int)
	walk = func(from int) {
		if len(cur) == need {
			if s := eval(cur); best == nil || s.compare(bestScore) < 0 {
				best, bestScore = slices.Clone(cur), s
			}
			return
		}
		for i := from; i <= len(cands)-(need-len(cur)); i++ {
			cur = append(cur, cands[i])
			walk(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	walk(0)
	return best
}

// greedy grows a set from each candidate in turn, adding each time the device that scores
// best, and keeps the best set grown (the first of equals: seeds go by index).
func greedy(cands []Device, need int, eval func([]Device) score) []Device {
	var best []Device
	var bestScore score
	for seed := range cands {
		set := []Device{cands[seed]}
		left := slices.Delete(slices.Clone(cands), seed, seed+1)
		for len(set) < need {
			bi := 0
			var bs score
			for i, d := range left {
				if s := eval(append(slices.Clone(set), d)); i == 0 || s.compare(bs) < 0 {
					bi, bs = i, s
				}
			}
			set = append(set, left[bi])
			left = slices.Delete(left, bi, bi+1)
		}
		slices.SortFunc(set, Device.order)
		if s := eval(set); best == nil || s.compare(bestScore) < 0 {
			best, bestScore = set, s
		}
	}
	return best
}

// pairCost is how far apart two GPUs are; lower is better. NVLinked pairs cost less
// than any PCIe-only pair, more links less; the PCIe path breaks ties.
func pairCost(a, b gpu.Device) int {
	links, path := 0, gpu.PCIePath("")
	for _, p := range a.Peers {
		if p.Index == b.Index {
			links, path = p.NVLinks, p.PCIe
		}
	}
	r := slices.Index(gpu.PCIePaths(), path) + 1 // 1 (same board) .. 6 (system), 0 unknown
	if r == 0 {
		r = 6
		if a.NUMANode == b.NUMANode {
			r = 5
		}
	}
	if links > 0 {
		return (100-min(links, 99))*10 + r
	}
	return 1000 + r
}

// binomial is n choose k, saturating at exhaustiveLimit+1.
func binomial(n, k int) int {
	k = min(k, n-k)
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i
		if c > exhaustiveLimit {
			return exhaustiveLimit + 1
		}
	}
	return c
}
