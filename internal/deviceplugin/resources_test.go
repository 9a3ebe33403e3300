package deviceplugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/labels"
)

// node is four GPUs; those listed in mig are in MIG mode with the given profiles.
func node(mig map[int][]string) []gpu.Device {
	var out []gpu.Device
	for i := range 4 {
		d := gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i), NUMANode: i / 2}
		if profiles, ok := mig[i]; ok {
			d.MIG = gpu.MIG{Capable: true, Enabled: true}
			for j, p := range profiles {
				d.MIGDevices = append(d.MIGDevices, gpu.MIGDevice{Index: j, UUID: fmt.Sprintf("MIG-%d-%d", i, j), Profile: p})
			}
		}
		out = append(out, d)
	}
	return out
}

// summary is "name: id id ...; name: ..." of resources.
func summary(rs []Resource) string {
	var parts []string
	for _, r := range rs {
		var ids []string
		for _, d := range r.Devices {
			ids = append(ids, d.ID)
		}
		parts = append(parts, r.Name+": "+strings.Join(ids, " "))
	}
	return strings.Join(parts, "; ")
}

func TestResourcesFollowTheMIGStrategy(t *testing.T) {
	mixedNode := node(map[int][]string{1: {"3g.40gb", "1g.10gb"}, 3: {"1g.10gb"}})
	singleNode := node(map[int][]string{0: {"1g.10gb"}, 1: {"1g.10gb", "1g.10gb"}, 2: {}, 3: {"1g.10gb"}})
	cases := []struct {
		name     string
		devs     []gpu.Device
		strategy string
		want     string
		wantErr  string
	}{
		{"none advertises every GPU whole, in MIG mode or not", mixedNode, MIGNone, "nvidia.com/gpu: GPU-0 GPU-1 GPU-2 GPU-3", ""},
		{"an empty strategy is none", mixedNode, "", "nvidia.com/gpu: GPU-0 GPU-1 GPU-2 GPU-3", ""},
		{"mixed advertises whole GPUs and each MIG profile as its own resource", mixedNode, MIGMixed,
			"nvidia.com/gpu: GPU-0 GPU-2; nvidia.com/mig-1g.10gb: MIG-1-1 MIG-3-0; nvidia.com/mig-3g.40gb: MIG-1-0", ""},
		{"single advertises the MIG devices as nvidia.com/gpu", singleNode, MIGSingle, "nvidia.com/gpu: MIG-0-0 MIG-1-0 MIG-1-1 MIG-3-0", ""},
		{"single without any GPU in MIG mode advertises whole GPUs", node(nil), MIGSingle, "nvidia.com/gpu: GPU-0 GPU-1 GPU-2 GPU-3", ""},
		{"single refuses a GPU outside MIG mode beside MIG GPUs", mixedNode, MIGSingle, "", "GPU 0 is not in MIG mode"},
		{"single refuses two profiles", node(map[int][]string{0: {"1g.10gb"}, 1: {"2g.20gb"}, 2: {}, 3: {}}), MIGSingle, "", "MIG profile 2g.20gb besides 1g.10gb"},
		{"an unknown strategy is refused", mixedNode, "split", "", `MIG strategy "split"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Resources(c.devs, Sharing{MIGStrategy: c.strategy})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Resources error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || summary(rs) != c.want {
				t.Errorf("Resources = %q, %v; want %q", summary(rs), err, c.want)
			}
		})
	}
}

func TestAMIGDeviceThatCannotBeReadIsNotAdvertised(t *testing.T) {
	devs := node(map[int][]string{1: {"1g.10gb"}})
	devs[1].SetErr(gpu.FieldMIG, fmt.Errorf("MIG device 0: %w", gpu.ErrGPULost))
	devs[1].MIGDevices = nil
	devs[2].SetErr(gpu.FieldUUID, gpu.ErrGPULost)
	rs, err := Resources(devs, Sharing{MIGStrategy: MIGMixed})
	if err != nil || summary(rs) != "nvidia.com/gpu: GPU-0 GPU-3" {
		t.Errorf("Resources = %q, %v; want only GPUs 0 and 3 (GPU 1's MIG devices unreadable, GPU 2 without UUID)", summary(rs), err)
	}
}

func TestTimeSlicingReplicatesTheNamedResources(t *testing.T) {
	devs := node(map[int][]string{3: {"1g.10gb"}})[1:]
	cases := []struct {
		name string
		ts   TimeSlicing
		want string
	}{
		{"replicas keep the resource name and number <uuid>::<n>", TimeSlicing{Resources: []Replicated{{Name: ResourceName, Replicas: 2}}},
			"nvidia.com/gpu: GPU-1::0 GPU-1::1 GPU-2::0 GPU-2::1; nvidia.com/mig-1g.10gb: MIG-3-0"},
		{"renameByDefault advertises <name>.shared", TimeSlicing{RenameByDefault: true, Resources: []Replicated{{Name: "nvidia.com/mig-1g.10gb", Replicas: 3}}},
			"nvidia.com/gpu: GPU-1 GPU-2; nvidia.com/mig-1g.10gb.shared: MIG-3-0::0 MIG-3-0::1 MIG-3-0::2"},
		{"an explicit rename wins over renameByDefault", TimeSlicing{RenameByDefault: true, Resources: []Replicated{{Name: ResourceName, Rename: "example.com/gpu-slice", Replicas: 2}}},
			"example.com/gpu-slice: GPU-1::0 GPU-1::1 GPU-2::0 GPU-2::1; nvidia.com/mig-1g.10gb: MIG-3-0"},
		{"one replica is no sharing", TimeSlicing{RenameByDefault: true, Resources: []Replicated{{Name: ResourceName, Replicas: 1}}},
			"nvidia.com/gpu: GPU-1 GPU-2; nvidia.com/mig-1g.10gb: MIG-3-0"},
		{"a resource the node lacks is ignored", TimeSlicing{Resources: []Replicated{{Name: "nvidia.com/mig-7g.80gb", Replicas: 2}}},
			"nvidia.com/gpu: GPU-1 GPU-2; nvidia.com/mig-1g.10gb: MIG-3-0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Resources(devs, Sharing{MIGStrategy: MIGMixed, TimeSlicing: c.ts})
			if err != nil || summary(rs) != c.want {
				t.Errorf("Resources = %q, %v; want %q", summary(rs), err, c.want)
			}
		})
	}
}

func TestTheSharingLabelsMatchTheConfiguration(t *testing.T) {
	cases := []struct {
		name string
		s    Sharing
		want labels.Sharing
	}{
		{"no time-slicing is no sharing", Sharing{}, labels.Sharing{}},
		{"replicas of nvidia.com/gpu are time-slicing, not renamed", Sharing{TimeSlicing: TimeSlicing{Resources: []Replicated{{Name: ResourceName, Replicas: 4}}}},
			labels.Sharing{Strategy: labels.SharingTimeSlicing, Replicas: 4}},
		{"renameByDefault marks the resource renamed (no -SHARED product)", Sharing{TimeSlicing: TimeSlicing{RenameByDefault: true, Resources: []Replicated{{Name: ResourceName, Replicas: 2}}}},
			labels.Sharing{Strategy: labels.SharingTimeSlicing, Replicas: 2, Renamed: true}},
		{"sharing only a MIG profile leaves the GPU labels unshared", Sharing{TimeSlicing: TimeSlicing{Resources: []Replicated{{Name: "nvidia.com/mig-1g.10gb", Replicas: 2}}}}, labels.Sharing{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.LabelConfig().Sharing; got != c.want {
				t.Errorf("LabelConfig().Sharing = %+v, want %+v", got, c.want)
			}
		})
	}
	// The labels package turns the configuration into the product's -SHARED suffix.
	snap := &gpu.Snapshot{Driver: gpu.Driver{Vendor: "nvidia", Version: "580.95.05", CUDAVersion: "13.0"},
		Devices: []gpu.Device{{Index: 0, UUID: "GPU-0", Name: "NVIDIA H100 80GB HBM3", Memory: gpu.Memory{TotalMiB: 81559}}}}
	shared := Sharing{TimeSlicing: TimeSlicing{Resources: []Replicated{{Name: ResourceName, Replicas: 4}}}}
	got := labels.Discovery(snap, labels.NodeInfo{}, shared.LabelConfig())
	if got[labels.KeyGPUProduct] != "NVIDIA-H100-80GB-HBM3-SHARED" || got[labels.KeyGPUReplicas] != "4" || got[labels.KeyGPUSharingStrategy] != "time-slicing" {
		t.Errorf("labels product %q replicas %q strategy %q; want the -SHARED product, 4, time-slicing",
			got[labels.KeyGPUProduct], got[labels.KeyGPUReplicas], got[labels.KeyGPUSharingStrategy])
	}
}

func TestSocketNamesAreDistinctPerResource(t *testing.T) {
	names := []string{ResourceName, "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb", "example.com/gpu-slice"}
	var socks []string
	for _, n := range names {
		socks = append(socks, socketName(n))
	}
	want := []string{"gpunode-gpu.sock", "gpunode-gpu.shared.sock", "gpunode-mig-1g.10gb.sock", "gpunode-example.com-gpu-slice.sock"}
	if !slices.Equal(socks, want) {
		t.Errorf("sockets %v, want %v", socks, want)
	}
}
