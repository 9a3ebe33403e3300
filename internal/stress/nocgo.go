//go:build !cgo

package stress

import (
	"context"
	"fmt"
	"time"
)

// HBMBandwidth needs cgo; this build has none, so it always wraps ErrNoCUDA.
func HBMBandwidth(ctx context.Context, dev int, bytes uint64, iters int) ([]Result, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: built without cgo", ErrNoCUDA)
}

// RunHBM needs cgo; this build has none, so it always wraps ErrNoCUDA.
func RunHBM(ctx context.Context, dev int, bytes uint64, iters int, d time.Duration) ([]Result, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return nil, err
	}
	return nil, errNoCgo
}

// FP32 needs cgo; this build has none, so it always wraps ErrNoCUDA.
func FP32(ctx context.Context, dev int, iters int) (FP32Result, error) {
	if err := validateFP32(iters); err != nil {
		return FP32Result{}, err
	}
	return FP32Result{}, fmt.Errorf("%w: built without cgo", ErrNoCUDA)
}

// errNoCgo is what every test returns in a build without cgo.
var errNoCgo = fmt.Errorf("%w: built without cgo", ErrNoCUDA)

// Devices needs cgo; this build has none, so it always wraps ErrNoCUDA.
func Devices(ctx context.Context) ([]DeviceInfo, error) { return nil, errNoCgo }

// FP64 needs cgo; this build has none, so it always wraps ErrNoCUDA.
func FP64(ctx context.Context, dev int, iters int) (ComputeResult, error) {
	return RunFMA(ctx, dev, PrecisionFP64, iters, 0)
}

// RunFMA needs cgo; this build has none, so it always wraps ErrNoCUDA.
func RunFMA(ctx context.Context, dev int, p Precision, iters int, d time.Duration) (ComputeResult, error) {
	if err := validateFMA(p, iters, d); err != nil {
		return ComputeResult{}, err
	}
	return ComputeResult{}, errNoCgo
}

// RunMemory needs cgo; this build has none, so it always wraps ErrNoCUDA.
func RunMemory(ctx context.Context, dev int, opts MemoryOptions) (MemoryResult, error) {
	if err := validateMemory(opts); err != nil {
		return MemoryResult{}, err
	}
	return MemoryResult{}, errNoCgo
}

// RunPCIe needs cgo; this build has none, so it always wraps ErrNoCUDA.
func RunPCIe(ctx context.Context, dev int, bytes uint64, iters int) (PCIeResult, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return PCIeResult{}, err
	}
	return PCIeResult{}, errNoCgo
}

// RunP2P needs cgo; this build has none, so it always wraps ErrNoCUDA.
func RunP2P(ctx context.Context, src, dst int, bytes uint64, iters int) (P2PResult, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return P2PResult{}, err
	}
	return P2PResult{}, errNoCgo
}
