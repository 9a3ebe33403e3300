package nvml

import (
	"errors"
	"fmt"
	"runtime"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// optionalSymbols are entry points that a driver may lack: newer than the oldest drivers,
// or deprecated in NVML 13 and so liable to go. go-nvml binds symbols lazily, so calling one
// that the loaded library does not export would crash the process: each is looked up
// (LookupSymbol) before its first call and reported as not supported when absent.
var optionalSymbols = map[string]bool{
	"nvmlDeviceGetArchitecture":                 true, // R450
	"nvmlDeviceGetRemappedRows":                 true, // R450
	"nvmlDeviceGetMemoryInfo_v2":                true, // R510
	"nvmlDeviceGetGpuMaxPcieLinkGeneration":     true,
	"nvmlDeviceGetCurrentClocksEventReasons":    true, // R535
	"nvmlDeviceGetCurrentClocksThrottleReasons": true, // deprecated in 13.0
	"nvmlDeviceGetGpuFabricInfo":                true, // deprecated in 13.0
	"nvmlDeviceGetGpuFabricInfoV":               true,
	"nvmlDeviceGetTemperature":                  true, // deprecated in 13.0
	"nvmlDeviceGetTemperatureV":                 true,
	"nvmlDeviceGetNumaNodeId":                   true,
	"nvmlDeviceGetFieldValues":                  true,
}

// guard runs one NVML call and converts its Return, or a panic, into an error that names
// the call. go-nvml's mocks panic when a method has no Func set: that becomes
// gpu.ErrNotSupported ("not implemented by this library"); a runtime error stays a failure.
func guard(name string, fn func() gonvml.Return) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if re, ok := p.(runtime.Error); ok {
			err = fmt.Errorf("%s: panic: %w", name, re)
			return
		}
		err = fmt.Errorf("%s: %w: not implemented by this NVML library (%v)", name, gpu.ErrNotSupported, p)
	}()
	if err := toErr(fn()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// get runs a guarded call that returns one value.
func get[T any](name string, fn func() (T, gonvml.Return)) (T, error) {
	var v T
	err := guard(name, func() (ret gonvml.Return) {
		v, ret = fn()
		return ret
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// has reports whether the library exports symbol; the answer is cached per backend. A
// library that cannot answer (a mock without Extensions) is assumed to have it: the call
// itself is guarded anyway.
func (b *Backend) has(symbol string) bool {
	b.symMu.Lock()
	defer b.symMu.Unlock()
	if ok, found := b.symbols[symbol]; found {
		return ok
	}
	ok := b.lookup(symbol)
	b.symbols[symbol] = ok
	return ok
}

func (b *Backend) lookup(symbol string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	ext := b.lib.Extensions()
	if ext == nil {
		return true
	}
	return ext.LookupSymbol(symbol) == nil
}

// reader reads the facts of one device. Once a call reports the GPU lost, later calls are
// not made (each would fail the same way, and a lost GPU can be slow to answer).
type reader struct {
	b    *Backend
	dev  gonvml.Device
	d    *gpu.Device
	lost error
}

// call runs one guarded NVML call on the device.
func (r *reader) call(name string, fn func() gonvml.Return) error {
	if r.lost != nil {
		return fmt.Errorf("%s: not called after %w", name, r.lost)
	}
	if optionalSymbols[name] && !r.b.has(name) {
		return fmt.Errorf("%s: %w: not exported by this NVML library (driver too old)", name, gpu.ErrNotSupported)
	}
	err := guard(name, fn)
	if errors.Is(err, gpu.ErrGPULost) {
		r.lost = err
	}
	return err
}

// ok records err under field f and reports whether there was none.
func (r *reader) ok(f gpu.Field, err error) bool {
	r.d.SetErr(f, err)
	return err == nil
}

// val runs a device call that returns one value.
func val[T any](r *reader, name string, fn func() (T, gonvml.Return)) (T, error) {
	var v T
	err := r.call(name, func() (ret gonvml.Return) {
		v, ret = fn()
		return ret
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// val2 runs a device call that returns two values.
func val2[A, B any](r *reader, name string, fn func() (A, B, gonvml.Return)) (A, B, error) {
	var a A
	var b B
	err := r.call(name, func() (ret gonvml.Return) {
		a, b, ret = fn()
		return ret
	})
	if err != nil {
		var za A
		var zb B
		return za, zb, err
	}
	return a, b, nil
}

// first returns the first non-nil error.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// optional drops a not-supported error: the fact is then left at its zero value, which
// the gpu types document as "unknown".
func optional(err error) error {
	if errors.Is(err, gpu.ErrNotSupported) {
		return nil
	}
	return err
}
