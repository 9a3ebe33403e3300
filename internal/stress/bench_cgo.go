//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// HBMBandwidth copies bytes device-to-device iters times on device dev with
// cuMemcpyDtoD and with each copy kernel, and returns one Result per method.
// GBps counts bytes read plus written. Samples of each destination are checked
// against the source pattern (a mismatch wraps ErrSilentDataCorruption).
// Without the driver it returns an error wrapping ErrNoCUDA.
func HBMBandwidth(ctx context.Context, dev int, bytes uint64, iters int) ([]Result, error) {
	return RunHBM(ctx, dev, bytes, iters, 0)
}

// RunHBM is HBMBandwidth that keeps each method busy for a share of d: it
// repeats batches of iters timed copies until their GPU time reaches d divided
// by the number of methods (at least one batch each).
func RunHBM(ctx context.Context, dev int, bytes uint64, iters int, d time.Duration) ([]Result, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return nil, err
	}
	if d < 0 {
		return nil, fmt.Errorf("%w: duration %s must not be negative", ErrBadInput, d)
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
			r, err := measureCopy(ctx, s, m.copy, dst, bytes, iters, d/time.Duration(len(methods)))
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

// measureCopy zeroes dst, runs one untimed copy, times batches of iters copies
// until their GPU time reaches budget (one batch at least) and checks samples
// of dst.
func measureCopy(ctx context.Context, s *session, copyOnce func() error, dst C.CUdeviceptr, bytes uint64, iters int, budget time.Duration) (Result, error) {
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
	var secs float64
	batches := 0
	for batches == 0 || secs < budget.Seconds() {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		t, err := s.timed(func() error { return repeat(iters, copyOnce) })
		if err != nil {
			return Result{}, err
		}
		secs += t
		batches++
	}
	iters *= batches
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
	r, err := RunFMA(ctx, dev, PrecisionFP32, iters, 0)
	return FP32Result{Device: r.Device, Threads: r.Threads, Iters: r.Iters, Seconds: r.Seconds,
		TFLOPs: r.TFLOPs, Checked: r.Checked, Mismatches: r.Mismatches}, err
}
