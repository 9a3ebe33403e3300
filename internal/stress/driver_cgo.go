//go:build cgo

package stress

// #cgo LDFLAGS: -ldl
// #include "cuda_shim.h"
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// driverLib is the library dlopen'ed for the CUDA driver API.
const driverLib = "libcuda.so.1"

var (
	loadOnce sync.Once
	loadErr  error
)

// loadDriver opens the driver once per process and calls cuInit.
func loadDriver() error {
	loadOnce.Do(func() {
		loadErr = loadLibrary(driverLib)
		if loadErr == nil {
			loadErr = check("cuInit", C.w_cuInit())
		}
	})
	return loadErr
}

// loadLibrary dlopens lib and resolves the entry points; a missing library or
// symbol is ErrNoCUDA.
func loadLibrary(lib string) error {
	cs := C.CString(lib)
	defer C.free(unsafe.Pointer(cs))
	switch C.cu_load(cs) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: dlopen %s: %s", ErrNoCUDA, lib, C.GoString(C.cu_dlerror()))
	default:
		return fmt.Errorf("%w: %s lacks %s", ErrNoCUDA, lib, C.GoString(C.cu_missing_symbol()))
	}
}

// check turns a CUresult into an error naming the call, the driver's error name and string.
func check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return &CUDAError{
		Call:    call,
		Code:    int(r),
		Name:    C.GoString(C.w_errName(r)),
		Message: C.GoString(C.w_errString(r)),
	}
}
