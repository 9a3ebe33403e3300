package labels

import (
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestPlatformLabels(t *testing.T) {
	mixed := hgxH100()
	for i := 4; i < 8; i++ {
		mixed.Devices[i].Name = "NVIDIA H200"
		mixed.Devices[i].Memory.TotalMiB = 143771
	}
	oneLinkDown := hgxH100()
	oneLinkDown.Devices[5].NVLinks = nil
	noArch := oneH200()
	noArch.Devices[0].SetErr(gpu.FieldArchitecture, errReadFailed)
	ada := oneH200()
	ada.Devices[0].Name, ada.Devices[0].Architecture = "NVIDIA L40S", "Ada"
	ada.Devices[0].Memory.TotalMiB = 46068

	tests := []struct {
		name string
		snap *gpu.Snapshot
		want map[string]string
	}{
		{"an HGX H100 node is eight h100-80g on NVLink", hgxH100(), map[string]string{
			KeyAcceleratorClass: "h100-80g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "hopper",
			KeyAcceleratorCount: "8", KeyAcceleratorMemoryGiB: "80", KeyInterconnect: "nvlink",
		}},
		{"a single H200 is one h200-141g on PCIe", oneH200(), map[string]string{
			KeyAcceleratorClass: "h200-141g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "hopper",
			KeyAcceleratorCount: "1", KeyAcceleratorMemoryGiB: "140", KeyInterconnect: "pcie",
		}},
		{"a GB200 tray is blackwell on NVLink", gb200Tray(), map[string]string{
			KeyAcceleratorClass: "gb200-186g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "blackwell",
			KeyAcceleratorCount: "4", KeyAcceleratorMemoryGiB: "185", KeyInterconnect: "nvlink",
		}},
		{"a node with two classes describes the first and is marked mixed", mixed, map[string]string{
			KeyAcceleratorClass: "h100-80g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "hopper",
			KeyAcceleratorCount: "4", KeyAcceleratorMemoryGiB: "80", KeyInterconnect: "nvlink",
			KeyAcceleratorMixed: "true",
		}},
		{"a GPU without active NVLink makes the node pcie", oneLinkDown, map[string]string{
			KeyAcceleratorClass: "h100-80g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "hopper",
			KeyAcceleratorCount: "8", KeyAcceleratorMemoryGiB: "80", KeyInterconnect: "pcie",
		}},
		{"an unreadable architecture falls back to the compute capability", noArch, map[string]string{
			KeyAcceleratorClass: "h200-141g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "hopper",
			KeyAcceleratorCount: "1", KeyAcceleratorMemoryGiB: "140", KeyInterconnect: "pcie",
		}},
		{"the architecture Ada is spelled ada-lovelace", ada, map[string]string{
			KeyAcceleratorClass: "l40s-48g", KeyAcceleratorVendor: "nvidia", KeyAcceleratorFamily: "ada-lovelace",
			KeyAcceleratorCount: "1", KeyAcceleratorMemoryGiB: "45", KeyInterconnect: "pcie",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffLabels(t, Platform(tt.snap, Mapping{}), tt.want)
		})
	}
}

func TestPlatformClassNeverDisappears(t *testing.T) {
	snap := oneH200()
	snap.Devices[0].Name = "NVIDIA Future X9"
	snap.Devices[0].Memory.TotalMiB = 300000
	if got := Platform(snap, Mapping{})[KeyAcceleratorClass]; got != "futurex9-293g" {
		t.Errorf("class of an unknown GPU = %q, want the derived futurex9-293g", got)
	}
}

func TestPlatformWithoutReadableGPUs(t *testing.T) {
	if got := Platform(nil, Mapping{}); len(got) != 0 {
		t.Errorf("Platform(nil) = %v, want no labels", got)
	}
	snap := oneH200()
	snap.Devices[0].SetErr(gpu.FieldDevice, gpu.ErrGPULost)
	diffLabels(t, Platform(snap, Mapping{}), map[string]string{
		KeyAcceleratorVendor: "nvidia", KeyInterconnect: "pcie",
	})
}
