package nvml

import (
	"context"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

var _ gpu.ProcessLister = (*Backend)(nil)

// Processes implements gpu.ProcessLister: the compute and graphics processes the driver
// lists on the GPU with uuid.
func (b *Backend) Processes(ctx context.Context, uuid string) ([]gpu.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("processes on GPU %s: %w", uuid, err)
	}
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return nil, fmt.Errorf("processes on GPU %s: backend closed", uuid)
	}
	dev, err := get("nvmlDeviceGetHandleByUUID", func() (gonvml.Device, gonvml.Return) {
		return b.lib.DeviceGetHandleByUUID(uuid)
	})
	if err != nil {
		return nil, fmt.Errorf("processes on GPU %s: %w", uuid, err)
	}
	var out []gpu.Process
	for _, kind := range []struct {
		name string
		call string
		list func() ([]gonvml.ProcessInfo, gonvml.Return)
	}{
		{"compute", "nvmlDeviceGetComputeRunningProcesses", dev.GetComputeRunningProcesses},
		{"graphics", "nvmlDeviceGetGraphicsRunningProcesses", dev.GetGraphicsRunningProcesses},
	} {
		infos, err := get(kind.call, kind.list)
		if err != nil {
			return nil, fmt.Errorf("processes on GPU %s: %w", uuid, err)
		}
		for _, p := range infos {
			out = append(out, gpu.Process{PID: p.Pid, UsedMemoryBytes: p.UsedGpuMemory, Kind: kind.name})
		}
	}
	return out, nil
}
