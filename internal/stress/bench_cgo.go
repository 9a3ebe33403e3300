//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
)

// HBMBandwidth copies bytes device-to-device iters times on device dev with
// cuMemcpyDtoD and with each copy kernel, and returns one Result per method.
// GBps counts bytes read plus written. Samples of each destination are checked
// against the source pattern (a mismatch wraps ErrSilentDataCorruption).
// Without the driver it returns an error wrapping ErrNoCUDA.
func HBMBandwidth(ctx context.Context, dev int, bytes uint64, iters int) ([]Result, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return nil, err
	}
	var results []Result
	err := withDevice(ctx, dev, func(s *session) (err error) {
		fns, unload, err := s.module(kernelCopy, kernelCopyX4, kernelCopyX4CS)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unload()) }()
		src, err := s.alloc(bytes)
		if err != nil {
			return err
		}
		defer s.free(src, &err)
		dst, err := s.alloc(bytes)
		if err != nil {
			return err
		}
		defer s.free(dst, &err)
		if err := s.memset32(src, srcPattern, bytes/4); err != nil {
			return err
		}
		grid := C.uint(max(1, s.sms*blocksPerSM))
		kernel := func(name string) func() error {
			return func() error {
				return check("cuLaunchKernel "+name,
					C.launch_copy(fns[name], grid, blockThreads, dst, src, C.ulonglong(bytes/16)))
			}
		}
		methods := []struct {
			name string
			copy func() error
		}{
			{MethodMemcpyDtoD, func() error { return s.copyDtoD(dst, src, bytes) }},
			{MethodKernel, kernel(kernelCopy)},
			{MethodKernelX4, kernel(kernelCopyX4)},
			{MethodKernelX4Hint, kernel(kernelCopyX4CS)},
		}
		for _, m := range methods {
			r, err := measureCopy(ctx, s, m.copy, dst, bytes, iters)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			r.Device, r.Method = s.name, m.name
			results = append(results, r)
		}
		return nil
	})
	return results, err
}

// measureCopy zeroes dst, runs one untimed copy, times iters copies and checks
// samples of dst.
func measureCopy(ctx context.Context, s *session, copyOnce func() error, dst C.CUdeviceptr, bytes uint64, iters int) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := s.memset32(dst, 0, bytes/4); err != nil {
		return Result{}, err
	}
	if err := copyOnce(); err != nil {
		return Result{}, err
	}
	if err := s.sync(); err != nil {
		return Result{}, err
	}
	secs, err := s.timed(func() error {
		for range iters {
			if err := copyOnce(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	const win = 64 << 10
	buf := make([]byte, min(win, bytes))
	for _, off := range sampleWindows(bytes, uint64(len(buf))) {
		if err := s.copyToHost(buf, dst+C.CUdeviceptr(off)); err != nil {
			return Result{}, err
		}
		if err := checkPattern(buf, off, srcPattern); err != nil {
			return Result{}, err
		}
	}
	return Result{Bytes: bytes, Iters: iters, Seconds: secs, GBps: copyGBps(bytes, iters, secs)}, nil
}

// FP32 runs the 8-chain FP32 FMA kernel for iters steps on device dev (8
// blocks of 256 threads per SM), once untimed and once timed, and checks every
// thread's result against the host's known answer. A mismatch returns the
// result with Checked false and an error wrapping ErrSilentDataCorruption.
// Without the driver it returns an error wrapping ErrNoCUDA.
func FP32(ctx context.Context, dev int, iters int) (FP32Result, error) {
	if err := validateFP32(iters); err != nil {
		return FP32Result{}, err
	}
	var res FP32Result
	err := withDevice(ctx, dev, func(s *session) (err error) {
		fns, unload, err := s.module(kernelFMA)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unload()) }()
		blocks := max(1, s.sms*blocksPerSM)
		threads := blocks * blockThreads
		out, err := s.alloc(uint64(threads) * 4)
		if err != nil {
			return err
		}
		defer s.free(out, &err)
		launch := func() error {
			return check("cuLaunchKernel "+kernelFMA, C.launch_fma(fns[kernelFMA], C.uint(blocks),
				blockThreads, out, C.int(iters), C.float(fmaA), C.float(fmaB)))
		}
		if err := launch(); err != nil {
			return err
		}
		if err := s.sync(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		secs, err := s.timed(launch)
		if err != nil {
			return err
		}
		buf := make([]byte, threads*4)
		if err := s.copyToHost(buf, out); err != nil {
			return err
		}
		res = FP32Result{Device: s.name, Threads: threads, Iters: iters, Seconds: secs,
			TFLOPs: fmaTFLOPs(threads, iters, secs)}
		return checkFP32(&res, buf, expectedFP32(iters, fmaA, fmaB))
	})
	return res, err
}
