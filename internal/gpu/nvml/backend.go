// Package nvml is the gpu.Backend for real NVIDIA GPUs, through NVML (libnvidia-ml.so.1).
//
// It is the only package of the project that imports github.com/NVIDIA/go-nvml. Every
// nvml.Return is turned into an error here (see toErr); every call is guarded so that a
// symbol missing from an old driver, or a method missing from a partial mock, becomes a
// gpu.ErrNotSupported field error instead of a crash.
package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// EnvLibraryPath names the environment variable that overrides the NVML library that New
// loads (default "libnvidia-ml.so.1", found through the dynamic loader's search path). It is
// read only when WithLibrary is not given.
const EnvLibraryPath = "GPUNODE_NVML_LIBRARY"

const defaultLibrary = "libnvidia-ml.so.1"

// fieldLibraryVersion records a failed NVML version read; package gpu has no Field for it.
const fieldLibraryVersion gpu.Field = "libraryVersion"

// Backend reads NVIDIA GPUs through NVML. It is safe for concurrent use.
type Backend struct {
	lib gonvml.Interface
	now func() time.Time

	// life is held shared by Snapshot and exclusively by Close: after nvmlShutdown the
	// library is unloaded, and a call into it would crash the process.
	life   sync.RWMutex
	closed bool

	symMu   sync.Mutex
	symbols map[string]bool // cache of LookupSymbol answers

	topo topologyCache // the wiring changes only with the GPUs and their links
}

var _ gpu.Backend = (*Backend)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	lib gonvml.Interface
}

// WithLibrary makes the backend use lib instead of loading libnvidia-ml.so.1; tests pass
// go-nvml's mock servers (pkg/nvml/mock/dgxh100, ...). New still calls lib.Init.
func WithLibrary(lib gonvml.Interface) Option {
	return func(o *options) { o.lib = lib }
}

// New loads and initialises NVML. On a host without the NVIDIA driver it returns an error
// that wraps gpu.ErrDriverNotFound, whose text starts with
// "NVIDIA driver not found (libnvidia-ml.so.1)".
func New(opts ...Option) (*Backend, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	libPath := ""
	if o.lib == nil {
		libPath = os.Getenv(EnvLibraryPath)
		if libPath == "" {
			o.lib = gonvml.New()
		} else {
			o.lib = gonvml.New(gonvml.WithLibraryPath(libPath))
		}
	}
	b := &Backend{lib: o.lib, now: time.Now, symbols: map[string]bool{}}
	if err := b.init(libPath); err != nil {
		return nil, err
	}
	return b, nil
}

// init calls nvmlInit and classifies its failure.
func (b *Backend) init(libPath string) error {
	err := guard("nvmlInit", b.lib.Init)
	if err == nil {
		return nil
	}
	var re *returnError
	if errors.As(err, &re) {
		switch re.ret {
		case gonvml.ERROR_LIBRARY_NOT_FOUND:
			if libPath != "" && libPath != defaultLibrary {
				return fmt.Errorf("%w: cannot load %s", gpu.ErrDriverNotFound, libPath)
			}
			return fmt.Errorf("%w: not in the dynamic loader's search path", gpu.ErrDriverNotFound)
		case gonvml.ERROR_DRIVER_NOT_LOADED:
			return fmt.Errorf("%w: the library is present but the kernel driver is not loaded (%s)",
				gpu.ErrDriverNotFound, re.text)
		}
	}
	return fmt.Errorf("initialising NVML: %w", err)
}

// Name returns "nvml".
func (b *Backend) Name() string { return "nvml" }

// Close shuts NVML down. It is safe to call more than once; only the first call shuts down.
func (b *Backend) Close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if err := guard("nvmlShutdown", b.lib.Shutdown); err != nil {
		return fmt.Errorf("shutting NVML down: %w", err)
	}
	return nil
}

// Snapshot reads every fact of every device. It fails as a whole only when the backend is
// closed, the context ends, or NVML cannot count its devices.
func (b *Backend) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nvml snapshot: %w", err)
	}
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return nil, errors.New("nvml snapshot: backend is closed")
	}
	s := &gpu.Snapshot{Backend: b.Name(), Time: b.now(), Driver: gpu.Driver{Vendor: "nvidia"}}
	b.readDriver(s)

	count, err := get("nvmlDeviceGetCount", b.lib.DeviceGetCount)
	if err != nil {
		return nil, fmt.Errorf("nvml snapshot: counting devices: %w", err)
	}
	s.Devices = make([]gpu.Device, 0, count)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("nvml snapshot: before device %d: %w", i, err)
		}
		s.Devices = append(s.Devices, b.readDevice(i))
	}
	b.readTopology(s.Devices)
	return s, nil
}

// readDriver fills the driver, NVML and CUDA versions; failures go to s.Errors.
func (b *Backend) readDriver(s *gpu.Snapshot) {
	setErr := func(f gpu.Field, err error) {
		if err == nil {
			return
		}
		if s.Errors == nil {
			s.Errors = map[gpu.Field]gpu.FieldError{}
		}
		s.Errors[f] = gpu.NewFieldError(err)
	}
	v, err := get("nvmlSystemGetDriverVersion", b.lib.SystemGetDriverVersion)
	if err == nil {
		s.Driver.Version = v
	}
	setErr(gpu.FieldDriverVersion, err)
	lib, err := get("nvmlSystemGetNVMLVersion", b.lib.SystemGetNVMLVersion)
	if err == nil {
		s.Driver.LibraryVersion = lib
	}
	setErr(fieldLibraryVersion, err)
	cuda, err := get("nvmlSystemGetCudaDriverVersion", b.lib.SystemGetCudaDriverVersion)
	if err == nil {
		s.Driver.CUDAVersion = cudaVersion(cuda)
	}
	setErr(gpu.FieldCUDAVersion, err)
}
