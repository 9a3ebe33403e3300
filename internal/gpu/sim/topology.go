package sim

import "github.com/gpunode/gpunode/internal/gpu"

// wire sets every GPU's Peers from the scenario's layout, as on an HGX board: GPUs 2k and
// 2k+1 of one NUMA node share a PCIe switch, other GPUs of one NUMA node meet at the
// node's host bridges, GPUs of different NUMA nodes at the system interconnect (GPUs
// without NUMA information meet at a host bridge). Two GPUs that both have NVLinks reach
// each other through the NVSwitches with the smaller of their link counts. The topology
// is the wiring: faults (a link going down) do not change it.
func wire(devs []gpu.Device) {
	for i := range devs {
		peers := make([]gpu.Peer, 0, len(devs)-1)
		for j := range devs {
			if j == i {
				continue
			}
			peers = append(peers, gpu.Peer{Index: devs[j].Index, PCIe: pciePath(devs[i], devs[j]),
				NVLinks: min(len(devs[i].NVLinks), len(devs[j].NVLinks))})
		}
		devs[i].Peers = peers
	}
}

func pciePath(a, b gpu.Device) gpu.PCIePath {
	switch {
	case a.NUMANode < 0 || b.NUMANode < 0:
		return gpu.PCIeHostBridge
	case a.NUMANode != b.NUMANode:
		return gpu.PCIeSystem
	case a.Index/2 == b.Index/2:
		return gpu.PCIeSingleSwitch
	}
	return gpu.PCIeNUMANode
}
