package stress

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Test names one stress test.
type Test string

// The tests, in the order `gpunode stress` runs them.
const (
	TestHBM    Test = "hbm"
	TestFP32   Test = "fp32"
	TestFP64   Test = "fp64"
	TestMemory Test = "memory"
	TestPCIe   Test = "pcie"
	TestP2P    Test = "p2p"
)

// AllTests lists every test in run order.
func AllTests() []Test { return []Test{TestHBM, TestFP32, TestFP64, TestMemory, TestPCIe, TestP2P} }

// ParseTests reads a comma-separated list of test names ("all" for every
// test) into run order, without duplicates.
func ParseTests(s string) ([]Test, error) {
	want := map[Test]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "all":
			for _, t := range AllTests() {
				want[t] = true
			}
		case "":
			return nil, fmt.Errorf("%w: empty test name in %q", ErrBadInput, s)
		default:
			t := Test(f)
			if !isTest(t) {
				return nil, fmt.Errorf("%w: unknown test %q (known: %s, all)", ErrBadInput, f, joinTests(AllTests()))
			}
			want[t] = true
		}
	}
	var out []Test
	for _, t := range AllTests() {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

func isTest(t Test) bool {
	for _, k := range AllTests() {
		if k == t {
			return true
		}
	}
	return false
}

func joinTests(ts []Test) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Status is a test's verdict on one GPU or pair.
type Status string

// Statuses. Skip means the test could not run (the command fails); NotApplicable
// means it does not apply (a pair without peer access, one GPU for p2p).
const (
	StatusPass          Status = "pass"
	StatusFail          Status = "fail"
	StatusSkip          Status = "skip"
	StatusNotApplicable Status = "not-applicable"
)

// ErrNotApplicable marks a test that does not apply to this GPU or pair.
var ErrNotApplicable = errors.New("not applicable")

// Metric is one measured value. Reference, Ratio and MinRatio are set when the
// value has a reference to compare with (the PCIe link's theoretical rate):
// Ratio = Value / Reference, and a Ratio under MinRatio fails the test.
type Metric struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Reference float64 `json:"reference,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	MinRatio  float64 `json:"minRatio,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// Finding kinds.
const (
	FindingSDC         = "silent-data-corruption"
	FindingMemory      = "memory-error"
	FindingClockEvent  = "clock-event"
	FindingBelowRef    = "below-reference"
	FindingCUDAError   = "cuda-error"
	FindingTimeout     = "timeout"
	FindingInterrupted = "interrupted"
)

// Finding is one thing a test found wrong.
type Finding struct {
	Kind    string       `json:"kind"`
	Message string       `json:"message"`
	Memory  *MemoryError `json:"memory,omitempty"`
	// CUDAError is the driver's name for a failed call, e.g. CUDA_ERROR_ECC_UNCORRECTABLE.
	CUDAError string `json:"cudaError,omitempty"`
}

// Outcome is one test on one GPU (or one ordered pair for p2p).
type Outcome struct {
	Test     Test          `json:"test"`
	GPU      int           `json:"gpu"`
	Peer     *int          `json:"peer,omitempty"`
	Device   string        `json:"device,omitempty"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	Metrics  []Metric      `json:"metrics"`
	Findings []Finding     `json:"findings,omitempty"`
	Clocks   *ClockSummary `json:"clocks,omitempty"`
	Seconds  float64       `json:"seconds"`
}

// judge turns what an executor returned into the outcome's status, reason and
// findings: an error that says the test does not apply, could not run, timed
// out or failed; otherwise a metric below its reference or a throttling clock
// event fails the test, and anything else passes.
func judge(o Outcome, err error, timeout time.Duration) Outcome {
	if o.Metrics == nil {
		o.Metrics = []Metric{}
	}
	var cerr *CUDAError
	switch {
	case err == nil:
	case errors.Is(err, ErrNotApplicable):
		o.Status, o.Reason = StatusNotApplicable, strings.TrimPrefix(err.Error(), ErrNotApplicable.Error()+": ")
		return o
	case errors.Is(err, ErrNoCUDA):
		o.Status, o.Reason = StatusSkip, "libcuda.so.1 not found: "+strings.TrimPrefix(err.Error(), ErrNoCUDA.Error()+": ")
		return o
	case errors.Is(err, ErrNoDevice):
		o.Status, o.Reason = StatusSkip, err.Error()
		return o
	case errors.Is(err, errHung):
		o.Status, o.Reason = StatusSkip, err.Error()
		return o
	case errors.Is(err, errTimedOut):
		// What wraps errTimedOut after it ("; the child process ...") follows.
		o.Status, o.Reason = StatusFail, fmt.Sprintf("%v after %s%s", errTimedOut, timeout, strings.TrimPrefix(err.Error(), errTimedOut.Error()))
		o.Findings = append(o.Findings, Finding{Kind: FindingTimeout, Message: o.Reason})
		return o
	case errors.Is(err, errInterrupted):
		o.Status, o.Reason = StatusSkip, err.Error()
		return o
	default:
		o.Status, o.Reason = StatusFail, err.Error()
		switch {
		case errors.Is(err, ErrSilentDataCorruption):
			o.Findings = append(o.Findings, Finding{Kind: FindingSDC, Message: err.Error()})
		case errors.As(err, &cerr):
			o.Findings = append(o.Findings, Finding{Kind: FindingCUDAError, Message: err.Error(), CUDAError: cerr.Name})
		}
		return o
	}
	var why []string
	for _, m := range o.Metrics {
		if m.MinRatio > 0 && m.Reference > 0 && m.Ratio < m.MinRatio {
			msg := fmt.Sprintf("%s %.1f %s is %.0f%% of %.1f %s, under the %.0f%% floor",
				m.Name, m.Value, m.Unit, 100*m.Ratio, m.Reference, m.Unit, 100*m.MinRatio)
			o.Findings = append(o.Findings, Finding{Kind: FindingBelowRef, Message: msg})
			why = append(why, msg)
		}
	}
	if o.Clocks != nil && len(o.Clocks.Throttle) > 0 {
		msg := fmt.Sprintf("clocks slowed during the test: %s", joinEvents(o.Clocks.Throttle))
		o.Findings = append(o.Findings, Finding{Kind: FindingClockEvent, Message: msg})
		why = append(why, msg)
	}
	if len(why) > 0 {
		o.Status, o.Reason = StatusFail, strings.Join(why, "; ")
		return o
	}
	o.Status = StatusPass
	return o
}
