package stress

import (
	"fmt"
	"math"
)

// FP32 kernel constants: a = 1 - 2^-20 keeps every chain moving towards its
// fixed point b_k * 2^20 for about 10^6 steps, so a wrong step late or early
// still shows in the result; b_k = fmaB + k/8.
const (
	fmaA = float32(1 - 1.0/(1<<20))
	fmaB = float32(1)
)

// FP32Result is one FP32 FMA measurement. Each thread runs 8 independent
// chains of iters FMAs (2 FLOPs each).
type FP32Result struct {
	Device     string
	Threads    int
	Iters      int
	Seconds    float64 // GPU time of the timed launch (CUDA events)
	TFLOPs     float64 // 10^12 FLOP/s
	Checked    bool    // every thread's result equals the host's known answer
	Mismatches int     // threads whose result differs
}

// validateFP32 checks FP32's arguments.
func validateFP32(iters int) error {
	if iters <= 0 {
		return fmt.Errorf("%w: iters %d must be positive", ErrBadInput, iters)
	}
	return nil
}

// fmaTFLOPs is the FLOP rate of threads x 8 chains x iters FMAs taking secs.
func fmaTFLOPs(threads, iters int, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(threads) * 8 * 2 * float64(iters) / secs / 1e12
}

// expectedFP32 is what every thread of fma_fp32 must write for iters, a, b.
func expectedFP32(iters int, a, b float32) float32 {
	var x [8]float32
	for k := range x {
		x[k] = float32(k)
	}
	for k := range x {
		bk := b + float32(k)*0.125
		for range iters {
			x[k] = fma32(x[k], a, bk)
		}
	}
	return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))
}

// fma32 is x*a+b rounded once to float32 (round to nearest even), as the
// GPU's fma.rn.f32 computes it. The product is exact in float64; the sum is
// split into s+t exactly (TwoSum), and only a float64 s that lies exactly
// halfway between two float32s needs t to break the tie.
func fma32(x, a, b float32) float32 {
	p := float64(x) * float64(a)
	s := p + float64(b)
	bb := s - p
	t := (p - (s - bb)) + (float64(b) - bb)
	r := float32(s)
	if float64(r) == s || t == 0 || math.IsInf(float64(r), 0) {
		return r
	}
	other := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if s != (float64(r)+float64(other))/2 {
		return r
	}
	// s is a midpoint and the exact value is s+t: round towards t.
	lo, hi := min(r, other), max(r, other)
	if t > 0 {
		return hi
	}
	return lo
}
