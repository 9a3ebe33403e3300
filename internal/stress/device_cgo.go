//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// attrMultiprocessorCount is CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT.
const attrMultiprocessorCount = 16

// session is one device with its primary context current on the calling OS thread.
type session struct {
	dev  C.CUdevice
	cctx C.CUcontext
	name string
	sms  int
}

// withDevice locks the OS thread, makes device ordinal's primary context
// current, runs fn and releases everything again.
func withDevice(ctx context.Context, ordinal int, fn func(*session) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := loadDriver(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, release, err := openSession(ordinal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	if err := s.current(); err != nil {
		return fmt.Errorf("device %d: %w", ordinal, err)
	}
	defer func() { err = errors.Join(err, check("cuCtxSetCurrent", C.w_cuCtxSetCurrent(nil))) }()
	if err := fn(s); err != nil {
		return fmt.Errorf("device %d (%s): %w", ordinal, s.name, err)
	}
	return nil
}

// openSession retains device ordinal's primary context and reads its name and
// SM count; release gives the context back. The caller has loaded the driver
// and locked its OS thread.
func openSession(ordinal int) (s *session, release func() error, err error) {
	var n C.int
	if err := check("cuDeviceGetCount", C.w_cuDeviceGetCount(&n)); err != nil {
		return nil, nil, err
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, nil, fmt.Errorf("device %d: %w (%d CUDA devices)", ordinal, ErrNoDevice, int(n))
	}
	s = &session{}
	if err := check("cuDeviceGet", C.w_cuDeviceGet(&s.dev, C.int(ordinal))); err != nil {
		return nil, nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	var name [256]C.char
	if err := check("cuDeviceGetName", C.w_cuDeviceGetName(&name[0], C.int(len(name)), s.dev)); err != nil {
		return nil, nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	s.name = C.GoString(&name[0])
	var sms C.int
	if err := check("cuDeviceGetAttribute", C.w_cuDeviceGetAttribute(&sms, attrMultiprocessorCount, s.dev)); err != nil {
		return nil, nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	s.sms = int(sms)
	if err := check("cuDevicePrimaryCtxRetain", C.w_cuDevicePrimaryCtxRetain(&s.cctx, s.dev)); err != nil {
		return nil, nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	return s, func() error { return check("cuDevicePrimaryCtxRelease", C.w_cuDevicePrimaryCtxRelease(s.dev)) }, nil
}

// current makes the session's context current on the calling OS thread.
func (s *session) current() error {
	return check("cuCtxSetCurrent", C.w_cuCtxSetCurrent(s.cctx))
}

// alloc allocates n bytes of device memory.
func (s *session) alloc(n uint64) (C.CUdeviceptr, error) {
	var p C.CUdeviceptr
	if err := check("cuMemAlloc_v2", C.w_cuMemAlloc(&p, C.size_t(n))); err != nil {
		return 0, fmt.Errorf("allocate %d bytes: %w", n, err)
	}
	return p, nil
}

// free releases p, joining its error into *err.
func (s *session) free(p C.CUdeviceptr, err *error) {
	*err = errors.Join(*err, check("cuMemFree_v2", C.w_cuMemFree(p)))
}

// memset32 fills n 32-bit words at p with v.
func (s *session) memset32(p C.CUdeviceptr, v uint32, n uint64) error {
	return check("cuMemsetD32_v2", C.w_cuMemsetD32(p, C.uint(v), C.size_t(n)))
}

// copyToHost copies len(dst) bytes from device address p (synchronous).
func (s *session) copyToHost(dst []byte, p C.CUdeviceptr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH_v2", C.w_cuMemcpyDtoH(unsafe.Pointer(&dst[0]), p, C.size_t(len(dst))))
}

// copyDtoD queues a device-to-device copy of n bytes.
func (s *session) copyDtoD(dst, src C.CUdeviceptr, n uint64) error {
	return check("cuMemcpyDtoD_v2", C.w_cuMemcpyDtoD(dst, src, C.size_t(n)))
}

// sync waits for all work queued in the context.
func (s *session) sync() error { return check("cuCtxSynchronize", C.w_cuCtxSynchronize()) }

// module loads the embedded PTX (the driver JIT-compiles it) and returns the
// named entry points; unload releases the module.
func (s *session) module(names ...string) (fns map[string]C.CUfunction, unload func() error, err error) {
	return s.moduleFrom(kernelPTX, names...)
}

// moduleFrom is module for any PTX text.
func (s *session) moduleFrom(ptx string, names ...string) (fns map[string]C.CUfunction, unload func() error, err error) {
	img := C.CString(ptx)
	defer C.free(unsafe.Pointer(img))
	var m C.CUmodule
	if err := check("cuModuleLoadData", C.w_cuModuleLoadData(&m, img)); err != nil {
		return nil, nil, fmt.Errorf("load embedded PTX: %w", err)
	}
	unload = func() error { return check("cuModuleUnload", C.w_cuModuleUnload(m)) }
	fns = make(map[string]C.CUfunction, len(names))
	for _, name := range names {
		cs := C.CString(name)
		var f C.CUfunction
		r := C.w_cuModuleGetFunction(&f, m, cs)
		C.free(unsafe.Pointer(cs))
		if err := check("cuModuleGetFunction", r); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("kernel %s: %w", name, err), unload())
		}
		fns[name] = f
	}
	return fns, unload, nil
}

// timed records events around queue (which enqueues work) and returns the
// GPU time between them in seconds.
func (s *session) timed(queue func() error) (secs float64, err error) {
	var start, stop C.CUevent
	if err := check("cuEventCreate", C.w_cuEventCreate(&start)); err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, check("cuEventDestroy_v2", C.w_cuEventDestroy(start))) }()
	if err := check("cuEventCreate", C.w_cuEventCreate(&stop)); err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, check("cuEventDestroy_v2", C.w_cuEventDestroy(stop))) }()
	if err := check("cuEventRecord", C.w_cuEventRecord(start)); err != nil {
		return 0, err
	}
	if err := queue(); err != nil {
		return 0, err
	}
	if err := check("cuEventRecord", C.w_cuEventRecord(stop)); err != nil {
		return 0, err
	}
	if err := check("cuEventSynchronize", C.w_cuEventSynchronize(stop)); err != nil {
		return 0, err
	}
	var ms C.float
	if err := check("cuEventElapsedTime", C.w_cuEventElapsedTime(&ms, start, stop)); err != nil {
		return 0, err
	}
	return float64(ms) / 1e3, nil
}
