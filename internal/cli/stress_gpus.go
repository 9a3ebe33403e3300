package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/stress"
)

// parseGPUList reads --gpus: "all" (nil) or comma-separated indexes without duplicates.
func parseGPUList(s string) ([]int, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "all" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, usageErrorf("--gpus %q: %q is not a GPU index (want all or indexes like 0,1)", s, f)
		}
		if slices.Contains(out, n) {
			return nil, usageErrorf("--gpus %q: GPU %d is listed twice", s, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// selectGPUs keeps the GPUs whose index is in want (all for nil), in want's
// order; an index the node does not have is a usage error naming the flag.
// Without any GPU listed (no driver) there is nothing to select from: the
// plan's GPUError reports that.
func selectGPUs(all []stress.GPU, want []int, flag string) ([]stress.GPU, error) {
	if want == nil || len(all) == 0 {
		return all, nil
	}
	out := make([]stress.GPU, 0, len(want))
	for _, w := range want {
		i := slices.IndexFunc(all, func(g stress.GPU) bool { return g.Index == w })
		if i < 0 {
			return nil, usageErrorf("--gpus %q: no GPU %d on this node (indexes %s)", flag, w, gpuIndexes(all))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func gpuIndexes(gs []stress.GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(s, ", ")
}

// portGPUs are the GPUs of a snapshot, the CUDA ordinal taken as the index.
func portGPUs(snap *gpu.Snapshot) []stress.GPU {
	out := make([]stress.GPU, 0, len(snap.Devices))
	for _, d := range snap.Devices {
		out = append(out, portGPU(d, d.Index))
	}
	return out
}

func portGPU(d gpu.Device, ordinal int) stress.GPU {
	g := stress.GPU{Index: d.Index, Ordinal: ordinal, Name: d.Name, BusID: d.PCI.BusID, UUID: d.UUID, Serial: d.Serial}
	if d.Err(gpu.FieldPCIeLink) == nil {
		g.PCIeGenMax, g.PCIeWidthMax = d.PCI.LinkGenMax, d.PCI.LinkWidthMax
		g.PCIeGen, g.PCIeWidth = d.PCI.LinkGen, d.PCI.LinkWidth
	}
	return g
}

// cudaGPUs are CUDA's devices alone (no NVML): index = ordinal, link unknown.
func cudaGPUs(devs []stress.DeviceInfo) []stress.GPU {
	out := make([]stress.GPU, 0, len(devs))
	for _, d := range devs {
		out = append(out, stress.GPU{Index: d.Ordinal, Ordinal: d.Ordinal, Name: d.Name, BusID: d.BusID})
	}
	return out
}

// matchGPUs pairs each NVML device with the CUDA device at the same PCI bus id
// (CUDA numbers devices fastest first, NVML by bus id). A device CUDA does not
// see (CUDA_VISIBLE_DEVICES) is left out; a bus id that cannot be read is an error.
func matchGPUs(snap *gpu.Snapshot, devs []stress.DeviceInfo) ([]stress.GPU, error) {
	byBus := map[stress.BusID]int{}
	for _, d := range devs {
		id, err := stress.ParseBusID(d.BusID)
		if err != nil {
			return nil, fmt.Errorf("CUDA device %d: %w", d.Ordinal, err)
		}
		byBus[id] = d.Ordinal
	}
	var out []stress.GPU
	for _, d := range snap.Devices {
		id, err := stress.ParseBusID(d.PCI.BusID)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", d.Index, err)
		}
		if ord, ok := byBus[id]; ok {
			out = append(out, portGPU(d, ord))
		}
	}
	return out, nil
}
