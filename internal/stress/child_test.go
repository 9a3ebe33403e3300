package stress

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeChildEnv makes the test binary a fake child: the protocol served by
// ServeChild with fakeChild, whose fp32 test on the child's GPU behaves as
// the variable says.
const fakeChildEnv = "GPUNODE_STRESS_FAKE_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeChildEnv); mode != "" {
		fmt.Fprintln(os.Stderr, "fake child starting")
		if err := ServeChild(context.Background(), os.Stdin, os.Stdout, fakeChild{mode: mode}); err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeChild passes every test, naming its process in Device, except fp32 in
// the modes hang, crash, garbage and sticky.
type fakeChild struct{ mode string }

func (f fakeChild) Device(ctx context.Context, t Test, g GPU, _ Plan) (Outcome, error) {
	o := Outcome{Device: fmt.Sprintf("fake pid %d", os.Getpid()), Metrics: []Metric{{Name: "ok", Value: 1, Unit: "ok"}}}
	if t != TestFP32 {
		return o, nil
	}
	switch f.mode {
	case "hang":
		select {} // like a spinning kernel: ctx is not looked at
	case "crash":
		fmt.Fprintln(os.Stderr, "fake driver: about to crash")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "garbage":
		fmt.Println("this is not JSON")
		select {}
	case "sticky":
		return o, &CUDAError{Call: "cuCtxSynchronize", Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED", Message: "unspecified launch failure"}
	}
	return o, nil
}

func (f fakeChild) Pair(_ context.Context, src, dst GPU, _ Plan) (Outcome, error) {
	if f.mode == "no-peer" {
		return Outcome{}, fmt.Errorf("%w: GPU %d cannot access GPU %d's memory", ErrNotApplicable, dst.Index, src.Index)
	}
	return Outcome{Device: fmt.Sprintf("fake pid %d", os.Getpid()), Metrics: []Metric{}}, nil
}

// fakeChildren runs fake children: GPU 0's in mode, every other one passing.
func fakeChildren(t *testing.T, mode string) *Children {
	t.Helper()
	e := &Children{KillWait: 5 * time.Second, Command: func(gs []GPU) *exec.Cmd {
		m := "pass"
		if len(gs) == 1 && gs[0].Index == 0 {
			m = mode
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		// A race-enabled binary sleeps a second at exit unless told not to.
		cmd.Env = append(os.Environ(), fakeChildEnv+"="+m, "GORACE=atexit_sleep_ms=0")
		return cmd
	}}
	t.Cleanup(e.Close)
	return e
}

func outcomeOf(t *testing.T, r Report, test Test, gpu int) Outcome {
	t.Helper()
	for _, o := range r.Results {
		if o.Test == test && o.GPU == gpu {
			return o
		}
	}
	t.Fatalf("no %s result for GPU %d in %+v", test, gpu, r.Results)
	return Outcome{}
}

func TestAChildThatFailsFp32FailsThatTestAloneAndTheRunGoesOn(t *testing.T) {
	cases := []struct {
		name, mode string
		status     Status
		reason     []string
		findings   string
	}{
		{"a child that hangs is killed at the timeout", "hang", StatusFail, []string{"timed out after 2s; its child process is killed, which frees the GPU for its next test"}, FindingTimeout},
		{"a child that crashes is reported with its signal and last stderr line", "crash", StatusFail,
			[]string{"child process failed: the child for GPU 0 (pid ", "ended during the fp32 test: signal: killed", "last stderr line: fake driver: about to crash"}, ""},
		{"a child that prints garbage is killed and quoted", "garbage", StatusFail, []string{`printed "this is not JSON", not a result`}, ""},
		{"a sticky CUDA error stays in its child", "sticky", StatusFail, []string{"CUDA_ERROR_LAUNCH_FAILED (719)"}, FindingCUDAError},
		{"a child that passes passes", "pass", StatusPass, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Plan{Tests: []Test{TestHBM, TestFP32, TestMemory, TestP2P}, GPUs: []GPU{{Index: 0}, {Index: 1, Ordinal: 1}},
				Duration: time.Second, Timeout: 2 * time.Second, SampleInterval: time.Second}
			start := time.Now()
			r := Run(context.Background(), p, fakeChildren(t, tc.mode), nil, nopProgress{})
			if took := time.Since(start); took > 20*time.Second {
				t.Fatalf("the run took %s", took)
			}
			fp := outcomeOf(t, r, TestFP32, 0)
			if fp.Status != tc.status {
				t.Fatalf("GPU 0's fp32: %s %q, want %s", fp.Status, fp.Reason, tc.status)
			}
			for _, w := range tc.reason {
				if !strings.Contains(fp.Reason, w) {
					t.Errorf("GPU 0's fp32 reason %q lacks %q", fp.Reason, w)
				}
			}
			if tc.findings != "" && (len(fp.Findings) == 0 || fp.Findings[0].Kind != tc.findings) {
				t.Errorf("GPU 0's fp32 findings %+v, want %s", fp.Findings, tc.findings)
			}
			for _, o := range r.Results {
				if o.Test == TestFP32 && o.GPU == 0 {
					continue
				}
				if o.Status != StatusPass {
					t.Errorf("%s on GPU %d: %s %q, want pass (only GPU 0's fp32 is at fault)", o.Test, o.GPU, o.Status, o.Reason)
				}
			}
			before, after := outcomeOf(t, r, TestHBM, 0).Device, outcomeOf(t, r, TestMemory, 0).Device
			if (tc.mode == "pass") != (before == after) {
				t.Errorf("GPU 0 ran hbm in %q and memory in %q: want one child unless fp32 ended it", before, after)
			}
			if p2p := outcomeOf(t, r, TestP2P, 0); p2p.Device == after || p2p.Device == outcomeOf(t, r, TestMemory, 1).Device {
				t.Errorf("p2p ran in %q, a single-GPU child's process", p2p.Device)
			}
		})
	}
}

func TestAChildsErrorsAreJudgedAsInProcess(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"a pair without peer access does not apply", fmt.Errorf("%w: GPU 1 cannot access GPU 0's memory", ErrNotApplicable)},
		{"no driver skips", fmt.Errorf("%w: dlopen failed", ErrNoCUDA)},
		{"a wrong answer is silent data corruption", fmt.Errorf("fp32: %w: 3 threads differ", ErrSilentDataCorruption)},
		{"a CUDA error keeps its name", fmt.Errorf("memory: %w", &CUDAError{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"})},
		{"any other error fails", fmt.Errorf("something else")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := judge(Outcome{Test: TestFP32}, tc.err, time.Minute)
			got := judge(Outcome{Test: TestFP32}, toWire(tc.err).err(), time.Minute)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("through the wire: %+v\nin process:       %+v", got, want)
			}
		})
	}
}

func TestAChildThatCannotStartFailsItsTests(t *testing.T) {
	e := &Children{Command: func([]GPU) *exec.Cmd { return exec.Command("/nonexistent/gpunode") }}
	defer e.Close()
	p := Plan{Tests: []Test{TestHBM}, GPUs: []GPU{{Index: 0}}, Duration: time.Second, Timeout: 5 * time.Second}
	o := Run(context.Background(), p, e, nil, nopProgress{}).Results[0]
	if o.Status != StatusFail || !strings.Contains(o.Reason, "starting /nonexistent/gpunode for GPU 0") {
		t.Fatalf("%s %q, want a failure naming the binary", o.Status, o.Reason)
	}
}
