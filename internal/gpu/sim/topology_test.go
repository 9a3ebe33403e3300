package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestSimulatedGPUsAreWiredAsOnAnHGXBoard(t *testing.T) {
	cases := []struct {
		name      string
		preset    string
		i, j      int
		wantPath  gpu.PCIePath
		wantLinks int
	}{
		{"two H100s behind one PCIe switch are NVLinked through the switches", "h100x8", 0, 1, gpu.PCIeSingleSwitch, 18},
		{"two H100s of one NUMA node meet at its host bridges", "h100x8", 1, 2, gpu.PCIeNUMANode, 18},
		{"two A100s of two NUMA nodes meet at the system interconnect, NVLinked", "a100x8", 3, 4, gpu.PCIeSystem, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := PresetScenario(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			peers := s.Devices[c.i].Peers
			if len(peers) != len(s.Devices)-1 {
				t.Fatalf("GPU %d has %d peers, want %d", c.i, len(peers), len(s.Devices)-1)
			}
			for _, p := range peers {
				if p.Index == c.j && (p.PCIe != c.wantPath || p.NVLinks != c.wantLinks) {
					t.Errorf("GPU %d to %d = %+v, want %s and %d links", c.i, c.j, p, c.wantPath, c.wantLinks)
				}
			}
		})
	}
}

func TestAScenarioWithoutNVLinkHasPCIeOnlyPeers(t *testing.T) {
	s, err := Parse("pcie.yaml", []byte("apiVersion: gpunode.dev/sim/v1\npreset: h100x8\ncount: 4\ngpus:\n- index: 0\n  nvlinks: {count: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Devices[0].Peers {
		if p.NVLinks != 0 {
			t.Errorf("GPU 0 without NVLink has %d links to GPU %d", p.NVLinks, p.Index)
		}
	}
	if len(s.Devices[3].Peers) != 3 || s.Devices[3].Peers[1].NVLinks != 18 {
		t.Errorf("GPU 3 peers %+v, want 3 with GPU 1 at 18 links", s.Devices[3].Peers)
	}
}

func TestAScenarioPartitionsAGPUIntoMIGDevices(t *testing.T) {
	head := "apiVersion: gpunode.dev/sim/v1\npreset: a100x8\ngpus:\n- index: 2\n"
	cases := []struct {
		name    string
		gpu     string
		want    []string
		wantErr string
	}{
		{"profiles become MIG devices with their own UUIDs", "  mig: {enabled: true, devices: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}\n", []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, ""},
		{"MIG devices without MIG mode are refused with their line", "  mig: {devices: [1g.10gb]}\n", nil, "pcie.yaml: line 5: MIG devices need mig.enabled"},
		{"a malformed profile name is refused", "  mig: {enabled: true, devices: [1g10gb]}\n", nil, `MIG profile "1g10gb"`},
		{"more than seven MIG devices are refused", "  mig: {enabled: true, devices: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]}\n", nil, "at most 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("pcie.yaml", []byte(head+c.gpu))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrInvalidScenario) {
					t.Fatalf("Parse error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			migs := s.Devices[2].MIGDevices
			seen := map[string]bool{}
			for i, m := range migs {
				if m.Profile != c.want[i] || !strings.HasPrefix(m.UUID, "MIG-") || seen[m.UUID] || m.GPUInstance != i+1 {
					t.Errorf("MIG device %d = %+v, want profile %s, a fresh MIG- UUID and GPU instance %d", i, m, c.want[i], i+1)
				}
				seen[m.UUID] = true
			}
			if len(migs) != len(c.want) {
				t.Errorf("%d MIG devices, want %d", len(migs), len(c.want))
			}
		})
	}
}
