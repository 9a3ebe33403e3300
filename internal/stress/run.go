package stress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// GPU is one GPU a plan runs on.
type GPU struct {
	Index   int    `json:"index"`       // the GPU port's index (nvidia-smi's)
	Ordinal int    `json:"cudaOrdinal"` // CUDA device ordinal
	Name    string `json:"name"`
	BusID   string `json:"busId,omitempty"`
	// UUID and Serial name the GPU to pull when a test fails (known through NVML).
	UUID   string `json:"uuid,omitempty"`
	Serial string `json:"serial,omitempty"`
	// PCIe link: the most the GPU and slot support (the reference for copies) and now.
	PCIeGenMax   int `json:"pcieGenMax,omitempty"`
	PCIeWidthMax int `json:"pcieWidthMax,omitempty"`
	PCIeGen      int `json:"pcieGen,omitempty"`
	PCIeWidth    int `json:"pcieWidth,omitempty"`
}

// Plan is what Run executes.
type Plan struct {
	Tests []Test
	GPUs  []GPU
	// Duration each duration-bound test (hbm, fp32, fp64, memory) keeps each GPU busy.
	Duration time.Duration
	// Timeout of one test on one GPU or pair; past it the test fails and the
	// GPU's later tests are skipped.
	Timeout time.Duration
	// SampleInterval between clock samples.
	SampleInterval time.Duration
	// PCIeMinRatio fails a PCIe direction under this fraction of the link's theoretical rate.
	PCIeMinRatio float64
	// GPUError says why GPUs is empty (no driver): every test then reports it once.
	GPUError error
}

// Executor runs one test on one GPU or pair and reports metrics and findings;
// Run judges the result. Implementations: CUDA (real GPUs) and the command's
// simulated executor.
type Executor interface {
	Device(ctx context.Context, t Test, g GPU, p Plan) (Outcome, error)
	Pair(ctx context.Context, src, dst GPU, p Plan) (Outcome, error)
}

// Progress hears about tests as they run; calls never overlap.
type Progress interface {
	TestStarted(t Test, units int)
	UnitDone(o Outcome)
	TestDone(t Test, outcomes []Outcome)
}

// Summary counts outcomes by status.
type Summary struct {
	Pass          int `json:"pass"`
	Fail          int `json:"fail"`
	Skip          int `json:"skip"`
	NotApplicable int `json:"notApplicable"`
}

// Report is a whole run; its JSON is `gpunode stress --json` (docs/stress.md).
type Report struct {
	Schema    string    `json:"schema"`
	Simulated bool      `json:"simulated"`
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	Duration  string    `json:"duration"`
	Tests     []Test    `json:"tests"`
	GPUs      []GPU     `json:"gpus"`
	Results   []Outcome `json:"results"`
	Summary   Summary   `json:"summary"`
	// Passed: no test failed and none was skipped.
	Passed bool `json:"passed"`
}

// Schema is the Report's schema id.
const Schema = "gpunode.dev/stress/v1"

var (
	errTimedOut    = errors.New("timed out")
	errHung        = errors.New("not run")
	errInterrupted = errors.New("not run: interrupted")
)

// Run executes the plan test by test. Device-local tests (hbm, fp32, fp64,
// memory) run on all GPUs at once; pcie runs one GPU at a time (GPUs can share
// a PCIe switch) and p2p one ordered pair at a time. Clocks are sampled
// throughout with sampler (nil: none).
func Run(ctx context.Context, p Plan, exec Executor, sampler ClockSampler, prog Progress) Report {
	r := Report{Schema: Schema, Started: time.Now(), Duration: p.Duration.String(), Tests: p.Tests, GPUs: p.GPUs, Results: []Outcome{}}
	if r.GPUs == nil {
		r.GPUs = []GPU{}
	}
	hung := &hungSet{gpus: map[int]string{}}
	for _, t := range p.Tests {
		units := testUnits(t, p.GPUs)
		if len(p.GPUs) == 0 {
			units = []unit{{src: -1, dst: -1}}
		}
		prog.TestStarted(t, len(units))
		mon := startClocks(ctx, sampler, p.SampleInterval)
		var mu sync.Mutex
		outs := make([]Outcome, len(units))
		runOne := func(i int) {
			o := runUnit(ctx, t, units[i], p, exec, hung, mon)
			mu.Lock()
			defer mu.Unlock()
			outs[i] = o
			prog.UnitDone(o)
		}
		if t == TestPCIe || t == TestP2P {
			for i := range units {
				runOne(i)
			}
		} else {
			var wg sync.WaitGroup
			for i := range units {
				wg.Go(func() { runOne(i) })
			}
			wg.Wait()
		}
		mon.finish()
		prog.TestDone(t, outs)
		r.Results = append(r.Results, outs...)
	}
	r.Seconds = time.Since(r.Started).Seconds()
	r.Summary, r.Passed = summarize(r.Results)
	return r
}

// unit is one GPU (Dst < 0) or one ordered pair of GPUs, by position in the plan.
type unit struct {
	src, dst int
	none     string // no unit possible: why (p2p with fewer than two GPUs)
}

// testUnits lists what test t runs on: each GPU, or each ordered pair for p2p.
func testUnits(t Test, gpus []GPU) []unit {
	if t != TestP2P {
		out := make([]unit, len(gpus))
		for i := range gpus {
			out[i] = unit{src: i, dst: -1}
		}
		return out
	}
	if len(gpus) < 2 {
		return []unit{{src: 0, dst: -1, none: fmt.Sprintf("peer-to-peer needs two GPUs; %d selected", len(gpus))}}
	}
	var out []unit
	for _, pr := range OrderedPairs(len(gpus)) {
		out = append(out, unit{src: pr.Src, dst: pr.Dst})
	}
	return out
}

// runUnit runs one unit under its timeout. In process, a test that outlives
// it is left behind (a CUDA call cannot be interrupted) and its GPUs are
// marked hung; an isolating executor (Children) kills it instead, and the
// GPU's later tests run.
func runUnit(ctx context.Context, t Test, u unit, p Plan, exec Executor, hung *hungSet, mon *clockMonitor) Outcome {
	base := Outcome{Test: t}
	if u.src < 0 {
		base.GPU = -1
		err := p.GPUError
		if err == nil {
			err = fmt.Errorf("%w: no GPUs selected", ErrNoDevice)
		}
		return judge(base, err, p.Timeout)
	}
	g := p.GPUs[u.src]
	base.GPU, base.Device = g.Index, g.Name
	gs := []GPU{g}
	if u.dst >= 0 {
		d := p.GPUs[u.dst]
		base.Peer = &d.Index
		gs = append(gs, d)
	}
	if u.none != "" {
		return judge(base, fmt.Errorf("%w: %s", ErrNotApplicable, u.none), p.Timeout)
	}
	if err := hung.check(gs...); err != nil {
		return judge(base, err, p.Timeout)
	}
	if ctx.Err() != nil {
		return judge(base, errInterrupted, p.Timeout)
	}
	tctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	type result struct {
		o   Outcome
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var res result
		if u.dst >= 0 {
			res.o, res.err = exec.Pair(tctx, g, gs[1], p)
		} else {
			res.o, res.err = exec.Device(tctx, t, g, p)
		}
		done <- res
	}()
	var res result
	select {
	case res = <-done:
	case <-tctx.Done():
		if ctx.Err() != nil {
			res.err = fmt.Errorf("%w (%w)", errInterrupted, ctx.Err())
		} else {
			res.err = errTimedOut
			if isolated(exec) {
				res.err = fmt.Errorf("%w; its child process is killed, which frees the GPU for its next test", errTimedOut)
			} else {
				hung.mark(t, p.Timeout, gs...)
			}
		}
	}
	end := time.Now()
	if !isolated(exec) {
		res.err = hung.noteSticky(t, g, res.err)
	}
	o := res.o
	o.Test, o.GPU, o.Peer = t, base.GPU, base.Peer
	if o.Device == "" {
		o.Device = base.Device
	}
	o.Seconds = end.Sub(start).Seconds()
	o.Clocks = mon.summaryOrNil(g.Index, start, end)
	return judge(o, res.err, p.Timeout)
}

// isolated reports whether exec runs each GPU's tests in a process of its
// own, so that neither a hung test nor a sticky CUDA error reaches the
// other GPUs or the GPU's later tests.
func isolated(exec Executor) bool {
	i, ok := exec.(interface{ isolatesGPUs() bool })
	return ok && i.isolatesGPUs()
}

// summaryOrNil is summary, or nil when the monitor never had a sampler.
func (m *clockMonitor) summaryOrNil(g int, from, to time.Time) *ClockSummary {
	if m.noSampler() {
		return nil
	}
	return m.summary(g, from, to)
}

// summarize counts outcomes; the run passed when none failed or was skipped.
func summarize(outs []Outcome) (Summary, bool) {
	var s Summary
	for _, o := range outs {
		switch o.Status {
		case StatusPass:
			s.Pass++
		case StatusFail:
			s.Fail++
		case StatusSkip:
			s.Skip++
		case StatusNotApplicable:
			s.NotApplicable++
		}
	}
	return s, s.Fail == 0 && s.Skip == 0
}

func joinEvents(es []gpu.ClockEvent) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}
