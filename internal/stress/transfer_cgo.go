//go:build cgo

package stress

// #include "cuda_shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
)

// cudaErrorPeerAccessAlreadyEnabled is CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED.
const cudaErrorPeerAccessAlreadyEnabled = 704

// RunPCIe copies bytes between pinned host memory (cuMemHostAlloc) and device
// dev, one untimed copy then iters timed copies each way, and checks samples of
// the data that came back. Without the driver it returns an error wrapping
// ErrNoCUDA.
func RunPCIe(ctx context.Context, dev int, bytes uint64, iters int) (PCIeResult, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return PCIeResult{}, err
	}
	res := PCIeResult{Bytes: bytes, Iters: iters}
	err := withDevice(ctx, dev, func(s *session) (err error) {
		res.Device = s.name
		d, err := s.alloc(bytes)
		if err != nil {
			return err
		}
		defer s.free(d, &err)
		src, err := s.hostAlloc(bytes)
		if err != nil {
			return err
		}
		defer s.freeHost(src, &err)
		dst, err := s.hostAlloc(bytes)
		if err != nil {
			return err
		}
		defer s.freeHost(dst, &err)
		fillPattern(src.bytes(), 0, Pass{Kind: PatternRandom}, defaultSeed)
		clear(dst.bytes())
		directions := []struct {
			name string
			copy func() error
			secs *float64
		}{
			{"host to device", func() error { return s.copyHtoD(d, src) }, &res.H2DSeconds},
			{"device to host", func() error { return s.copyDtoHAsync(dst, d) }, &res.D2HSeconds},
		}
		for _, dir := range directions {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := dir.copy(); err != nil {
				return fmt.Errorf("%s: %w", dir.name, err)
			}
			if err := s.sync(); err != nil {
				return fmt.Errorf("%s: %w", dir.name, err)
			}
			if *dir.secs, err = s.timed(func() error { return repeat(iters, dir.copy) }); err != nil {
				return fmt.Errorf("%s: %w", dir.name, err)
			}
		}
		res.H2DGBps = transferGBps(bytes, iters, res.H2DSeconds)
		res.D2HGBps = transferGBps(bytes, iters, res.D2HSeconds)
		return checkRoundTrip(dst.bytes(), Pass{Kind: PatternRandom}, defaultSeed)
	})
	return res, err
}

// checkRoundTrip compares windows of buf with the pattern it was copied from.
func checkRoundTrip(buf []byte, ps Pass, seed uint32) error {
	const win = 64 << 10
	w := min(uint64(win), uint64(len(buf)))
	for _, off := range sampleWindows(uint64(len(buf)), w) {
		if n, errs := verifyPattern(buf[off:off+w], off/4, ps, seed, 1); n > 0 {
			return fmt.Errorf("%w: host<->device round trip: %s", ErrSilentDataCorruption, errs[0])
		}
	}
	return nil
}

// repeat calls f n times, stopping at its first error.
func repeat(n int, f func() error) error {
	for range n {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// RunP2P measures copies from device src to device dst with cuMemcpyPeerAsync
// after cuCtxEnablePeerAccess: bandwidth over iters copies of bytes, and the
// latency of small copies. When the driver says dst cannot access src's memory
// it returns PeerAccess false and no error. Without the driver it returns an
// error wrapping ErrNoCUDA.
func RunP2P(ctx context.Context, src, dst int, bytes uint64, iters int) (P2PResult, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return P2PResult{}, err
	}
	if src == dst {
		return P2PResult{}, fmt.Errorf("%w: peer-to-peer from device %d to itself", ErrBadInput, src)
	}
	res := P2PResult{Src: src, Dst: dst, Bytes: bytes, Iters: iters, LatencyBytes: 4, LatencyIters: 1000}
	err := withDevices(ctx, []int{src, dst}, func(ss []*session) (err error) {
		s, d := ss[0], ss[1]
		res.SrcDev, res.DstDev = s.name, d.name
		var can C.int
		if err := check("cuDeviceCanAccessPeer", C.w_cuDeviceCanAccessPeer(&can, d.dev, s.dev)); err != nil {
			return err
		}
		if res.PeerAccess = can != 0; !res.PeerAccess {
			return nil
		}
		if err := enablePeer(d, s); err != nil {
			return err
		}
		if err := enablePeer(s, d); err != nil {
			return err
		}
		if err := d.current(); err != nil {
			return err
		}
		to, err := d.alloc(bytes)
		if err != nil {
			return err
		}
		defer func() { _ = d.current(); d.free(to, &err) }()
		if err := d.memset32(to, 0, bytes/4); err != nil {
			return err
		}
		if err := s.current(); err != nil {
			return err
		}
		from, err := s.alloc(bytes)
		if err != nil {
			return err
		}
		defer func() { _ = s.current(); s.free(from, &err) }()
		if err := s.memset32(from, srcPattern, bytes/4); err != nil {
			return err
		}
		peerCopy := func(n uint64) func() error {
			return func() error {
				return check("cuMemcpyPeerAsync", C.w_cuMemcpyPeerAsync(to, d.cctx, from, s.cctx, C.size_t(n)))
			}
		}
		if err := peerCopy(bytes)(); err != nil {
			return err
		}
		if err := s.sync(); err != nil {
			return err
		}
		if res.Seconds, err = s.timed(func() error { return repeat(iters, peerCopy(bytes)) }); err != nil {
			return err
		}
		res.GBps = transferGBps(bytes, iters, res.Seconds)
		secs, err := s.timed(func() error { return repeat(res.LatencyIters, peerCopy(res.LatencyBytes)) })
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		res.LatencyUS = secs / float64(res.LatencyIters) * 1e6
		if err := d.current(); err != nil {
			return err
		}
		return checkDeviceWindows(d, to, bytes)
	})
	return res, err
}

// enablePeer lets s's context access peer's memory; already enabled is fine.
func enablePeer(s, peer *session) error {
	if err := s.current(); err != nil {
		return err
	}
	err := check("cuCtxEnablePeerAccess", C.w_cuCtxEnablePeerAccess(peer.cctx))
	var cerr *CUDAError
	if errors.As(err, &cerr) && cerr.Code == cudaErrorPeerAccessAlreadyEnabled {
		return nil
	}
	return err
}

// checkDeviceWindows checks samples of a device buffer for srcPattern.
func checkDeviceWindows(s *session, p C.CUdeviceptr, bytes uint64) error {
	buf := make([]byte, min(64<<10, bytes))
	for _, off := range sampleWindows(bytes, uint64(len(buf))) {
		if err := s.copyToHost(buf, p+C.CUdeviceptr(off)); err != nil {
			return err
		}
		if err := checkPattern(buf, off, srcPattern); err != nil {
			return err
		}
	}
	return nil
}
