package labels

import (
	"errors"

	"github.com/gpunode/gpunode/internal/gpu"
)

// hgxH100 is an HGX H100 node: 8 SXM GPUs, 18 active NVLinks each, no multi-node fabric.
func hgxH100() *gpu.Snapshot {
	snap := &gpu.Snapshot{
		Backend: "test",
		Driver:  gpu.Driver{Vendor: "nvidia", Version: "580.95.05", CUDAVersion: "13.0"},
	}
	for i := range 8 {
		d := gpu.Device{
			Index:             i,
			Name:              "NVIDIA H100 80GB HBM3",
			Architecture:      "hopper",
			ComputeCapability: gpu.ComputeCapability{Major: 9, Minor: 0},
			Memory:            gpu.Memory{TotalMiB: 81559},
			PCI:               gpu.PCI{DeviceID: 0x233010DE},
			MIG:               gpu.MIG{Capable: true},
			NUMANode:          i / 4,
		}
		for l := range 18 {
			d.NVLinks = append(d.NVLinks, gpu.NVLink{Link: l, Active: true})
		}
		d.SetErr(gpu.FieldFabric, gpu.ErrNotSupported)
		snap.Devices = append(snap.Devices, d)
	}
	return snap
}

// oneH200 is the H200 of shared/reference/h200.md: one SXM GPU passed through to a VM, no
// NVLink and no fabric.
func oneH200() *gpu.Snapshot {
	d := gpu.Device{
		Name:              "NVIDIA H200",
		Architecture:      "hopper",
		ComputeCapability: gpu.ComputeCapability{Major: 9, Minor: 0},
		Memory:            gpu.Memory{TotalMiB: 143771},
		PCI:               gpu.PCI{BusID: "00000000:00:06.0", DeviceID: 0x233510DE},
		MIG:               gpu.MIG{Capable: true},
	}
	d.SetErr(gpu.FieldNVLink, gpu.ErrNotSupported)
	d.SetErr(gpu.FieldFabric, gpu.ErrNotSupported)
	return &gpu.Snapshot{
		Backend: "test",
		Driver:  gpu.Driver{Vendor: "nvidia", Version: "580.159.04", CUDAVersion: "13.0"},
		Devices: []gpu.Device{d},
	}
}

// gb200Tray is a GB200 NVL72 compute tray: 4 GPUs registered in one NVLink clique.
func gb200Tray() *gpu.Snapshot {
	snap := &gpu.Snapshot{
		Backend: "test",
		Driver:  gpu.Driver{Vendor: "nvidia", Version: "580.95.05", CUDAVersion: "13.0"},
	}
	for i := range 4 {
		snap.Devices = append(snap.Devices, gpu.Device{
			Index:             i,
			Name:              "NVIDIA GB200",
			Architecture:      "blackwell",
			ComputeCapability: gpu.ComputeCapability{Major: 10, Minor: 0},
			Memory:            gpu.Memory{TotalMiB: 189471},
			MIG:               gpu.MIG{Capable: true},
			NVLinks:           []gpu.NVLink{{Link: 0, Active: true}},
			Fabric: gpu.Fabric{
				State: "completed", Status: "success",
				ClusterUUID: "2f6c5a1e-8b7d-4c3a-9e21-0a4b6c8d9e10", CliqueID: 32766,
			},
		})
	}
	return snap
}

var errReadFailed = errors.New("read failed")
