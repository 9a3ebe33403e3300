//go:build !cgo

package stress

import (
	"context"
	"fmt"
)

// HBMBandwidth needs cgo; this build has none, so it always wraps ErrNoCUDA.
func HBMBandwidth(ctx context.Context, dev int, bytes uint64, iters int) ([]Result, error) {
	if err := validateCopy(bytes, iters); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: built without cgo", ErrNoCUDA)
}

// FP32 needs cgo; this build has none, so it always wraps ErrNoCUDA.
func FP32(ctx context.Context, dev int, iters int) (FP32Result, error) {
	if err := validateFP32(iters); err != nil {
		return FP32Result{}, err
	}
	return FP32Result{}, fmt.Errorf("%w: built without cgo", ErrNoCUDA)
}
