//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"time"
)

// FP64 runs the 8-chain FP64 FMA kernel for iters steps on device dev, once
// untimed and once timed, and checks every thread's result against the host's
// known answer (a mismatch wraps ErrSilentDataCorruption). Without the driver
// it returns an error wrapping ErrNoCUDA.
func FP64(ctx context.Context, dev int, iters int) (ComputeResult, error) {
	return RunFMA(ctx, dev, PrecisionFP64, iters, 0)
}

// RunFMA runs the FMA kernel of precision p for iters steps a launch on device
// dev (8 blocks of 256 threads per SM): one untimed launch, then timed launches
// until their GPU time reaches d (at least one). Every launch's output is
// checked against the host's known answer; a mismatch returns the result with
// Checked false and an error wrapping ErrSilentDataCorruption.
func RunFMA(ctx context.Context, dev int, p Precision, iters int, d time.Duration) (ComputeResult, error) {
	if err := validateFMA(p, iters, d); err != nil {
		return ComputeResult{}, err
	}
	name := kernelFMA
	if p == PrecisionFP64 {
		name = kernelFMA64
	}
	res := ComputeResult{Precision: p, Iters: iters, FirstMismatch: -1, Want: expectedFMA(p, iters)}
	err := withDevice(ctx, dev, func(s *session) (err error) {
		fns, unload, err := s.module(name)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unload()) }()
		blocks := max(1, s.sms*blocksPerSM)
		res.Device, res.Threads = s.name, blocks*blockThreads
		out, err := s.alloc(uint64(res.Threads * p.elemSize()))
		if err != nil {
			return err
		}
		defer s.free(out, &err)
		launch := func() error {
			if p == PrecisionFP64 {
				return check("cuLaunchKernel "+name, C.launch_fma64(fns[name], C.uint(blocks), blockThreads,
					out, C.int(iters), C.double(fmaA64), C.double(fmaB64)))
			}
			return check("cuLaunchKernel "+name, C.launch_fma(fns[name], C.uint(blocks), blockThreads,
				out, C.int(iters), C.float(fmaA), C.float(fmaB)))
		}
		buf := make([]byte, res.Threads*p.elemSize())
		verify := func() error {
			if err := s.copyToHost(buf, out); err != nil {
				return err
			}
			checkFMA(&res, buf, res.Want)
			return nil
		}
		if err := launch(); err != nil {
			return err
		}
		if err := s.sync(); err != nil {
			return err
		}
		if err := verify(); err != nil {
			return err
		}
		for res.Rounds == 0 || res.Seconds < d.Seconds() {
			if err := ctx.Err(); err != nil {
				return err
			}
			secs, err := s.timed(launch)
			if err != nil {
				return err
			}
			res.Rounds++
			res.Seconds += secs
			if err := verify(); err != nil {
				return err
			}
		}
		res.TFLOPs = fmaTFLOPs(res.Threads, iters*res.Rounds, res.Seconds)
		res.Checked = res.Mismatches == 0
		return res.sdcError()
	})
	return res, err
}
