package nvml

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// pciePaths maps NVML's topology levels onto the port's paths.
var pciePaths = map[gonvml.GpuTopologyLevel]gpu.PCIePath{
	gonvml.TOPOLOGY_INTERNAL:   gpu.PCIeSameBoard,
	gonvml.TOPOLOGY_SINGLE:     gpu.PCIeSingleSwitch,
	gonvml.TOPOLOGY_MULTIPLE:   gpu.PCIeMultipleSwitch,
	gonvml.TOPOLOGY_HOSTBRIDGE: gpu.PCIeHostBridge,
	gonvml.TOPOLOGY_NODE:       gpu.PCIeNUMANode,
	gonvml.TOPOLOGY_SYSTEM:     gpu.PCIeSystem,
}

// readTopology fills every device's Peers: the common PCIe ancestor of each pair
// (nvmlDeviceGetTopologyCommonAncestor) and the NVLinks between them. A link whose remote
// end is a GPU (nvmlDeviceGetNvLinkRemoteDeviceType) counts for that GPU, found by the
// remote PCI bus id; a link to an NVSwitch reaches every GPU that also has switch links,
// so two such GPUs count the smaller of their switch-link counts. A driver or mock without
// the topology call leaves Peers empty (unknown) and records nothing; another failure is
// recorded under gpu.FieldTopology. Devices that could not be opened are left out.
//
// The answer is cached: it is read again only when a GPU's UUID, bus id or set of active
// links changes, so a snapshot every few seconds does not repeat n² topology calls.
func (b *Backend) readTopology(devs []gpu.Device) {
	key := topologyKey(devs)
	if peers, ok := b.topo.get(key); ok {
		for i := range devs {
			devs[i].Peers = slices.Clone(peers[i])
		}
		return
	}
	b.readTopologyNow(devs)
	peers := make([][]gpu.Peer, len(devs))
	for i := range devs {
		if devs[i].Err(gpu.FieldTopology) != nil {
			return // not cached: read again next time
		}
		peers[i] = slices.Clone(devs[i].Peers)
	}
	b.topo.put(key, peers)
}

// topologyCache holds the last topology read and what it was read for.
type topologyCache struct {
	mu    sync.Mutex
	key   string
	peers [][]gpu.Peer
}

func (c *topologyCache) get(key string) ([][]gpu.Peer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peers, c.peers != nil && c.key == key
}

func (c *topologyCache) put(key string, peers [][]gpu.Peer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.peers = key, peers
}

// topologyKey names the GPUs and their active links.
func topologyKey(devs []gpu.Device) string {
	var sb strings.Builder
	for _, d := range devs {
		fmt.Fprintf(&sb, "%d/%s/%s/%v;", d.Index, d.UUID, d.PCI.BusID, d.Errors[gpu.FieldDevice].Message != "")
		for _, l := range d.NVLinks {
			if l.Active {
				fmt.Fprintf(&sb, "%d,", l.Link)
			}
		}
	}
	return sb.String()
}

// readTopologyNow reads the topology from NVML.
func (b *Backend) readTopologyNow(devs []gpu.Device) {
	handles := make([]gonvml.Device, len(devs))
	byBus := map[string]int{}
	direct := make([]map[int]int, len(devs))
	switched := make([]int, len(devs))
	for i := range devs {
		d := &devs[i]
		if d.Err(gpu.FieldDevice) != nil || d.Err(gpu.FieldUUID) != nil {
			continue
		}
		h, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) { return b.lib.DeviceGetHandleByIndex(d.Index) })
		if err != nil || h == nil {
			continue
		}
		handles[i] = h
		if d.PCI.BusID != "" {
			byBus[normalBusID(d.PCI.BusID)] = i
		}
	}
	for i := range devs {
		if handles[i] == nil {
			continue
		}
		direct[i], switched[i] = b.links(handles[i], devs[i], byBus)
	}
	for i := range devs {
		b.peers(handles, devs, i, direct, switched)
	}
}

// peers fills devs[i].Peers from the common ancestors and the link counts.
func (b *Backend) peers(handles []gonvml.Device, devs []gpu.Device, i int, direct []map[int]int, switched []int) {
	if handles[i] == nil {
		return
	}
	r := &reader{b: b, dev: handles[i], d: &devs[i]}
	var peers []gpu.Peer
	for j := range devs {
		if j == i || handles[j] == nil {
			continue
		}
		lvl, err := val(r, "nvmlDeviceGetTopologyCommonAncestor", func() (gonvml.GpuTopologyLevel, gonvml.Return) {
			return handles[i].GetTopologyCommonAncestor(handles[j])
		})
		if errors.Is(err, gpu.ErrNotSupported) {
			return
		}
		if err != nil {
			r.ok(gpu.FieldTopology, fmt.Errorf("GPU %d to GPU %d: %w", devs[i].Index, devs[j].Index, err))
			return
		}
		path, known := pciePaths[lvl]
		if !known {
			r.ok(gpu.FieldTopology, fmt.Errorf("GPU %d to GPU %d: unknown topology level %d", devs[i].Index, devs[j].Index, lvl))
			return
		}
		n := direct[i][j]
		if switched[i] > 0 && switched[j] > 0 {
			n += min(switched[i], switched[j])
		}
		peers = append(peers, gpu.Peer{Index: devs[j].Index, PCIe: path, NVLinks: n})
	}
	devs[i].Peers = peers
}

// links counts a device's active NVLinks per peer GPU and to NVSwitches. Links that cannot
// be followed are not counted.
func (b *Backend) links(h gonvml.Device, d gpu.Device, byBus map[string]int) (map[int]int, int) {
	r := &reader{b: b, dev: h, d: &gpu.Device{}}
	direct := map[int]int{}
	switched := 0
	for _, l := range d.NVLinks {
		if !l.Active {
			continue
		}
		kind, err := val(r, "nvmlDeviceGetNvLinkRemoteDeviceType", func() (gonvml.IntNvLinkDeviceType, gonvml.Return) {
			return h.GetNvLinkRemoteDeviceType(l.Link)
		})
		if err != nil {
			continue
		}
		switch kind {
		case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
			switched++
		case gonvml.NVLINK_DEVICE_TYPE_GPU:
			pci, err := val(r, "nvmlDeviceGetNvLinkRemotePciInfo", func() (gonvml.PciInfo, gonvml.Return) {
				return h.GetNvLinkRemotePciInfo(l.Link)
			})
			if err != nil {
				continue
			}
			if j, ok := byBus[normalBusID(cString(pci.BusId[:]))]; ok {
				direct[j]++
			}
		}
	}
	return direct, switched
}

// normalBusID makes "0000:18:00.0" and "00000000:18:00.0" compare equal.
func normalBusID(id string) string {
	id = strings.ToLower(id)
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) < 8 {
		id = strings.Repeat("0", 8-len(dom)) + dom + ":" + rest
	}
	return id
}
