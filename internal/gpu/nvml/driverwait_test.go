package nvml_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
	"github.com/gpunode/gpunode/internal/gpu/nvml/nvmltest"
	"github.com/gpunode/gpunode/internal/platform"
)

// lateDriver is a DGX H100 whose kernel driver is not loaded for the first inits.
type lateDriver struct {
	gonvml.Interface
	missing int32
	inits   atomic.Int32
}

func (l *lateDriver) Init() gonvml.Return {
	if l.inits.Add(1) <= l.missing {
		return gonvml.ERROR_DRIVER_NOT_LOADED
	}
	return l.Interface.Init()
}

func TestTheAgentsBackendWaitsForNVMLToInitialise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib := &lateDriver{Interface: nvmltest.DGXH100(), missing: 2}
	d := platform.NewDriver("nvml", func() (gpu.Backend, error) { return nvml.New(nvml.WithLibrary(lib)) },
		func(b gpu.Backend) error { return b.Close() }, time.Millisecond, 4*time.Millisecond, nil)
	_, err := d.Snapshot(ctx)
	if !errors.Is(err, gpu.ErrDriverNotFound) {
		t.Fatalf("before NVML initialised: %v, want gpu.ErrDriverNotFound", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	for {
		changed := d.Changed()
		if s := d.State(); s.Loaded {
			break
		} else if s.Message != "the driver has not been opened yet" && !strings.Contains(s.Message, "kernel driver is not loaded") {
			t.Fatalf("waiting state %+v does not say why", s)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never loaded: %+v", d.State())
		case <-changed:
		}
	}
	snap, err := d.Snapshot(ctx)
	if err != nil || len(snap.Devices) != 8 || snap.Driver.Version == "" {
		t.Fatalf("snapshot once NVML initialised: %v", err)
	}
	if n := lib.inits.Load(); n != 3 {
		t.Errorf("NVML initialised after %d tries, want 3", n)
	}
	cancel()
	<-done
}
