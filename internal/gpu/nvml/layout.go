package nvml

import (
	"context"
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

var _ gpu.MIGLayoutSource = (*Backend)(nil)

// MIGLayout reads each GPU's UUID, MIG mode and MIG device UUIDs: per GPU one handle, its
// UUID and mode, and with MIG on one call per MIG slot and one per MIG device. A GPU whose
// mode cannot be read is reported with MIG off and no devices.
func (b *Backend) MIGLayout(ctx context.Context) (gpu.MIGLayout, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nvml MIG layout: %w", err)
	}
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return nil, errors.New("nvml MIG layout: backend is closed")
	}
	count, err := get("nvmlDeviceGetCount", b.lib.DeviceGetCount)
	if err != nil {
		return nil, fmt.Errorf("nvml MIG layout: counting devices: %w", err)
	}
	out := make(gpu.MIGLayout, count)
	for i := range count {
		dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) { return b.lib.DeviceGetHandleByIndex(i) })
		if err != nil || dev == nil {
			continue
		}
		out[i] = layoutOf(dev)
	}
	return out, nil
}

// layoutOf is one GPU's layout, as far as it can be read.
func layoutOf(dev gonvml.Device) gpu.GPULayout {
	var l gpu.GPULayout
	l.UUID, _ = get("nvmlDeviceGetUUID", dev.GetUUID)
	var current int
	if err := guard("nvmlDeviceGetMigMode", func() (ret gonvml.Return) {
		current, _, ret = dev.GetMigMode()
		return ret
	}); err != nil || current != gonvml.DEVICE_MIG_ENABLE {
		return l
	}
	l.MIG = true
	n, err := get("nvmlDeviceGetMaxMigDeviceCount", dev.GetMaxMigDeviceCount)
	if err != nil {
		return l
	}
	for s := range n {
		h, err := get("nvmlDeviceGetMigDeviceHandleByIndex", func() (gonvml.Device, gonvml.Return) { return dev.GetMigDeviceHandleByIndex(s) })
		if err != nil || h == nil {
			continue
		}
		uuid, _ := get("nvmlDeviceGetUUID", h.GetUUID)
		l.Devices = append(l.Devices, uuid)
	}
	return l
}
