package labels

import (
	"maps"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

// diffLabels reports every key whose value differs between got and want.
func diffLabels(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s missing, want %q", k, w)
		} else if g != w {
			t.Errorf("%s = %q, want %q", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %q", k, g)
		}
	}
}

func TestDiscoveryPublishesGFDLabelsForWholeNodes(t *testing.T) {
	tests := []struct {
		name string
		snap *gpu.Snapshot
		node NodeInfo
		want map[string]string
	}{
		{
			name: "an HGX H100 node with eight GPUs gets GFD's labels and values",
			snap: hgxH100(),
			node: NodeInfo{Machine: "PowerEdge XE9680"},
			want: map[string]string{
				"nvidia.com/cuda.driver-version.full":     "580.95.05",
				"nvidia.com/cuda.driver-version.major":    "580",
				"nvidia.com/cuda.driver-version.minor":    "95",
				"nvidia.com/cuda.driver-version.revision": "05",
				"nvidia.com/cuda.driver.major":            "580",
				"nvidia.com/cuda.driver.minor":            "95",
				"nvidia.com/cuda.driver.rev":              "05",
				"nvidia.com/cuda.runtime-version.full":    "13.0",
				"nvidia.com/cuda.runtime-version.major":   "13",
				"nvidia.com/cuda.runtime-version.minor":   "0",
				"nvidia.com/cuda.runtime.major":           "13",
				"nvidia.com/cuda.runtime.minor":           "0",
				"nvidia.com/gpu.product":                  "NVIDIA-H100-80GB-HBM3",
				"nvidia.com/gpu.count":                    "8",
				"nvidia.com/gpu.replicas":                 "1",
				"nvidia.com/gpu.sharing-strategy":         "none",
				"nvidia.com/gpu.memory":                   "81559",
				"nvidia.com/gpu.family":                   "hopper",
				"nvidia.com/gpu.compute.major":            "9",
				"nvidia.com/gpu.compute.minor":            "0",
				"nvidia.com/mig.capable":                  "true",
				"nvidia.com/mig.strategy":                 "none",
				"nvidia.com/gpu.machine":                  "PowerEdge-XE9680",
				"nvidia.com/gpu.mode":                     "compute",
				"nvidia.com/mps.capable":                  "false",
				"nvidia.com/vgpu.present":                 "false",
				"nvidia.com/gpu.present":                  "true",
			},
		},
		{
			name: "the single H200 without DMI product name gets no machine label",
			snap: oneH200(),
			want: map[string]string{
				"nvidia.com/cuda.driver-version.full":     "580.159.04",
				"nvidia.com/cuda.driver-version.major":    "580",
				"nvidia.com/cuda.driver-version.minor":    "159",
				"nvidia.com/cuda.driver-version.revision": "04",
				"nvidia.com/cuda.driver.major":            "580",
				"nvidia.com/cuda.driver.minor":            "159",
				"nvidia.com/cuda.driver.rev":              "04",
				"nvidia.com/cuda.runtime-version.full":    "13.0",
				"nvidia.com/cuda.runtime-version.major":   "13",
				"nvidia.com/cuda.runtime-version.minor":   "0",
				"nvidia.com/cuda.runtime.major":           "13",
				"nvidia.com/cuda.runtime.minor":           "0",
				"nvidia.com/gpu.product":                  "NVIDIA-H200",
				"nvidia.com/gpu.count":                    "1",
				"nvidia.com/gpu.replicas":                 "1",
				"nvidia.com/gpu.sharing-strategy":         "none",
				"nvidia.com/gpu.memory":                   "143771",
				"nvidia.com/gpu.family":                   "hopper",
				"nvidia.com/gpu.compute.major":            "9",
				"nvidia.com/gpu.compute.minor":            "0",
				"nvidia.com/mig.capable":                  "true",
				"nvidia.com/mig.strategy":                 "none",
				"nvidia.com/gpu.mode":                     "compute",
				"nvidia.com/mps.capable":                  "false",
				"nvidia.com/vgpu.present":                 "false",
				"nvidia.com/gpu.present":                  "true",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffLabels(t, Discovery(tt.snap, tt.node, Config{}), tt.want)
		})
	}
}

func TestDiscoveryPublishesNothingWithoutNVIDIAGPUs(t *testing.T) {
	amd := oneH200()
	amd.Driver.Vendor = "amd"
	tests := []struct {
		name string
		snap *gpu.Snapshot
	}{
		{"a nil snapshot gives no labels", nil},
		{"a snapshot without devices gives no labels", &gpu.Snapshot{Driver: gpu.Driver{Version: "580.95.05"}}},
		{"another vendor's GPUs get no nvidia.com labels", amd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Discovery(tt.snap, NodeInfo{Machine: "x"}, Config{}); len(got) != 0 {
				t.Errorf("Discovery = %v, want no labels", got)
			}
		})
	}
}

func TestDiscoveryCliqueOnlyWhenEveryGPUAgrees(t *testing.T) {
	const want = "2f6c5a1e-8b7d-4c3a-9e21-0a4b6c8d9e10.32766"
	tests := []struct {
		name   string
		change func(s *gpu.Snapshot)
		want   string // "" = no label
	}{
		{"four GPUs in one completed clique get the clique label", func(*gpu.Snapshot) {}, want},
		{"a completed registration without a status still counts", func(s *gpu.Snapshot) {
			for i := range s.Devices {
				s.Devices[i].Fabric.Status = ""
			}
		}, want},
		{"one GPU in another clique removes the label", func(s *gpu.Snapshot) { s.Devices[3].Fabric.CliqueID = 1 }, ""},
		{"one GPU in another cluster removes the label", func(s *gpu.Snapshot) {
			s.Devices[0].Fabric.ClusterUUID = "00000000-0000-0000-0000-000000000001"
		}, ""},
		{"one GPU still registering removes the label", func(s *gpu.Snapshot) { s.Devices[2].Fabric.State = "in-progress" }, ""},
		{"one GPU whose registration failed removes the label", func(s *gpu.Snapshot) {
			s.Devices[1].Fabric.Status = "NVML_ERROR_INSUFFICIENT_RESOURCES"
		}, ""},
		{"one GPU whose fabric could not be read removes the label", func(s *gpu.Snapshot) {
			s.Devices[1].SetErr(gpu.FieldFabric, errReadFailed)
		}, ""},
		{"a completed fabric without a cluster UUID gives no label", func(s *gpu.Snapshot) {
			for i := range s.Devices {
				s.Devices[i].Fabric.ClusterUUID = ""
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := gb200Tray()
			tt.change(snap)
			got, ok := Discovery(snap, NodeInfo{}, Config{})[KeyGPUClique]
			if tt.want == "" && ok {
				t.Errorf("gpu.clique = %q, want no label", got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("gpu.clique = %q, want %q", got, tt.want)
			}
		})
	}
	if _, ok := Discovery(hgxH100(), NodeInfo{}, Config{})[KeyGPUClique]; ok {
		t.Error("an H100 node without fabric got a gpu.clique label")
	}
}

func TestDiscoverySharingLabels(t *testing.T) {
	tests := []struct {
		name                               string
		sharing                            Sharing
		migEnabled                         bool
		product, replicas, strategy, mpsOK string
	}{
		{"an unshared GPU has one replica and no suffix", Sharing{},
			false, "NVIDIA-H100-80GB-HBM3", "1", "none", "false"},
		{"time-slicing with four replicas adds the SHARED suffix", Sharing{Strategy: SharingTimeSlicing, Replicas: 4},
			false, "NVIDIA-H100-80GB-HBM3-SHARED", "4", "time-slicing", "false"},
		{"a renamed time-sliced resource keeps the plain product", Sharing{Strategy: SharingTimeSlicing, Replicas: 4, Renamed: true},
			false, "NVIDIA-H100-80GB-HBM3", "4", "time-slicing", "false"},
		{"time-slicing with one replica is not sharing", Sharing{Strategy: SharingTimeSlicing, Replicas: 1},
			false, "NVIDIA-H100-80GB-HBM3", "1", "none", "false"},
		{"MPS with two replicas is shared and MPS-capable", Sharing{Strategy: SharingMPS, Replicas: 2},
			false, "NVIDIA-H100-80GB-HBM3-SHARED", "2", "mps", "true"},
		{"replicas without a strategy are ignored", Sharing{Replicas: 4},
			false, "NVIDIA-H100-80GB-HBM3", "1", "none", "false"},
		{"GPUs with MIG enabled are labelled without sharing", Sharing{Strategy: SharingMPS, Replicas: 2},
			true, "NVIDIA-H100-80GB-HBM3", "0", "none", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := hgxH100()
			for i := range snap.Devices {
				snap.Devices[i].MIG.Enabled = tt.migEnabled
			}
			got := Discovery(snap, NodeInfo{}, Config{Sharing: tt.sharing})
			diffLabels(t, map[string]string{
				KeyGPUProduct: got[KeyGPUProduct], KeyGPUReplicas: got[KeyGPUReplicas],
				KeyGPUSharingStrategy: got[KeyGPUSharingStrategy], KeyMPSCapable: got[KeyMPSCapable],
			}, map[string]string{
				KeyGPUProduct: tt.product, KeyGPUReplicas: tt.replicas,
				KeyGPUSharingStrategy: tt.strategy, KeyMPSCapable: tt.mpsOK,
			})
		})
	}
}

func TestDiscoveryLeavesOutWhatCouldNotBeRead(t *testing.T) {
	tests := []struct {
		name    string
		change  func(s *gpu.Snapshot)
		missing []string
		want    map[string]string
	}{
		{"an unreadable memory size drops gpu.memory only", func(s *gpu.Snapshot) {
			s.Devices[0].SetErr(gpu.FieldMemory, errReadFailed)
		}, []string{KeyGPUMemory}, map[string]string{KeyGPUProduct: "NVIDIA-H100-80GB-HBM3"}},
		{"an unreadable compute capability drops family and compute labels", func(s *gpu.Snapshot) {
			s.Devices[0].SetErr(gpu.FieldComputeCap, errReadFailed)
		}, []string{KeyGPUFamily, KeyGPUComputeMajor, KeyGPUComputeMinor}, map[string]string{KeyGPUCount: "8"}},
		{"an unopenable first GPU makes the second the reference and is not counted", func(s *gpu.Snapshot) {
			s.Devices[0] = gpu.Device{Index: 0}
			s.Devices[0].SetErr(gpu.FieldDevice, gpu.ErrGPULost)
		}, nil, map[string]string{KeyGPUProduct: "NVIDIA-H100-80GB-HBM3", KeyGPUCount: "7"}},
		{"a driver version that failed to read drops the driver labels", func(s *gpu.Snapshot) {
			s.Errors = map[gpu.Field]gpu.FieldError{gpu.FieldDriverVersion: gpu.NewFieldError(errReadFailed)}
		}, []string{KeyDriverVersionFull, KeyDriverMajor}, map[string]string{KeyRuntimeVersionFull: "13.0"}},
		{"an unknown compute capability is GFD's undefined family", func(s *gpu.Snapshot) {
			s.Devices[0].ComputeCapability = gpu.ComputeCapability{Major: 11, Minor: 0}
		}, nil, map[string]string{KeyGPUFamily: "undefined", KeyGPUComputeMajor: "11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := hgxH100()
			tt.change(snap)
			got := Discovery(snap, NodeInfo{}, Config{})
			for _, k := range tt.missing {
				if v, ok := got[k]; ok {
					t.Errorf("%s = %q, want no label", k, v)
				}
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestDiscoveryNodeLabels(t *testing.T) {
	tests := []struct {
		name string
		node NodeInfo
		cfg  Config
		want map[string]string // "" = absent
	}{
		{"a machine name with punctuation becomes a valid value",
			NodeInfo{Machine: "Standard PC (Q35 + ICH9, 2009)"}, Config{},
			map[string]string{KeyGPUMachine: "Standard-PC-Q35-ICH9-2009"}},
		{"a machine name of only punctuation is left out",
			NodeInfo{Machine: " (+) "}, Config{}, map[string]string{KeyGPUMachine: ""}},
		{"graphics mode and vGPU are published as given",
			NodeInfo{GPUMode: GPUModeGraphics, VGPUPresent: true}, Config{},
			map[string]string{KeyGPUMode: "graphics", KeyVGPUPresent: "true"}},
		{"a GPU mode gpunode does not know is published as unknown",
			NodeInfo{GPUMode: "display"}, Config{}, map[string]string{KeyGPUMode: "unknown"}},
		{"the single MIG strategy is published",
			NodeInfo{}, Config{MIGStrategy: MIGStrategySingle}, map[string]string{KeyMIGStrategy: "single"}},
		{"an unknown MIG strategy is left out rather than guessed",
			NodeInfo{}, Config{MIGStrategy: "some"}, map[string]string{KeyMIGStrategy: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Discovery(oneH200(), tt.node, tt.cfg)
			for k, v := range tt.want {
				if g, ok := got[k]; v == "" && ok {
					t.Errorf("%s = %q, want no label", k, g)
				} else if v != "" && g != v {
					t.Errorf("%s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

func TestDiscoveryOnAHeterogeneousNodeDescribesTheFirstGPU(t *testing.T) {
	snap := hgxH100()
	for i := 4; i < 8; i++ {
		snap.Devices[i].Name = "NVIDIA H100 PCIe"
		snap.Devices[i].Memory.TotalMiB = 81559
	}
	got := Discovery(snap, NodeInfo{}, Config{})
	if got[KeyGPUProduct] != "NVIDIA-H100-80GB-HBM3" || got[KeyGPUCount] != "4" {
		t.Errorf("product %q count %q, want NVIDIA-H100-80GB-HBM3 and 4 (devices of the first GPU's name)",
			got[KeyGPUProduct], got[KeyGPUCount])
	}
	// Deterministic: the same snapshot always gives the same labels.
	if again := Discovery(snap, NodeInfo{}, Config{}); !maps.Equal(got, again) {
		t.Errorf("labels changed between two calls: %v vs %v", got, again)
	}
}

func TestDiscoveryValuesAreAlwaysValid(t *testing.T) {
	snap := hgxH100()
	snap.Driver.Version = "580.95.05"
	snap.Devices[0].Name = "  NVIDIA™ " + strings.Repeat("Very Long Accelerator Name ", 4) + "(rev. 2)!"
	got := Discovery(snap, NodeInfo{Machine: strings.Repeat("x", 100)}, Config{
		Sharing: Sharing{Strategy: SharingTimeSlicing, Replicas: 2},
	})
	for k, v := range got {
		if !ValidValue(v) {
			t.Errorf("%s = %q is not a valid label value", k, v)
		}
	}
	if p := got[KeyGPUProduct]; !strings.HasSuffix(p, "-SHARED") || len(p) > MaxValueLen {
		t.Errorf("product %q: want a value of at most 63 characters that keeps the -SHARED suffix", p)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"the zero config is valid", Config{}, ""},
		{"time-slicing with replicas is valid", Config{MIGStrategy: "mixed", Sharing: Sharing{Strategy: "time-slicing", Replicas: 4}}, ""},
		{"an unknown MIG strategy is rejected", Config{MIGStrategy: "all"}, `MIG strategy "all"`},
		{"an unknown sharing strategy is rejected", Config{Sharing: Sharing{Strategy: "vgpu"}}, `sharing strategy "vgpu"`},
		{"negative replicas are rejected", Config{Sharing: Sharing{Replicas: -1}}, "must not be negative"},
		{"replicas without a strategy are rejected", Config{Sharing: Sharing{Replicas: 2}}, "need strategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
