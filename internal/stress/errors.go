// Package stress measures and checks GPUs through the CUDA driver API: HBM
// copy bandwidth (cuMemcpyDtoD and copy kernels), FP32 and FP64 FMA throughput
// with a known-answer check, a memory pattern test over most of the free
// memory, pinned PCIe copies and peer-to-peer copies between every ordered
// GPU pair. Run executes a plan of these tests with timeouts, clock sampling
// through the GPU port and a verdict for each (docs/stress.md).
//
// The driver is opened at run time with dlopen("libcuda.so.1"), so the binary
// builds without a CUDA toolkit and a machine without the driver gets
// ErrNoCUDA. Kernels are PTX embedded in the binary and JIT-compiled by the
// driver (cuModuleLoadData).
package stress

import (
	"errors"
	"fmt"
)

// ErrNoCUDA means the CUDA driver library could not be opened or lacks an
// entry point this package needs.
var ErrNoCUDA = errors.New("CUDA driver not found (libcuda.so.1)")

// ErrNoDevice means the requested device ordinal does not exist.
var ErrNoDevice = errors.New("no such CUDA device")

// ErrSilentDataCorruption means a kernel produced a result that differs from
// the known answer: the GPU computed or stored a wrong value without an error.
var ErrSilentDataCorruption = errors.New("silent data corruption")

// ErrBadInput means an argument is out of range; nothing was run.
var ErrBadInput = errors.New("invalid stress parameter")

// CUDAError is a failed driver call: the call, the CUresult and the driver's
// name (CUDA_ERROR_...) and description for it.
type CUDAError struct {
	Call    string
	Code    int
	Name    string
	Message string
}

// Error formats as "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (e *CUDAError) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Message)
}

// Sticky reports whether the error leaves the process's CUDA state unusable:
// the driver then returns it to every later call, on every device, until the
// process exits (illegal address, launch timeout, device assert, hardware
// stack error, illegal instruction, misaligned address, invalid address space,
// invalid PC, launch failed, external device error).
func (e *CUDAError) Sticky() bool {
	switch e.Code {
	case 700, 702, 710, 714, 715, 716, 717, 718, 719, 911:
		return true
	}
	return false
}
