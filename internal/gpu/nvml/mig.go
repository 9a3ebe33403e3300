package nvml

import (
	"errors"
	"fmt"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// migDevices reads the MIG devices of a GPU in MIG mode: nvmlDeviceGetMaxMigDeviceCount
// slots, each filled or not (nvmlDeviceGetMigDeviceHandleByIndex answers NOT_FOUND for an
// empty slot), then each one's UUID, instance ids and attributes. A failure is recorded
// under gpu.FieldMIG and leaves MIGDevices empty: a partial list would advertise too few.
func (r *reader) migDevices() {
	n, err := val(r, "nvmlDeviceGetMaxMigDeviceCount", r.dev.GetMaxMigDeviceCount)
	if err != nil {
		r.ok(gpu.FieldMIG, fmt.Errorf("MIG is enabled but its devices cannot be listed: %w", err))
		return
	}
	var out []gpu.MIGDevice
	for i := range n {
		h, err := val(r, "nvmlDeviceGetMigDeviceHandleByIndex", func() (gonvml.Device, gonvml.Return) {
			return r.dev.GetMigDeviceHandleByIndex(i)
		})
		if returnIs(err, gonvml.ERROR_NOT_FOUND) {
			continue
		}
		if err == nil && h == nil {
			err = errors.New("nvmlDeviceGetMigDeviceHandleByIndex: no handle returned")
		}
		if err != nil {
			r.ok(gpu.FieldMIG, fmt.Errorf("MIG device %d: %w", i, err))
			return
		}
		m, err := r.migDevice(h, i)
		if err != nil {
			r.ok(gpu.FieldMIG, fmt.Errorf("MIG device %d: %w", i, err))
			return
		}
		out = append(out, m)
	}
	r.d.MIGDevices = out
}

// migDevice reads one MIG device through its handle.
func (r *reader) migDevice(h gonvml.Device, i int) (gpu.MIGDevice, error) {
	m := gpu.MIGDevice{Index: i}
	uuid, err := val(r, "nvmlDeviceGetUUID", h.GetUUID)
	if err != nil {
		return m, err
	}
	gi, err := val(r, "nvmlDeviceGetGpuInstanceId", h.GetGpuInstanceId)
	if err != nil {
		return m, err
	}
	ci, err := val(r, "nvmlDeviceGetComputeInstanceId", h.GetComputeInstanceId)
	if err != nil {
		return m, err
	}
	attr, err := val(r, "nvmlDeviceGetAttributes", h.GetAttributes)
	if err != nil {
		return m, err
	}
	m.UUID, m.GPUInstance, m.ComputeInstance = uuid, gi, ci
	m.MemoryMiB = attr.MemorySizeMB
	m.Profile = migProfile(int(attr.GpuInstanceSliceCount), int(attr.ComputeInstanceSliceCount), attr.MemorySizeMB, r.d.Memory.TotalMiB)
	return m, nil
}

// migProfile is the canonical profile name NVIDIA's tools use: "<g>g.<mem>gb", with a
// "<c>c." prefix when the compute instance has fewer slices than its GPU instance. The
// memory is rounded as go-nvlib does: the instance's share of the GPU's memory, rounded up
// to an eighth, times the GPU's memory in whole GB.
func migProfile(gSlices, cSlices int, memMiB, totalMiB uint64) string {
	gb := migMemoryGB(memMiB, totalMiB)
	if cSlices > 0 && cSlices < gSlices {
		return fmt.Sprintf("%dc.%dg.%dgb", cSlices, gSlices, gb)
	}
	return fmt.Sprintf("%dg.%dgb", gSlices, gb)
}

func migMemoryGB(memMiB, totalMiB uint64) uint64 {
	if totalMiB == 0 {
		return (memMiB + 1023) / 1024
	}
	const eighths = 8
	share := math.Ceil(float64(memMiB)/float64(totalMiB)*eighths) / eighths
	totalGB := float64((totalMiB + 1023) / 1024)
	return uint64(math.Round(share * totalGB))
}
