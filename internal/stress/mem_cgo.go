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

// Devices lists the CUDA devices. Without the driver it returns an error
// wrapping ErrNoCUDA.
func Devices(ctx context.Context) ([]DeviceInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.w_cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, int(n))
	for i := range int(n) {
		var d C.CUdevice
		if err := check("cuDeviceGet", C.w_cuDeviceGet(&d, C.int(i))); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		var name, bus [256]C.char
		if err := check("cuDeviceGetName", C.w_cuDeviceGetName(&name[0], C.int(len(name)), d)); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		if err := check("cuDeviceGetPCIBusId", C.w_cuDeviceGetPCIBusId(&bus[0], C.int(len(bus)), d)); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		var total C.size_t
		if err := check("cuDeviceTotalMem_v2", C.w_cuDeviceTotalMem(&total, d)); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		out = append(out, DeviceInfo{Ordinal: i, Name: C.GoString(&name[0]), BusID: C.GoString(&bus[0]), TotalBytes: uint64(total)})
	}
	return out, nil
}

// memInfo returns the free and total device memory of the current context.
func (s *session) memInfo() (free, total uint64, err error) {
	var f, t C.size_t
	if err := check("cuMemGetInfo_v2", C.w_cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// hostBuf is page-locked host memory from cuMemHostAlloc.
type hostBuf struct {
	p unsafe.Pointer
	n uint64
}

// bytes views the buffer as a Go slice (C memory: valid until free).
func (h hostBuf) bytes() []byte { return unsafe.Slice((*byte)(h.p), h.n) }

// hostAlloc allocates n bytes of pinned host memory.
func (s *session) hostAlloc(n uint64) (hostBuf, error) {
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", C.w_cuMemHostAlloc(&p, C.size_t(n))); err != nil {
		return hostBuf{}, fmt.Errorf("allocate %d bytes of pinned host memory: %w", n, err)
	}
	return hostBuf{p: p, n: n}, nil
}

// freeHost releases h, joining its error into *err.
func (s *session) freeHost(h hostBuf, err *error) {
	*err = errors.Join(*err, check("cuMemFreeHost", C.w_cuMemFreeHost(h.p)))
}

// copyHtoD queues an asynchronous host-to-device copy from pinned memory.
func (s *session) copyHtoD(dst C.CUdeviceptr, src hostBuf) error {
	return check("cuMemcpyHtoDAsync_v2", C.w_cuMemcpyHtoDAsync(dst, src.p, C.size_t(src.n)))
}

// copyDtoHAsync queues an asynchronous device-to-host copy into pinned memory.
func (s *session) copyDtoHAsync(dst hostBuf, src C.CUdeviceptr) error {
	return check("cuMemcpyDtoHAsync_v2", C.w_cuMemcpyDtoHAsync(dst.p, src, C.size_t(dst.n)))
}

// withDevices is withDevice for several devices at once (peer-to-peer): every
// primary context is retained, fn switches between them with session.current.
func withDevices(ctx context.Context, ordinals []int, fn func([]*session) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := loadDriver(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ss := make([]*session, 0, len(ordinals))
	for _, o := range ordinals {
		s, release, err := openSession(o)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, release()) }()
		ss = append(ss, s)
	}
	defer func() { err = errors.Join(err, check("cuCtxSetCurrent", C.w_cuCtxSetCurrent(nil))) }()
	return fn(ss)
}
