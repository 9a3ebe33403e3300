package stress

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Precision names the arithmetic of an FMA test.
type Precision string

// FMA precisions.
const (
	PrecisionFP32 Precision = "fp32"
	PrecisionFP64 Precision = "fp64"
)

// FP64 kernel constants, the same recurrence as FP32's in double precision.
const (
	fmaA64 = 1 - 1.0/(1<<20)
	fmaB64 = 1.0
)

// ComputeResult is an FMA throughput measurement over one or more timed
// launches (rounds). Each thread runs 8 independent chains of Iters FMAs (2
// FLOPs each) per launch, and every launch's output is checked.
type ComputeResult struct {
	Precision Precision
	Device    string
	Threads   int
	Iters     int
	Rounds    int     // timed launches
	Seconds   float64 // GPU time of the timed launches (CUDA events)
	TFLOPs    float64 // 10^12 FLOP/s over all rounds
	Checked   bool    // every thread of every round equals the host's known answer
	// Mismatches counts wrong thread results (all rounds); FirstMismatch is the
	// first wrong thread (-1 when none), Want the known answer and Got its value.
	Mismatches    int
	FirstMismatch int
	Want, Got     float64
}

// validateFMA checks an FMA test's arguments.
func validateFMA(p Precision, iters int, d time.Duration) error {
	if p != PrecisionFP32 && p != PrecisionFP64 {
		return fmt.Errorf("%w: precision %q is not fp32 or fp64", ErrBadInput, p)
	}
	if d < 0 {
		return fmt.Errorf("%w: duration %s must not be negative", ErrBadInput, d)
	}
	return validateFP32(iters)
}

// elemSize is the byte size of one thread's result.
func (p Precision) elemSize() int {
	if p == PrecisionFP64 {
		return 8
	}
	return 4
}

// expectedFP64 is what every thread of fma_fp64 must write for iters, a, b.
// math.FMA rounds once, as the GPU's fma.rn.f64 does.
func expectedFP64(iters int, a, b float64) float64 {
	var x [8]float64
	for k := range x {
		x[k] = float64(k)
		bk := b + float64(k)*0.125
		for range iters {
			x[k] = math.FMA(x[k], a, bk)
		}
	}
	return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))
}

// expectedFMA is the known answer of the kernel of precision p.
func expectedFMA(p Precision, iters int) float64 {
	if p == PrecisionFP64 {
		return expectedFP64(iters, fmaA64, fmaB64)
	}
	return float64(expectedFP32(iters, fmaA, fmaB))
}

// checkFMA compares every thread's result in buf (float32 or float64 by
// res.Precision) with want bit for bit, adding to res.Mismatches and setting
// res.FirstMismatch and res.Got on the first wrong thread of the run.
func checkFMA(res *ComputeResult, buf []byte, want float64) {
	size := res.Precision.elemSize()
	for i := 0; i+size <= len(buf); i += size {
		var got float64
		var ok bool
		if size == 8 {
			bits := binary.LittleEndian.Uint64(buf[i:])
			got, ok = math.Float64frombits(bits), bits == math.Float64bits(want)
		} else {
			bits := binary.LittleEndian.Uint32(buf[i:])
			got, ok = float64(math.Float32frombits(bits)), bits == math.Float32bits(float32(want))
		}
		if ok {
			continue
		}
		if res.Mismatches == 0 {
			res.FirstMismatch, res.Got = i/size, got
		}
		res.Mismatches++
	}
}

// sdcError is the silent-data-corruption error of a checked result, nil when
// every thread matched.
func (r *ComputeResult) sdcError() error {
	if r.Mismatches == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s FMA: %d thread results of %d launches x %d threads differ from the known answer %v (first: thread %d holds %v)",
		ErrSilentDataCorruption, r.Precision, r.Mismatches, r.Rounds+1, r.Threads, r.Want, r.FirstMismatch, r.Got)
}
