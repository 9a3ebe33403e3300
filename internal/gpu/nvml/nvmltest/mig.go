// Package nvmltest puts go-nvml's mock GPUs (pkg/nvml/mock/server) into states the mocks
// cannot reach by themselves, for tests of the NVML backend and of its users.
package nvmltest

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// MIG devices of one compute instance filling their GPU instance, on a DGX A100 (40 GB):
// 1g.5gb, 2g.10gb, 3g.20gb and 7g.40gb.
var (
	MIG1g = Instance{GPU: gonvml.GPU_INSTANCE_PROFILE_1_SLICE, Compute: gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE}
	MIG2g = Instance{GPU: gonvml.GPU_INSTANCE_PROFILE_2_SLICE, Compute: gonvml.COMPUTE_INSTANCE_PROFILE_2_SLICE}
	MIG3g = Instance{GPU: gonvml.GPU_INSTANCE_PROFILE_3_SLICE, Compute: gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE}
	MIG7g = Instance{GPU: gonvml.GPU_INSTANCE_PROFILE_7_SLICE, Compute: gonvml.COMPUTE_INSTANCE_PROFILE_7_SLICE}
)

// DGXA100 is go-nvml's DGX A100 mock (eight A100 40 GB) with GPU i partitioned as
// layouts[i], for gpunode's NVML backend (nvml.WithLibrary).
func DGXA100(layouts map[int][]Instance) (gonvml.Interface, error) {
	srv := dgxa100.New()
	for i, l := range layouts {
		if i < 0 || i >= len(srv.Devices) {
			return nil, fmt.Errorf("GPU %d: the DGX A100 mock has GPUs 0 to %d", i, len(srv.Devices)-1)
		}
		if err := Partition(srv.Devices[i].(*server.Device), l...); err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
	}
	return srv, nil
}

// Instance is one MIG device to create: a GPU instance profile id and a compute instance
// profile id (gonvml.GPU_INSTANCE_PROFILE_*, gonvml.COMPUTE_INSTANCE_PROFILE_*).
type Instance struct{ GPU, Compute int }

// Partition puts d in MIG mode and creates, through the mock's own MIG API, one GPU
// instance per entry, each with one compute instance. The mock server keeps the instances
// but has no MIG device handles, so they are made here from the instances, the way the
// driver exposes them: nvmlDeviceGetMaxMigDeviceCount slots (7), filled in GPU instance
// order, each answering its UUID, instance ids and attributes (slices, memory).
func Partition(d *server.Device, layout ...Instance) error {
	if ret, _ := d.SetMigMode(gonvml.DEVICE_MIG_ENABLE); ret != gonvml.SUCCESS {
		return fmt.Errorf("SetMigMode: %w", ret)
	}
	for _, l := range layout {
		gp, ret := d.GetGpuInstanceProfileInfo(l.GPU)
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("GPU instance profile %d: %w", l.GPU, ret)
		}
		gi, ret := d.CreateGpuInstance(&gp)
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("CreateGpuInstance(%d): %w", l.GPU, ret)
		}
		cp, ret := gi.GetComputeInstanceProfileInfo(l.Compute, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("compute instance profile %d of GPU instance profile %d: %w", l.Compute, l.GPU, ret)
		}
		if _, ret := gi.CreateComputeInstance(&cp); ret != gonvml.SUCCESS {
			return fmt.Errorf("CreateComputeInstance: %w", ret)
		}
	}
	migs := migDevices(d)
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i < 0 || i >= len(migs) {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return migs[i], gonvml.SUCCESS
	}
	return nil
}

// migDevices are mock MIG device handles for d's instances, by GPU then compute instance id.
func migDevices(d *server.Device) []gonvml.Device {
	gis := make([]*server.GpuInstance, 0, len(d.GpuInstances))
	for gi := range d.GpuInstances {
		gis = append(gis, gi)
	}
	slices.SortFunc(gis, func(a, b *server.GpuInstance) int { return cmp.Compare(a.Info.Id, b.Info.Id) })
	var out []gonvml.Device
	for _, gi := range gis {
		gp := d.Config.MIGProfiles.GpuInstanceProfiles[int(gi.Info.ProfileId)]
		cis := make([]*server.ComputeInstance, 0, len(gi.ComputeInstances))
		for ci := range gi.ComputeInstances {
			cis = append(cis, ci)
		}
		slices.SortFunc(cis, func(a, b *server.ComputeInstance) int { return cmp.Compare(a.Info.Id, b.Info.Id) })
		for _, ci := range cis {
			cp := d.Config.MIGProfiles.ComputeInstanceProfiles[int(gi.Info.ProfileId)][int(ci.Info.ProfileId)]
			giID, ciID := int(gi.Info.Id), int(ci.Info.Id)
			uuid := fmt.Sprintf("MIG-%s-%04x-%04x-0000-%012x", d.UUID[4:12], giID, ciID, d.Index)
			out = append(out, &mock.Device{
				GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
				GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return giID, gonvml.SUCCESS },
				GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return ciID, gonvml.SUCCESS },
				GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
					return gonvml.DeviceAttributes{GpuInstanceSliceCount: gp.SliceCount,
						ComputeInstanceSliceCount: cp.SliceCount, MemorySizeMB: gp.MemorySizeMB}, gonvml.SUCCESS
				},
			})
		}
	}
	return out
}

// DGXA100MIGSwitch is DGXA100 with GPU gpu partitioned as layout only while set(true) holds
// (the mode it reports is disabled otherwise, as after nvidia-smi -mig 0): a MIG layout
// changed while a reader runs, safe to switch from another goroutine.
func DGXA100MIGSwitch(gpu int, layout ...Instance) (lib gonvml.Interface, set func(partitioned bool), err error) {
	lib, err = DGXA100(map[int][]Instance{gpu: layout})
	if err != nil {
		return nil, nil, err
	}
	d := lib.(*server.Server).Devices[gpu].(*server.Device)
	var on atomic.Bool
	mode := d.GetMigModeFunc
	d.GetMigModeFunc = func() (int, int, gonvml.Return) {
		if on.Load() {
			return mode()
		}
		return gonvml.DEVICE_MIG_DISABLE, gonvml.DEVICE_MIG_DISABLE, gonvml.SUCCESS
	}
	return lib, on.Store, nil
}
