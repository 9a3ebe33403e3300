package nvml

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestProcessesListsComputeAndGraphicsProcessesOfOneGPU(t *testing.T) {
	srv := dgxh100.New()
	dev := srv.Devices[3].(*server.Device)
	dev.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1 << 30}}, gonvml.SUCCESS
	}
	dev.GetGraphicsRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, gonvml.SUCCESS }
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)

	got, err := b.Processes(context.Background(), dev.UUID)
	if err != nil {
		t.Fatalf("Processes: %v", err)
	}
	want := []gpu.Process{{PID: 4242, UsedMemoryBytes: 1 << 30, Kind: "compute"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Processes = %+v, want %+v", got, want)
	}
}

func TestProcessesOfAnUnknownGPUIsAnErrorNamingIt(t *testing.T) {
	b, err := New(WithLibrary(dgxh100.New()))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)
	_, err = b.Processes(context.Background(), "GPU-nope")
	if err == nil || !strings.Contains(err.Error(), "GPU-nope") || !returnIs(err, gonvml.ERROR_INVALID_ARGUMENT) {
		t.Errorf("Processes(unknown) = %v, want an error naming the GPU and wrapping ERROR_INVALID_ARGUMENT", err)
	}
}

func TestProcessesFailsWhenTheDriverCannotListThem(t *testing.T) {
	srv := dgxh100.New()
	dev := srv.Devices[0].(*server.Device)
	dev.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, gonvml.ERROR_GPU_IS_LOST }
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)
	if _, err := b.Processes(context.Background(), dev.UUID); err == nil || !strings.Contains(err.Error(), "nvmlDeviceGetComputeRunningProcesses") {
		t.Errorf("Processes on a lost GPU = %v, want the failing call named", err)
	}
}
