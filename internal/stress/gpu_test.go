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

// onGPU runs f with a two-minute context and skips, saying why, without a GPU.
func onGPU(t *testing.T, probe func(ctx context.Context) error, f func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	skipWithoutGPU(t, probe(ctx))
	f(ctx)
}

func probeDevices(ctx context.Context) error {
	ds, err := Devices(ctx)
	if err == nil && len(ds) == 0 {
		return ErrNoDevice
	}
	return err
}

func TestFP64OnGPU(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		r, err := RunFMA(ctx, 0, PrecisionFP64, 1<<18, time.Second)
		if err != nil {
			t.Fatalf("RunFMA fp64: %v", err)
		}
		if !r.Checked || r.Rounds < 1 {
			t.Fatalf("fp64: checked %v after %d rounds", r.Checked, r.Rounds)
		}
		t.Logf("%s: fp64 FMA %d threads x 8 chains x %d iters x %d rounds: %.2f TFLOP/s, checked", r.Device, r.Threads, r.Iters, r.Rounds, r.TFLOPs)
	})
}

func TestMemoryTestFindsAnInjectedWrongWordWithItsAddress(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		const word = 12345
		opts := MemoryOptions{Bytes: 256 << 20, MaxPasses: 6, inject: func(p int, n uint64) (uint64, uint32, bool) {
			return word, 0xDEADBEEF, p == 4
		}}
		r, err := RunMemory(ctx, 0, opts)
		if !errors.Is(err, ErrMemoryError) {
			t.Fatalf("RunMemory with a corrupted word: err = %v, want ErrMemoryError", err)
		}
		if r.ErrorCount != 1 || len(r.Errors) != 1 {
			t.Fatalf("found %d wrong words (%v), want exactly the injected one", r.ErrorCount, r.Errors)
		}
		e := r.Errors[0]
		ps := passAt(4)
		if e.Offset != 4*word || e.Address != r.BaseAddress+4*word || e.Actual != 0xDEADBEEF || e.Pass != 4 ||
			e.Expected != patternWord(ps.Kind, ps.Shift, defaultSeed, word) {
			t.Fatalf("error %+v: want offset %#x, actual 0xdeadbeef, pass 4", e, 4*word)
		}
		t.Logf("injected wrong word found: %s", e)
	})
}

func TestMemoryOnGPU(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		r, err := RunMemory(ctx, 0, MemoryOptions{Duration: 3 * time.Second})
		if err != nil {
			t.Fatalf("RunMemory: %v", err)
		}
		if r.Passes < 3 || r.Bytes < r.FreeBytes/2 {
			t.Fatalf("memory test covered %d bytes of %d free in %d passes; want most of it and every pattern", r.Bytes, r.FreeBytes, r.Passes)
		}
		t.Logf("%s: memory %.1f GiB of %.1f GiB free, %d passes (%v), %.0f GB/s write+verify, %d wrong words",
			r.Device, float64(r.Bytes)/(1<<30), float64(r.FreeBytes)/(1<<30), r.Passes, r.Patterns, r.GBps, r.ErrorCount)
	})
}

func TestPCIeOnGPU(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		r, err := RunPCIe(ctx, 0, 1<<30, 10)
		if err != nil {
			t.Fatalf("RunPCIe: %v", err)
		}
		ref := PCIeTheoreticalGBps(5, 16)
		t.Logf("%s: pinned 1 GiB x 10: host to device %.1f GB/s, device to host %.1f GB/s (gen5 x16 theoretical %.1f)",
			r.Device, r.H2DGBps, r.D2HGBps, ref)
		if r.H2DGBps <= 0 || r.D2HGBps <= 0 {
			t.Fatalf("rates %v / %v, want positive", r.H2DGBps, r.D2HGBps)
		}
	})
}

func TestP2POnEveryPair(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		ds, _ := Devices(ctx)
		if len(ds) < 2 {
			t.Skipf("peer-to-peer needs two GPUs; this machine has %d", len(ds))
		}
		for _, pr := range OrderedPairs(len(ds)) {
			r, err := RunP2P(ctx, pr.Src, pr.Dst, 1<<30, 10)
			if err != nil {
				t.Fatalf("RunP2P %d->%d: %v", pr.Src, pr.Dst, err)
			}
			if !r.PeerAccess {
				t.Logf("%d->%d: no peer access", pr.Src, pr.Dst)
				continue
			}
			t.Logf("%d->%d: %.1f GB/s (1 GiB x 10), %.2f us a 4-byte copy", pr.Src, pr.Dst, r.GBps, r.LatencyUS)
		}
	})
}

func TestRunWithCUDAExecutorOnGPU(t *testing.T) {
	onGPU(t, probeDevices, func(ctx context.Context) {
		ds, _ := Devices(ctx)
		var gpus []GPU
		for _, d := range ds {
			gpus = append(gpus, GPU{Index: d.Ordinal, Ordinal: d.Ordinal, Name: d.Name, BusID: d.BusID})
		}
		p := Plan{Tests: AllTests(), GPUs: gpus, Duration: time.Second, Timeout: time.Minute, SampleInterval: 100 * time.Millisecond, PCIeMinRatio: 0.75}
		r := Run(ctx, p, NewCUDA(), nil, nopProgress{})
		for _, o := range r.Results {
			t.Logf("%s gpu %d peer %v: %s %s %v", o.Test, o.GPU, o.Peer, o.Status, o.Reason, o.Metrics)
		}
		if !r.Passed {
			t.Fatalf("run failed: %+v", r.Summary)
		}
	})
}

type nopProgress struct{}

func (nopProgress) TestStarted(Test, int)    {}
func (nopProgress) UnitDone(Outcome)         {}
func (nopProgress) TestDone(Test, []Outcome) {}
