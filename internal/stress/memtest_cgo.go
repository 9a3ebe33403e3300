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

// cudaErrorOutOfMemory is CUDA_ERROR_OUT_OF_MEMORY.
const cudaErrorOutOfMemory = 2

// RunMemory writes and verifies patterns (walking ones, walking zeros, seeded
// random; see passAt) over most of device dev's free memory until
// opts.Duration has passed. A kernel writes each pass and another reads it
// back on the device, recording the first wrong words with their addresses.
// Wrong words return the result and an error wrapping ErrMemoryError. Without
// the driver it returns an error wrapping ErrNoCUDA.
func RunMemory(ctx context.Context, dev int, opts MemoryOptions) (MemoryResult, error) {
	if err := validateMemory(opts); err != nil {
		return MemoryResult{}, err
	}
	if opts.MaxErrors == 0 {
		opts.MaxErrors = 16
	}
	if opts.Seed == 0 {
		opts.Seed = defaultSeed
	}
	res := MemoryResult{MaxErrors: opts.MaxErrors, Seed: opts.Seed}
	start := time.Now()
	err := withDevice(ctx, dev, func(s *session) (err error) {
		res.Device = s.name
		fns, unload, err := s.module(kernelFill, kernelCheck)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, unload()) }()
		if res.FreeBytes, res.TotalBytes, err = s.memInfo(); err != nil {
			return err
		}
		errBuf, err := s.alloc(errBufBytes(opts.MaxErrors))
		if err != nil {
			return err
		}
		defer s.free(errBuf, &err)
		want := opts.Bytes
		if want == 0 {
			want = memoryTestBytes(res.FreeBytes, res.TotalBytes)
		}
		buf, n, err := allocShrinking(s, want&^15)
		if err != nil {
			return err
		}
		defer s.free(buf, &err)
		res.Bytes, res.BaseAddress = n, uint64(buf)
		grid := C.uint(max(1, s.sms*blocksPerSM))
		host := make([]byte, errBufBytes(opts.MaxErrors))
		seen := map[string]bool{}
		first := time.Now()
		for p := 0; !memoryDone(opts, p, time.Since(first)); p++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			ps := passAt(p)
			if err := s.memset32(errBuf, 0, 4); err != nil {
				return err
			}
			kind, shift, seed := C.int(ps.Kind), C.uint(ps.Shift), C.uint(opts.Seed)
			secs, err := s.timed(func() error {
				if err := check("cuLaunchKernel "+kernelFill, C.launch_pattern_fill(fns[kernelFill], grid, blockThreads,
					buf, C.ulonglong(n/16), kind, shift, seed)); err != nil {
					return err
				}
				if opts.inject != nil {
					if w, v, ok := opts.inject(p, n/4); ok {
						if err := s.memset32(buf+C.CUdeviceptr(4*w), v, 1); err != nil {
							return err
						}
					}
				}
				return check("cuLaunchKernel "+kernelCheck, C.launch_pattern_check(fns[kernelCheck], grid, blockThreads,
					buf, C.ulonglong(n/16), kind, shift, seed, errBuf, C.uint(opts.MaxErrors)))
			})
			if err != nil {
				return fmt.Errorf("pass %d (%s): %w", p, ps.Kind, err)
			}
			if err := s.copyToHost(host, errBuf); err != nil {
				return err
			}
			count, errs, err := decodeErrors(host, ps, opts.Seed, res.BaseAddress)
			if err != nil {
				return err
			}
			res.Passes++
			res.Seconds += secs
			res.ErrorCount += count
			for _, e := range errs {
				if len(res.Errors) < opts.MaxErrors {
					e.Pass = p
					res.Errors = append(res.Errors, e)
				}
			}
			if !seen[ps.Kind.String()] {
				seen[ps.Kind.String()] = true
				res.Patterns = append(res.Patterns, ps.Kind.String())
			}
		}
		res.GBps = copyGBps(res.Bytes, res.Passes, res.Seconds)
		return res.findingsError()
	})
	res.Elapsed = time.Since(start)
	return res, err
}

// allocShrinking allocates up to want bytes, giving up an eighth at a time
// (four times at most) while the driver is out of memory.
func allocShrinking(s *session, want uint64) (C.CUdeviceptr, uint64, error) {
	if want < 16 {
		return 0, 0, fmt.Errorf("%w: no free device memory left to test (%d bytes)", ErrBadInput, want)
	}
	for try := 0; ; try++ {
		p, err := s.alloc(want)
		var cerr *CUDAError
		if err == nil || try == 4 || !errors.As(err, &cerr) || cerr.Code != cudaErrorOutOfMemory {
			return p, want, err
		}
		want = (want - want/8) &^ 15
	}
}
