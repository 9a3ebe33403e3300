package nvml

import (
	"errors"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/gputest"
)

// withProcesses makes every GPU of srv list its processes, as a driver does: a training
// process on GPU 0, none elsewhere.
func withProcesses(srv *server.Server) *server.Server {
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		var procs []gonvml.ProcessInfo
		if i == 0 {
			procs = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1 << 30}}
		}
		dev.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return procs, gonvml.SUCCESS }
		dev.GetGraphicsRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, gonvml.SUCCESS }
	}
	return srv
}

// scriptedEvents is the number of events the event script below delivers: XID 79 and the
// lost GPU it implies, a double-bit ECC error, a recovery action and XID 13.
const scriptedEvents = 5

func TestTheNVMLAdapterKeepsThePortsContractOnGoNVMLMocks(t *testing.T) {
	cases := []struct {
		name   string
		server func() *server.Server
		events bool
	}{
		{"a DGX H100 mock as go-nvml ships it, with device events, keeps it", func() *server.Server {
			return withProcesses(newScript(gonvml.EventTypeAll,
				event(2, gonvml.EventTypeXidCriticalError, 79),
				event(5, gonvml.EventTypeDoubleBitEccError, 0),
				event(0, gonvml.EventTypeGpuRecoveryAction, 2),
				event(7, gonvml.EventTypeXidCriticalError, 13),
			).srv)
		}, true},
		{"a DGX H200 whose GPUs answer every call keeps it", func() *server.Server {
			srv := dgxh200.New()
			for _, d := range srv.Devices {
				healthy(d.(*server.Device))
			}
			return withProcesses(srv)
		}, false},
		{"a DGX H100 with a GPU that cannot be opened and one fallen off the bus keeps it", func() *server.Server {
			srv := withProcesses(dgxh100.New())
			open := srv.DeviceGetHandleByIndexFunc
			srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
				if i == 5 {
					return nil, gonvml.ERROR_NO_PERMISSION
				}
				return open(i)
			}
			lost := srv.Devices[2].(*server.Device)
			lost.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_GPU_IS_LOST }
			lost.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST }
			lost.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST }
			return srv
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []gputest.Option
			if tc.events {
				opts = append(opts, gputest.WithEvents(func(*testing.T, gpu.Backend) int { return scriptedEvents }))
			}
			gputest.Conformance(t, func(t *testing.T) gpu.Backend {
				b, err := New(WithLibrary(tc.server()))
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return b
			}, opts...)
		})
	}
}

// TestTheGPUsOfThisHostKeepThePortsContract runs the suite on the real NVML library: on a
// host without the NVIDIA driver it skips and says so.
func TestTheGPUsOfThisHostKeepThePortsContract(t *testing.T) {
	t.Setenv(EnvLibraryPath, "")
	probe, err := New()
	if errors.Is(err, gpu.ErrDriverNotFound) {
		t.Skipf("no NVIDIA driver on this host: %v", err)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	closeBackend(t, probe)
	gputest.Conformance(t, func(t *testing.T) gpu.Backend {
		b, err := New()
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return b
	})
}
