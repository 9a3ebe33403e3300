//go:build cgo

package stress

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// trapExec runs a trapping kernel for fp32 on GPU 0 and real tests otherwise.
type trapExec struct{ *CUDA }

func (e trapExec) Device(ctx context.Context, t Test, g GPU, p Plan) (Outcome, error) {
	if t == TestFP32 && g.Index == 0 {
		return Outcome{}, runPTX(ctx, g.Ordinal, trapPTX, "trap_kernel")
	}
	return e.CUDA.Device(ctx, t, g, p)
}

// On the H200 (2026-11-29) a trapping kernel gave "cuCtxSynchronize:
// CUDA_ERROR_LAUNCH_FAILED (719)", and every later call in the process, on
// either GPU, failed with it (cuDevicePrimaryCtxRetain included): the driver
// wants a new process. A new process then ran fp32 and memory on that GPU.
func TestAKernelFaultFailsByNameAndStopsCUDAWorkInTheProcess(t *testing.T) {
	if os.Getenv("GPUNODE_STRESS_FAULT_TEST") != "1" {
		t.Skip("set GPUNODE_STRESS_FAULT_TEST=1 to run: the fault leaves CUDA unusable in the test process")
	}
	onGPU(t, probeDevices, func(ctx context.Context) {
		p := Plan{Tests: []Test{TestFP32, TestHBM}, GPUs: []GPU{{Index: 0, Ordinal: 0}}, Duration: time.Second,
			Timeout: time.Minute, SampleInterval: time.Second}
		r := Run(ctx, p, trapExec{NewCUDA()}, nil, nopProgress{})
		fault, next := r.Results[0], r.Results[1]
		if fault.Status != StatusFail || len(fault.Findings) == 0 || fault.Findings[0].Kind != FindingCUDAError ||
			!strings.HasPrefix(fault.Findings[0].CUDAError, "CUDA_ERROR_") {
			t.Fatalf("the trapping kernel: %s %q %+v, want a failed test with the driver's error name", fault.Status, fault.Reason, fault.Findings)
		}
		if next.Status != StatusSkip || !strings.Contains(next.Reason, "CUDA stopped working in this process") {
			t.Fatalf("the next test: %s %q, want skipped", next.Status, next.Reason)
		}
		t.Logf("trapping kernel: %s; next test: %s", fault.Reason, next.Reason)
	})
}

// spinExec runs a kernel that never ends for fp32 and passes everything else.
type spinExec struct{}

func (spinExec) Device(ctx context.Context, t Test, g GPU, _ Plan) (Outcome, error) {
	if t == TestFP32 {
		return Outcome{}, runPTX(ctx, g.Ordinal, spinPTX, "spin_forever")
	}
	return Outcome{}, nil
}

func (spinExec) Pair(context.Context, GPU, GPU, Plan) (Outcome, error) { return Outcome{}, nil }

func TestAKernelThatNeverEndsTimesOutAndTheRunGoesOn(t *testing.T) {
	if os.Getenv("GPUNODE_STRESS_HANG_TEST") != "1" {
		t.Skip("set GPUNODE_STRESS_HANG_TEST=1 to run: it leaves a spinning kernel on GPU 0 until the test process exits")
	}
	onGPU(t, probeDevices, func(ctx context.Context) {
		p := Plan{Tests: []Test{TestFP32, TestMemory}, GPUs: []GPU{{Index: 0, Ordinal: 0}}, Duration: time.Second,
			Timeout: 3 * time.Second, SampleInterval: time.Second}
		start := time.Now()
		r := Run(ctx, p, spinExec{}, nil, nopProgress{})
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("the run took %s with a 3 s timeout", took)
		}
		if o := r.Results[0]; o.Status != StatusFail || o.Reason != "timed out after 3s" {
			t.Fatalf("the spinning test: %s %q", o.Status, o.Reason)
		}
		if o := r.Results[1]; o.Status != StatusSkip || !strings.Contains(o.Reason, "GPU 0 did not finish fp32 within 3s") {
			t.Fatalf("the GPU's next test: %s %q", o.Status, o.Reason)
		}
		t.Logf("spinning kernel: %q, then %q, in %s", r.Results[0].Reason, r.Results[1].Reason, time.Since(start).Round(time.Millisecond))
	})
}
