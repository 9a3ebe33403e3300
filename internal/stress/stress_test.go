package stress

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactFMA32 rounds x*a+b computed exactly to float32 with big.Float.
func exactFMA32(x, a, b float32) float32 {
	z := new(big.Float).SetPrec(200).SetFloat64(float64(x))
	z.Mul(z, new(big.Float).SetPrec(200).SetFloat64(float64(a)))
	z.Add(z, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	f, _ := z.SetMode(big.ToNearestEven).SetPrec(24).Float32()
	return f
}

func TestFMA32(t *testing.T) {
	tests := []struct {
		name    string
		x, a, b float32
	}{
		{"a plain step of the kernel's recurrence rounds once", 3, fmaA, fmaB + 0.375},
		{"an exact product plus zero is the product", 1.5, 2, 0},
		{"a float64 sum on a float32 midpoint rounds up when the tail is positive", 1 + 1.0/(1<<23), 1 + 1.0/(1<<23), 0x1p-48},
		{"a float64 sum on a float32 midpoint rounds down when the tail is negative", 1 + 1.0/(1<<23), 1 - 1.0/(1<<24), -0x1p-60},
		{"negative operands round to nearest even", -7.25, 0.1, -1e-9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := fma32(tc.x, tc.a, tc.b), exactFMA32(tc.x, tc.a, tc.b); got != want {
				t.Fatalf("fma32(%g, %g, %g) = %g, want %g", tc.x, tc.a, tc.b, got, want)
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		x := float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(40)-20))
		a := float32(rng.NormFloat64())
		b := -x * a * float32(1+rng.NormFloat64()*math.Ldexp(1, -rng.IntN(30)))
		if got, want := fma32(x, a, b), exactFMA32(x, a, b); got != want && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
			t.Fatalf("case %d: fma32(%g, %g, %g) = %g, want %g", i, x, a, b, got, want)
		}
	}
}

func TestExpectedFP32(t *testing.T) {
	tests := []struct {
		name  string
		iters int
		want  func() float32
	}{
		{"zero steps sum the chain starts 0..7", 0, func() float32 { return 28 }},
		{"a thousand steps match exact rounding of every step", 1000, func() float32 {
			var x [8]float32
			for k := range x {
				x[k] = float32(k)
				for range 1000 {
					x[k] = exactFMA32(x[k], fmaA, fmaB+float32(k)*0.125)
				}
			}
			return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := expectedFP32(tc.iters, fmaA, fmaB), tc.want(); got != want {
				t.Fatalf("expectedFP32(%d) = %g, want %g", tc.iters, got, want)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"zero bytes are refused", validateCopy(0, 1)},
		{"bytes that are not a multiple of 16 are refused", validateCopy(20, 1)},
		{"zero copy iterations are refused", validateCopy(16, 0)},
		{"negative FMA iterations are refused", validateFP32(-1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrBadInput) {
				t.Fatalf("err = %v, want ErrBadInput", tc.err)
			}
		})
	}
	if err := validateCopy(16, 1); err != nil {
		t.Fatalf("validateCopy(16, 1) = %v, want nil", err)
	}
}

func TestRates(t *testing.T) {
	if got := copyGBps(1e9, 2, 1); got != 4 {
		t.Errorf("copyGBps(1e9 bytes, 2 iters, 1 s) = %v, want 4 (read + write)", got)
	}
	if got := fmaTFLOPs(1e6, 1e6, 1); got != 16 {
		t.Errorf("fmaTFLOPs(1e6 threads, 1e6 iters, 1 s) = %v, want 16", got)
	}
	if got := copyGBps(1, 1, 0); got != 0 {
		t.Errorf("copyGBps with zero seconds = %v, want 0", got)
	}
}

func TestCheckPattern(t *testing.T) {
	buf := make([]byte, 64)
	for i := 0; i < len(buf); i += 4 {
		binary.LittleEndian.PutUint32(buf[i:], srcPattern)
	}
	if err := checkPattern(buf, 0, srcPattern); err != nil {
		t.Fatalf("intact buffer: %v", err)
	}
	buf[41] ^= 0x10
	err := checkPattern(buf, 0x1000, srcPattern)
	if !errors.Is(err, ErrSilentDataCorruption) || !contains(err.Error(), "0x1028") {
		t.Fatalf("flipped bit: err = %v, want ErrSilentDataCorruption at offset 0x1028", err)
	}
	if got := sampleWindows(1<<20, 1<<10); len(got) != 3 || got[2] != 1<<20-1<<10 {
		t.Fatalf("sampleWindows = %v, want start, middle and end", got)
	}
}

func TestWithoutDriverReturnsErrNoCUDA(t *testing.T) {
	ctx := context.Background()
	_, err := HBMBandwidth(ctx, 0, 1<<20, 1)
	if err == nil || !errors.Is(err, ErrNoCUDA) {
		t.Skipf("the CUDA driver is present here (HBMBandwidth: %v); this test covers machines without it", err)
	}
	if _, err := FP32(ctx, 0, 1); !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("FP32 without driver: err = %v, want ErrNoCUDA", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
