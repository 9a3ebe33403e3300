package nvml

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/gpunode/gpunode/internal/gpu"
)

const driverNotFound = "NVIDIA driver not found (libnvidia-ml.so.1)"

func TestNewFailsCleanly(t *testing.T) {
	tests := []struct {
		name        string
		opts        []Option
		env         string // GPUNODE_NVML_LIBRARY
		driverError bool
		text        string
	}{
		{
			name:        "a library that is not found is the driver not found",
			opts:        []Option{WithLibrary(&mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }})},
			driverError: true,
			text:        driverNotFound + ": not in the dynamic loader's search path",
		},
		{
			name:        "a library present without its kernel driver is the driver not found",
			opts:        []Option{WithLibrary(&mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }})},
			driverError: true,
			text:        driverNotFound + ": the library is present but the kernel driver is not loaded (ERROR_DRIVER_NOT_LOADED)",
		},
		{
			name:        "a library path from the environment that does not exist names the path",
			env:         "/nonexistent/libnvidia-ml.so.1",
			driverError: true,
			text:        driverNotFound + ": cannot load /nonexistent/libnvidia-ml.so.1",
		},
		{
			name: "any other init failure is reported with NVML's text",
			opts: []Option{WithLibrary(&mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_NO_PERMISSION }})},
			text: "initialising NVML: nvmlInit: ERROR_NO_PERMISSION",
		},
		{
			name: "a library whose Init panics does not crash",
			opts: []Option{WithLibrary(&mock.Interface{})},
			text: "initialising NVML: nvmlInit: not supported: not implemented by this NVML library (Interface.InitFunc: method is nil but Interface.Init was just called)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvLibraryPath, tt.env)
			b, err := New(tt.opts...)
			if err == nil {
				_ = b.Close()
				t.Fatal("New succeeded, want an error")
			}
			if got := errors.Is(err, gpu.ErrDriverNotFound); got != tt.driverError {
				t.Errorf("errors.Is(ErrDriverNotFound) = %v, want %v (%v)", got, tt.driverError, err)
			}
			if err.Error() != tt.text {
				t.Errorf("message %q, want %q", err.Error(), tt.text)
			}
		})
	}
}

// TestNewOnThisHost loads the real libnvidia-ml.so.1. Without the NVIDIA driver (CI, the
// development machine) New must fail with ErrDriverNotFound; with it (the H200 host) the
// snapshot must describe real GPUs. Either way it must not crash.
func TestNewOnThisHost(t *testing.T) {
	t.Setenv(EnvLibraryPath, "")
	b, err := New()
	if err != nil {
		if !errors.Is(err, gpu.ErrDriverNotFound) {
			t.Fatalf("New on a host without the driver: %v, want ErrDriverNotFound", err)
		}
		if !strings.HasPrefix(err.Error(), driverNotFound) {
			t.Fatalf("message %q does not start with %q", err.Error(), driverNotFound)
		}
		t.Logf("no NVIDIA driver on this host: %v", err)
		return
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	start := time.Now()
	s, err := b.Snapshot(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if len(s.Devices) == 0 {
		t.Fatal("the driver is loaded but the snapshot has no device")
	}
	if s.Driver.Version == "" || s.Driver.CUDAVersion == "" {
		t.Errorf("driver %+v lacks versions (errors %v)", s.Driver, s.Errors)
	}
	for _, d := range s.Devices {
		if e := d.Err(gpu.FieldDevice); e != nil {
			t.Errorf("GPU %d could not be opened: %s", d.Index, e.Message)
			continue
		}
		if !strings.HasPrefix(d.UUID, "GPU-") || d.Name == "" || d.Memory.TotalMiB == 0 || d.PCI.BusID == "" {
			t.Errorf("GPU %d lacks its identity: uuid %q name %q memory %d bus %q", d.Index, d.UUID, d.Name, d.Memory.TotalMiB, d.PCI.BusID)
		}
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("snapshot of this host in %v:\n%s", took, out)
}

func TestCloseIsIdempotentAndEndsSnapshots(t *testing.T) {
	srv := dgxh100.New()
	shutdowns := 0
	srv.ShutdownFunc = func() gonvml.Return { shutdowns++; return gonvml.SUCCESS }
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if b.Name() != "nvml" {
		t.Errorf("Name() = %q, want nvml", b.Name())
	}
	if err := b.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if shutdowns != 1 {
		t.Errorf("nvmlShutdown called %d times, want 1", shutdowns)
	}
	if _, err := b.Snapshot(context.Background()); err == nil {
		t.Error("Snapshot after Close succeeded, want an error")
	}
}

func TestSnapshotStopsWhenTheContextEnds(t *testing.T) {
	b, err := New(WithLibrary(dgxh100.New()))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestSnapshotFailsWhenDevicesCannotBeCounted(t *testing.T) {
	srv := dgxh100.New()
	srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNINITIALIZED }
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer closeBackend(t, b)
	_, err = b.Snapshot(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nvmlDeviceGetCount: ERROR_UNINITIALIZED") {
		t.Errorf("Snapshot: %v, want the count error", err)
	}
}

// BenchmarkSnapshotOnThisHost measures a full snapshot of the real GPUs of this host.
func BenchmarkSnapshotOnThisHost(b *testing.B) {
	b.Setenv(EnvLibraryPath, "")
	be, err := New()
	if err != nil {
		b.Skipf("needs the NVIDIA driver: %v", err)
	}
	defer closeBackend(b, be)
	for b.Loop() {
		if _, err := be.Snapshot(context.Background()); err != nil {
			b.Fatalf("Snapshot: %v", err)
		}
	}
}

// BenchmarkSnapshotOfAMockDGXH100 measures the adapter's own cost over eight mock GPUs.
func BenchmarkSnapshotOfAMockDGXH100(b *testing.B) {
	be, err := New(WithLibrary(dgxh100.New()))
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	defer closeBackend(b, be)
	for b.Loop() {
		if _, err := be.Snapshot(context.Background()); err != nil {
			b.Fatalf("Snapshot: %v", err)
		}
	}
}

// closeBackend closes be at the end of a test or benchmark, failing it on an error.
func closeBackend(tb testing.TB, be *Backend) {
	tb.Helper()
	if err := be.Close(); err != nil {
		tb.Errorf("Close: %v", err)
	}
}

func TestCloseWaitsForSnapshotsInFlight(t *testing.T) {
	srv := dgxh100.New()
	var shut, calledAfterShutdown atomic.Bool
	srv.ShutdownFunc = func() gonvml.Return { shut.Store(true); return gonvml.SUCCESS }
	open := srv.DeviceGetHandleByIndexFunc
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		time.Sleep(time.Millisecond)
		if shut.Load() {
			calledAfterShutdown.Store(true)
		}
		return open(i)
	}
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if _, err := b.Snapshot(context.Background()); err != nil && !strings.Contains(err.Error(), "closed") {
					t.Errorf("Snapshot: %v", err)
				}
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if calledAfterShutdown.Load() {
		t.Error("a snapshot called NVML after nvmlShutdown")
	}
}
