package stress

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestStickyCUDAErrors(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		sticky bool
	}{
		{"a kernel fault (launch failed) poisons the process", 719, true},
		{"an illegal address poisons the process", 700, true},
		{"a device-side assert poisons the process", 710, true},
		{"out of memory does not", 2, false},
		{"an uncorrectable ECC error is reported but not documented as process-wide", 214, false},
		{"a device that is unavailable does not", 46, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&CUDAError{Code: tc.code}).Sticky(); got != tc.sticky {
				t.Fatalf("Sticky(%d) = %v, want %v", tc.code, got, tc.sticky)
			}
		})
	}
}

func launchFailed(call string) error {
	return fmt.Errorf("device 0: %w", &CUDAError{Call: call, Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED", Message: "unspecified launch failure"})
}

func TestAStickyErrorFailsItsTestAndStopsLaterCUDAWork(t *testing.T) {
	// GPU 0's kernel faults; GPU 1, busy at the same time, gets the same
	// process-wide error a little later, as the H200 showed.
	gpu0Judged, gpu1Busy := make(chan struct{}), make(chan struct{})
	exec := &fakeExec{do: func(ctx context.Context, t Test, g, peer int) (Outcome, error) {
		if t != TestFP32 {
			return passing(ctx, t, g, peer)
		}
		if g == 1 {
			close(gpu1Busy)
			<-gpu0Judged
			return Outcome{}, launchFailed("cuDevicePrimaryCtxRetain")
		}
		<-gpu1Busy // GPU 1's test is under way when GPU 0's kernel faults
		return Outcome{}, launchFailed("cuCtxSynchronize")
	}}
	prog := &signalProgress{gpu: 0, done: gpu0Judged}
	r := Run(context.Background(), plan([]Test{TestFP32, TestMemory}, 2), exec, nil, prog)
	first, second := r.Results[0], r.Results[1]
	if first.Status != StatusFail || first.Findings[0].CUDAError != "CUDA_ERROR_LAUNCH_FAILED" || strings.Contains(first.Reason, "saw it first") {
		t.Fatalf("GPU 0's fault: %s %q %+v", first.Status, first.Reason, first.Findings)
	}
	if second.Status != StatusFail || !strings.Contains(second.Reason, "GPU 0's fp32 test saw it first: the error is process-wide") {
		t.Fatalf("GPU 1 after GPU 0's fault: %s %q", second.Status, second.Reason)
	}
	for _, o := range r.Results[2:] {
		if o.Status != StatusSkip || !strings.Contains(o.Reason, "CUDA stopped working in this process after GPU 0's fp32 test failed with CUDA_ERROR_LAUNCH_FAILED") {
			t.Fatalf("%s on GPU %d after the sticky error: %s %q", o.Test, o.GPU, o.Status, o.Reason)
		}
	}
	if len(exec.calls) != 2 {
		t.Fatalf("calls %v: nothing may run after a sticky error", exec.calls)
	}
}

func TestANonStickyCUDAErrorLeavesTheOtherGPUsRunning(t *testing.T) {
	exec := &fakeExec{do: func(ctx context.Context, t Test, g, peer int) (Outcome, error) {
		if t == TestFP32 && g == 0 {
			return Outcome{}, &CUDAError{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"}
		}
		return passing(ctx, t, g, peer)
	}}
	r := Run(context.Background(), plan([]Test{TestFP32, TestMemory}, 2), exec, nil, &recProgress{})
	if r.Summary.Fail != 1 || r.Summary.Pass != 3 {
		t.Fatalf("summary %+v, want the one failure and three passes", r.Summary)
	}
}

// signalProgress closes done once GPU gpu's first unit has been judged.
type signalProgress struct {
	recProgress
	gpu  int
	done chan struct{}
	once sync.Once
}

func (s *signalProgress) UnitDone(o Outcome) {
	if o.GPU == s.gpu {
		s.once.Do(func() { close(s.done) })
	}
}
