package stress

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

// exactFMA64 rounds x*a+b computed exactly to float64 with big.Float.
func exactFMA64(x, a, b float64) float64 {
	z := new(big.Float).SetPrec(300).SetFloat64(x)
	z.Mul(z, new(big.Float).SetPrec(300).SetFloat64(a))
	z.Add(z, new(big.Float).SetPrec(300).SetFloat64(b))
	f, _ := z.SetMode(big.ToNearestEven).SetPrec(53).Float64()
	return f
}

func TestExpectedFP64(t *testing.T) {
	tests := []struct {
		name  string
		iters int
	}{
		{"zero steps sum the chain starts 0..7", 0},
		{"one step is one rounded FMA per chain", 1},
		{"five hundred steps match exact rounding of every step", 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var x [8]float64
			for k := range x {
				x[k] = float64(k)
				for range tc.iters {
					x[k] = exactFMA64(x[k], fmaA64, fmaB64+float64(k)*0.125)
				}
			}
			want := ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))
			if got := expectedFP64(tc.iters, fmaA64, fmaB64); got != want {
				t.Fatalf("expectedFP64(%d) = %v, want %v", tc.iters, got, want)
			}
		})
	}
	if expectedFP64(1<<10, fmaA64, fmaB64) == expectedFP64(1<<11, fmaA64, fmaB64) {
		t.Fatal("the known answer does not move with the step count: a skipped step would go unnoticed")
	}
}

// results encodes n thread results of precision p, all v except wrong[i].
func results(p Precision, n int, v float64, wrong map[int]float64) []byte {
	buf := make([]byte, n*p.elemSize())
	for i := range n {
		x := v
		if w, ok := wrong[i]; ok {
			x = w
		}
		if p == PrecisionFP64 {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
		} else {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(x)))
		}
	}
	return buf
}

func TestCheckFMA(t *testing.T) {
	const want = 1.5
	tests := []struct {
		name       string
		p          Precision
		wrong      map[int]float64
		mismatches int
		first      int
	}{
		{"every fp32 thread equal to the known answer passes", PrecisionFP32, nil, 0, -1},
		{"every fp64 thread equal to the known answer passes", PrecisionFP64, nil, 0, -1},
		{"one fp64 thread off in the last bit is a mismatch", PrecisionFP64, map[int]float64{5: math.Nextafter(want, 2)}, 1, 5},
		{"two wrong fp32 threads count twice and the first is named", PrecisionFP32, map[int]float64{7: 2, 3: 0}, 2, 3},
		{"a NaN result is a mismatch", PrecisionFP64, map[int]float64{0: math.NaN()}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ComputeResult{Precision: tc.p, Threads: 16, FirstMismatch: -1, Want: want}
			checkFMA(&r, results(tc.p, 16, want, tc.wrong), want)
			if r.Mismatches != tc.mismatches || r.FirstMismatch != tc.first {
				t.Fatalf("mismatches %d first %d, want %d first %d", r.Mismatches, r.FirstMismatch, tc.mismatches, tc.first)
			}
			err := r.sdcError()
			if (err != nil) != (tc.mismatches > 0) || (err != nil && !errors.Is(err, ErrSilentDataCorruption)) {
				t.Fatalf("sdcError = %v with %d mismatches", err, tc.mismatches)
			}
			if err != nil && !strings.Contains(err.Error(), "first: thread") {
				t.Fatalf("sdcError %q does not name the first wrong thread", err)
			}
		})
	}
}

func TestValidateFMA(t *testing.T) {
	tests := []struct {
		name  string
		p     Precision
		iters int
		d     time.Duration
		ok    bool
	}{
		{"fp32 with steps and a duration is accepted", PrecisionFP32, 1, time.Second, true},
		{"fp64 with no duration runs one launch", PrecisionFP64, 1, 0, true},
		{"an unknown precision is refused", Precision("fp16"), 1, 0, false},
		{"zero steps are refused", PrecisionFP64, 0, 0, false},
		{"a negative duration is refused", PrecisionFP32, 1, -time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateFMA(tc.p, tc.iters, tc.d)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadInput)) {
				t.Fatalf("validateFMA(%q, %d, %s) = %v", tc.p, tc.iters, tc.d, err)
			}
		})
	}
}
