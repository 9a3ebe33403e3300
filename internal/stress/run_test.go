package stress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestParseTests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		err  string
	}{
		{"all is every test in run order", "all", "hbm,fp32,fp64,memory,pcie,p2p", ""},
		{"a list is put in run order", "p2p,hbm", "hbm,p2p", ""},
		{"names are trimmed, case-folded and deduplicated", " FP32 ,fp32", "fp32", ""},
		{"an unknown name is refused and the known ones listed", "hbm,gemm", "", `unknown test "gemm" (known: hbm, fp32`},
		{"an empty name is refused", "hbm,", "", "empty test name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTests(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadInput) {
					t.Fatalf("ParseTests(%q) err = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || joinTests(got) != strings.ReplaceAll(tc.want, ",", ", ") {
				t.Fatalf("ParseTests(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	pcie := func(ratio float64) Metric {
		return Metric{Name: "host to device", Value: 63 * ratio, Unit: "GB/s", Reference: 63, Ratio: ratio, MinRatio: 0.75}
	}
	tests := []struct {
		name    string
		o       Outcome
		err     error
		status  Status
		reason  string
		finding string
	}{
		{"a clean result passes", Outcome{Metrics: []Metric{{Name: "x", Value: 1}}}, nil, StatusPass, "", ""},
		{"a pair without peer access does not apply", Outcome{}, fmt.Errorf("%w: no peer access", ErrNotApplicable), StatusNotApplicable, "no peer access", ""},
		{"no driver skips saying libcuda.so.1 is not found", Outcome{}, fmt.Errorf("%w: dlopen failed", ErrNoCUDA), StatusSkip, "libcuda.so.1 not found: dlopen failed", ""},
		{"a wrong FMA answer is silent data corruption", Outcome{}, fmt.Errorf("%w: 3 threads", ErrSilentDataCorruption), StatusFail, "3 threads", FindingSDC},
		{"a lost GPU fails with the driver's error name",
			Outcome{}, fmt.Errorf("device 0: %w", &CUDAError{Call: "cuCtxSynchronize", Code: 46, Name: "CUDA_ERROR_DEVICE_UNAVAILABLE", Message: "gone"}),
			StatusFail, "CUDA_ERROR_DEVICE_UNAVAILABLE", FindingCUDAError},
		{"a test past its timeout fails saying how long it had", Outcome{}, errTimedOut, StatusFail, "timed out after 1m0s", FindingTimeout},
		{"a rate at its floor passes", Outcome{Metrics: []Metric{pcie(0.75)}}, nil, StatusPass, "", ""},
		{"a rate under its floor fails naming both", Outcome{Metrics: []Metric{pcie(0.5)}}, nil, StatusFail, "50% of 63.0 GB/s, under the 75% floor", FindingBelowRef},
		{"a non-benign clock event fails the test",
			Outcome{Clocks: &ClockSummary{Throttle: []gpu.ClockEvent{gpu.ClockEventHWPowerBrake}}}, nil, StatusFail, "hw-power-brake-slowdown", FindingClockEvent},
		{"a benign clock event passes",
			Outcome{Clocks: &ClockSummary{Events: []gpu.ClockEvent{gpu.ClockEventSWPowerCap}}}, nil, StatusPass, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := judge(tc.o, tc.err, time.Minute)
			if o.Status != tc.status || !strings.Contains(o.Reason, tc.reason) {
				t.Fatalf("status %s reason %q, want %s containing %q", o.Status, o.Reason, tc.status, tc.reason)
			}
			if o.Metrics == nil {
				t.Fatal("metrics is nil; JSON must carry an empty list")
			}
			if tc.finding != "" && (len(o.Findings) == 0 || o.Findings[len(o.Findings)-1].Kind != tc.finding) {
				t.Fatalf("findings %+v, want a %s", o.Findings, tc.finding)
			}
		})
	}
}

// fakeExec answers every test from a function of the test and GPU index.
type fakeExec struct {
	mu    sync.Mutex
	calls []string
	do    func(ctx context.Context, t Test, g, peer int) (Outcome, error)
}

func (f *fakeExec) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeExec) Device(ctx context.Context, t Test, g GPU, _ Plan) (Outcome, error) {
	f.record(fmt.Sprintf("%s/%d", t, g.Index))
	return f.do(ctx, t, g.Index, -1)
}

func (f *fakeExec) Pair(ctx context.Context, src, dst GPU, _ Plan) (Outcome, error) {
	f.record(fmt.Sprintf("p2p/%d-%d", src.Index, dst.Index))
	return f.do(ctx, TestP2P, src.Index, dst.Index)
}

func passing(context.Context, Test, int, int) (Outcome, error) {
	return Outcome{Metrics: []Metric{{Name: "rate", Value: 1, Unit: "GB/s"}}}, nil
}

type recProgress struct {
	mu     sync.Mutex
	events []string
}

func (r *recProgress) add(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }

func (r *recProgress) TestStarted(t Test, n int) { r.add(fmt.Sprintf("start %s %d", t, n)) }
func (r *recProgress) UnitDone(o Outcome)        { r.add("unit " + string(o.Test)) }
func (r *recProgress) TestDone(t Test, o []Outcome) {
	r.add(fmt.Sprintf("done %s %d", t, len(o)))
}

func gpusN(n int) []GPU {
	out := make([]GPU, n)
	for i := range out {
		out[i] = GPU{Index: i, Ordinal: i, Name: "NVIDIA H200"}
	}
	return out
}

func plan(tests []Test, n int) Plan {
	return Plan{Tests: tests, GPUs: gpusN(n), Duration: time.Millisecond, Timeout: time.Second, SampleInterval: time.Millisecond}
}

func TestRunReportsEveryTestOnEveryGPUInOrder(t *testing.T) {
	prog := &recProgress{}
	r := Run(context.Background(), plan(AllTests(), 3), &fakeExec{do: passing}, nil, prog)
	if !r.Passed || r.Summary.Pass != 5*3+6 || len(r.Results) != 21 || r.Schema != Schema {
		t.Fatalf("passed %v summary %+v results %d, want 21 passes", r.Passed, r.Summary, len(r.Results))
	}
	if r.Results[0].Test != TestHBM || r.Results[2].GPU != 2 || r.Results[15].Test != TestP2P || *r.Results[15].Peer != 1 {
		t.Fatalf("results out of order: %+v", r.Results[:3])
	}
	if got := strings.Join(prog.events[:5], "|"); got != "start hbm 3|unit hbm|unit hbm|unit hbm|done hbm 3" {
		t.Fatalf("progress = %s", got)
	}
	if r.Results[0].Clocks != nil {
		t.Fatalf("clocks %+v without a sampler, want none", r.Results[0].Clocks)
	}
}

func TestRunWithOneGPUMarksPeerToPeerNotApplicable(t *testing.T) {
	r := Run(context.Background(), plan([]Test{TestHBM, TestP2P}, 1), &fakeExec{do: passing}, nil, &recProgress{})
	p2p := r.Results[1]
	if !r.Passed || p2p.Status != StatusNotApplicable || !strings.Contains(p2p.Reason, "needs two GPUs; 1 selected") {
		t.Fatalf("passed %v, p2p %+v", r.Passed, p2p)
	}
}

func TestRunWithoutGPUsSkipsEachTestWithTheReason(t *testing.T) {
	p := plan([]Test{TestHBM, TestFP32}, 0)
	p.GPUError = fmt.Errorf("%w: dlopen libcuda.so.1: no such file", ErrNoCUDA)
	r := Run(context.Background(), p, &fakeExec{do: passing}, nil, &recProgress{})
	if r.Passed || r.Summary.Skip != 2 || len(r.Results) != 2 {
		t.Fatalf("passed %v summary %+v, want two skips and a failed run", r.Passed, r.Summary)
	}
	for _, o := range r.Results {
		if o.GPU != -1 || !strings.HasPrefix(o.Reason, "libcuda.so.1 not found") {
			t.Fatalf("%s: gpu %d reason %q", o.Test, o.GPU, o.Reason)
		}
	}
}

func TestAHungGPUFailsItsTestAndSkipsItsLaterOnes(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	exec := &fakeExec{do: func(ctx context.Context, t Test, g, peer int) (Outcome, error) {
		if t == TestFP32 && g == 1 {
			<-release // a kernel that never finishes: ignores its context
		}
		return passing(ctx, t, g, peer)
	}}
	p := plan([]Test{TestFP32, TestMemory, TestP2P}, 2)
	p.Timeout = 300 * time.Millisecond
	r := Run(context.Background(), p, exec, nil, &recProgress{})
	byKey := map[string]Outcome{}
	for _, o := range r.Results {
		byKey[fmt.Sprintf("%s/%d", o.Test, o.GPU)] = o
	}
	if o := byKey["fp32/1"]; o.Status != StatusFail || o.Reason != "timed out after 300ms" {
		t.Fatalf("hung fp32 on GPU 1: %s %q", o.Status, o.Reason)
	}
	if o := byKey["memory/1"]; o.Status != StatusSkip || !strings.Contains(o.Reason, "GPU 1 did not finish fp32 within 300ms") {
		t.Fatalf("memory on the hung GPU: %s %q", o.Status, o.Reason)
	}
	if o := byKey["memory/0"]; o.Status != StatusPass {
		t.Fatalf("memory on the healthy GPU: %s %q", o.Status, o.Reason)
	}
	if o := byKey["p2p/0"]; o.Status != StatusSkip {
		t.Fatalf("a pair with the hung GPU: %s %q, want skip", o.Status, o.Reason)
	}
	if r.Passed {
		t.Fatal("a run with a hung GPU passed")
	}
}

func TestAnInterruptedRunSkipsWhatIsLeft(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	exec := &fakeExec{do: func(c context.Context, t Test, g, peer int) (Outcome, error) {
		cancel()
		return passing(c, t, g, peer)
	}}
	r := Run(ctx, plan([]Test{TestPCIe}, 2), exec, nil, &recProgress{})
	if r.Results[1].Status != StatusSkip || !strings.Contains(r.Results[1].Reason, "interrupted") {
		t.Fatalf("second GPU after the interrupt: %s %q", r.Results[1].Status, r.Results[1].Reason)
	}
}

// throttleSampler reports a hardware slowdown on GPU 1.
type throttleSampler struct{}

func (throttleSampler) SampleClocks(context.Context) ([]ClockSample, error) {
	now := time.Now()
	return []ClockSample{
		{Time: now, GPU: 0, SMClockMHz: 1980},
		{Time: now, GPU: 1, SMClockMHz: 990, Events: []gpu.ClockEvent{gpu.ClockEventHWSlowdown}},
	}, nil
}

func TestThrottlingSeenDuringATestFailsItOnThatGPU(t *testing.T) {
	r := Run(context.Background(), plan([]Test{TestHBM}, 2), &fakeExec{do: passing}, throttleSampler{}, &recProgress{})
	ok, hot := r.Results[0], r.Results[1]
	if ok.Status != StatusPass || ok.Clocks == nil || ok.Clocks.MinSMClockMHz != 1980 {
		t.Fatalf("GPU 0: %s clocks %+v", ok.Status, ok.Clocks)
	}
	if hot.Status != StatusFail || !strings.Contains(hot.Reason, "hw-slowdown") || hot.Clocks.MinSMClockMHz != 990 {
		t.Fatalf("GPU 1: %s %q clocks %+v", hot.Status, hot.Reason, hot.Clocks)
	}
}

func TestPCIeMetricsCompareWithTheMaximumLink(t *testing.T) {
	r := PCIeResult{Bytes: 1 << 30, Iters: 10, H2DGBps: 55.5, D2HGBps: 30}
	ms := pcieMetrics(r, GPU{PCIeGenMax: 5, PCIeWidthMax: 16, PCIeGen: 1, PCIeWidth: 16}, 0.75)
	if ms[0].Reference < 63 || ms[0].Reference > 63.1 || ms[0].MinRatio != 0.75 || !strings.Contains(ms[0].Note, "now gen1 x16") {
		t.Fatalf("host to device %+v: want the gen5 x16 reference and the idle link noted", ms[0])
	}
	if o := judge(Outcome{Metrics: ms}, nil, time.Minute); o.Status != StatusFail || !strings.Contains(o.Reason, "device to host 30.0 GB/s") {
		t.Fatalf("a slow device-to-host direction: %s %q", o.Status, o.Reason)
	}
	if ms := pcieMetrics(r, GPU{}, 0.75); ms[0].Reference != 0 || !strings.Contains(ms[0].Note, "no reference") {
		t.Fatalf("unknown link: %+v, want no reference", ms[0])
	}
}

func TestMemoryOutcomeHasAFindingPerWrongWord(t *testing.T) {
	r := MemoryResult{Device: "NVIDIA H200", Bytes: 1 << 30, Passes: 3, ErrorCount: 2,
		Errors: []MemoryError{{Address: 0x10, Offset: 0x10}, {Address: 0x20, Offset: 0x20}}}
	o := memoryOutcome(Outcome{}, r)
	if len(o.Findings) != 2 || o.Findings[1].Kind != FindingMemory || o.Findings[1].Memory.Address != 0x20 {
		t.Fatalf("findings %+v", o.Findings)
	}
	if o.Metrics[3].Name != "wrong" || o.Metrics[3].Value != 2 {
		t.Fatalf("metrics %+v", o.Metrics)
	}
}
