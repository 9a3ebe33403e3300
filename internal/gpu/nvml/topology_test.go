package nvml

import (
	"fmt"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
)

// wire makes srv's eight GPUs a DGX: each on its own bus, 0-3 on one NUMA node and 4-7 on
// the other, pairs (0,1), (2,3), ... behind one PCIe switch, every link but those listed
// in direct going to an NVSwitch; direct[i] is the GPU that link 0 of GPU i reaches.
func wire(srv *server.Server, links int, direct map[int]int) {
	bus := func(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10) }
	for i, dv := range srv.Devices {
		d := dv.(*server.Device)
		healthy(d)
		d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			p := gonvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
			for k, c := range bus(i) {
				p.BusId[k] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
			if l >= links {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
			if _, ok := direct[i]; ok && l == 0 {
				return gonvml.NVLINK_DEVICE_TYPE_GPU, gonvml.SUCCESS
			}
			return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(int) (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			for k, c := range "0000:" + bus(direct[i])[9:] { // the short domain form
				p.BusId[k] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		d.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
			j := other.(*server.Device).Index
			switch {
			case i/2 == j/2:
				return gonvml.TOPOLOGY_SINGLE, gonvml.SUCCESS
			case i/4 == j/4:
				return gonvml.TOPOLOGY_NODE, gonvml.SUCCESS
			}
			return gonvml.TOPOLOGY_SYSTEM, gonvml.SUCCESS
		}
	}
}

func TestTopologyIsReadForEveryPairOfGPUs(t *testing.T) {
	cases := []struct {
		name      string
		links     int
		direct    map[int]int
		i, j      int
		wantPath  gpu.PCIePath
		wantLinks int
	}{
		{"GPUs behind one PCIe switch reach each other through all their NVSwitch links", 18, nil, 0, 1, gpu.PCIeSingleSwitch, 18},
		{"GPUs of one NUMA node share the node's host bridges", 18, nil, 1, 2, gpu.PCIeNUMANode, 18},
		{"GPUs of two NUMA nodes meet at the system interconnect", 18, nil, 3, 4, gpu.PCIeSystem, 18},
		{"a direct GPU-to-GPU link is counted once for that peer, on top of the switch links", 4, map[int]int{0: 5, 5: 0}, 0, 5, gpu.PCIeSystem, 4},
		{"GPUs without NVLink are linked by PCIe only", 0, nil, 6, 7, gpu.PCIeSingleSwitch, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := dgxh100.New()
			wire(srv, c.links, c.direct)
			s := snapshot(t, srv)
			d := s.Devices[c.i]
			if e := d.Err(gpu.FieldTopology); e != nil {
				t.Fatalf("topology error %v", e)
			}
			if len(d.Peers) != 7 {
				t.Fatalf("GPU %d has %d peers, want 7: %+v", c.i, len(d.Peers), d.Peers)
			}
			for _, p := range d.Peers {
				if p.Index == c.j && (p.PCIe != c.wantPath || p.NVLinks != c.wantLinks) {
					t.Errorf("GPU %d to %d = %+v, want %s with %d NVLinks", c.i, c.j, p, c.wantPath, c.wantLinks)
				}
			}
		})
	}
}

func TestTopologyIsCachedUntilTheLinksChange(t *testing.T) {
	srv := dgxh100.New()
	wire(srv, 18, nil)
	calls := 0
	d0 := srv.Devices[0].(*server.Device)
	inner := d0.GetTopologyCommonAncestorFunc
	d0.GetTopologyCommonAncestorFunc = func(o gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		calls++
		return inner(o)
	}
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	for range 3 {
		if _, err := b.Snapshot(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 7 {
		t.Errorf("three snapshots made %d topology calls from GPU 0, want 7 (one read, then cached)", calls)
	}
	d0.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l >= 18 {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		if l == 3 {
			return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	s, err := b.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if calls != 14 || s.Devices[0].Peers[0].NVLinks != 17 {
		t.Errorf("after a link went down: %d calls, GPU 0 to 1 has %d links; want 14 and 17", calls, s.Devices[0].Peers[0].NVLinks)
	}
}

func TestATopologyCallThatFailsIsRecordedAndAMissingOneIsNot(t *testing.T) {
	srv := dgxh100.New()
	wire(srv, 18, nil)
	srv.Devices[2].(*server.Device).GetTopologyCommonAncestorFunc = func(gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		return 0, gonvml.ERROR_UNKNOWN
	}
	srv.Devices[3].(*server.Device).GetTopologyCommonAncestorFunc = nil // the mock panics: not implemented
	s := snapshot(t, srv)
	if e := s.Devices[2].Err(gpu.FieldTopology); e == nil || e.NotSupported || len(s.Devices[2].Peers) != 0 {
		t.Errorf("GPU 2: error %v, peers %v; want a failure recorded and no peers", e, s.Devices[2].Peers)
	}
	if e := s.Devices[3].Err(gpu.FieldTopology); e != nil || len(s.Devices[3].Peers) != 0 {
		t.Errorf("GPU 3: error %v, peers %v; want no error and no peers (unknown)", e, s.Devices[3].Peers)
	}
	if len(s.Devices[0].Peers) != 7 {
		t.Errorf("GPU 0 has %d peers, want 7", len(s.Devices[0].Peers))
	}
}
