package stress

import (
	"context"
	"errors"
	"testing"
	"time"
)

// skipWithoutGPU skips when err says there is no driver or no device.
func skipWithoutGPU(t *testing.T, err error) {
	t.Helper()
	var cerr *CUDAError
	if errors.Is(err, ErrNoCUDA) || errors.Is(err, ErrNoDevice) ||
		(errors.As(err, &cerr) && cerr.Name == "CUDA_ERROR_NO_DEVICE") {
		t.Skipf("needs a CUDA GPU: %v", err)
	}
}

// TestOnGPU measures the H200 (or any GPU) and logs the numbers; it fails on a
// driver error or a wrong answer, not on speed (baselines come later).
func TestOnGPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bytes, iters = 4 << 30, 50
	rs, err := HBMBandwidth(ctx, 0, bytes, iters)
	skipWithoutGPU(t, err)
	if err != nil {
		t.Fatalf("HBMBandwidth: %v", err)
	}
	for _, r := range rs {
		t.Logf("%s: %-24s %d MiB x %d: %8.1f GB/s (read+write counted), %.1f%% of PyTorch's 4300",
			r.Device, r.Method, r.Bytes>>20, r.Iters, r.GBps, r.GBps/43)
	}
	fr, err := FP32(ctx, 0, 1<<20)
	if err != nil {
		t.Fatalf("FP32: %v", err)
	}
	t.Logf("%s: fp32 FMA %d threads x 8 chains x %d iters: %.2f TFLOP/s in %.1f ms, checked=%v (%d mismatches)",
		fr.Device, fr.Threads, fr.Iters, fr.TFLOPs, fr.Seconds*1e3, fr.Checked, fr.Mismatches)
}
