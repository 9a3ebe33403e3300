package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/stress"
)

// stressProgress shows the tests on stderr: at a terminal the running test's
// line is redrawn every second with its GPUs done and the time spent; piped,
// each GPU's result is one plain line.
type stressProgress struct {
	w     io.Writer
	tty   bool
	quiet bool
	now   func() time.Time

	mu      sync.Mutex
	test    stress.Test
	units   int
	done    int
	started time.Time
	stop    chan struct{}
}

func newStressProgress(w io.Writer, quiet bool) *stressProgress {
	return &stressProgress{w: w, tty: isTerminal(w), quiet: quiet, now: time.Now}
}

func (p *stressProgress) TestStarted(t stress.Test, units int) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.test, p.units, p.done, p.started = t, units, 0, p.now()
	if !p.tty {
		fmt.Fprintf(p.w, "%s: started (%d %s)\n", t, units, unitWord(t, units))
		return
	}
	p.redraw()
	p.stop = make(chan struct{})
	go p.tick(p.stop)
}

func (p *stressProgress) tick(stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			select {
			case <-stop: // the test ended while this tick waited for the lock
			default:
				p.redraw()
			}
			p.mu.Unlock()
		}
	}
}

// redraw rewrites the terminal line; p.mu is held.
func (p *stressProgress) redraw() {
	fmt.Fprintf(p.w, "\r\033[K  … %-6s %d/%d %s  %s", p.test, p.done, p.units, unitWord(p.test, p.units),
		p.now().Sub(p.started).Round(time.Second))
}

func (p *stressProgress) UnitDone(o stress.Outcome) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "%s %s: %s %s\n", o.Test, unitName(o), o.Status, headline(o))
}

func (p *stressProgress) TestDone(t stress.Test, outs []stress.Outcome) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	s := countStatuses(outs)
	line := fmt.Sprintf("%s: %s (%s)", t, s, p.now().Sub(p.started).Round(time.Millisecond))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K  %s %s\n", mark(!strings.Contains(s, "fail") && !strings.Contains(s, "skip")), line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func unitWord(t stress.Test, n int) string {
	w := "GPU"
	if t == stress.TestP2P {
		w = "pair"
	}
	if n != 1 {
		w += "s"
	}
	return w
}

// unitName is "gpu 0" or "0->1".
func unitName(o stress.Outcome) string {
	if o.GPU < 0 {
		return "-"
	}
	if o.Peer != nil {
		return fmt.Sprintf("%d->%d", o.GPU, *o.Peer)
	}
	return fmt.Sprintf("%d", o.GPU)
}

// countStatuses is "8 pass, 1 fail" with the zero counts left out.
func countStatuses(outs []stress.Outcome) string {
	n := map[stress.Status]int{}
	for _, o := range outs {
		n[o.Status]++
	}
	var parts []string
	for _, s := range []stress.Status{stress.StatusPass, stress.StatusFail, stress.StatusSkip, stress.StatusNotApplicable} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// headline is an outcome's metrics on one line, or its reason.
func headline(o stress.Outcome) string {
	if o.Status != stress.StatusPass && o.Reason != "" {
		return o.Reason
	}
	parts := make([]string, 0, len(o.Metrics))
	for _, m := range o.Metrics {
		s := fmt.Sprintf("%s %s %s", m.Name, formatValue(m.Value, m.Unit), m.Unit)
		if m.Reference > 0 {
			s += fmt.Sprintf(" (%.0f%% of %s)", 100*m.Ratio, formatValue(m.Reference, m.Unit))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// formatValue prints counts whole and rates with three significant digits or more.
func formatValue(v float64, unit string) string {
	switch {
	case unit == "passes" || unit == "words":
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// stressText prints the report as a table.
func stressText(out io.Writer, r *stress.Report, simName string) error {
	w := &errWriter{w: out}
	if r.Simulated {
		w.printf("SIMULATED GPUs (--sim %s): every number below is generated from nominal rates, not measured.\n\n", simName)
	}
	w.printf("%-6s %-7s %-5s %s\n", "STATUS", "TEST", "GPU", "RESULT")
	for _, o := range r.Results {
		status := strings.ToUpper(string(o.Status))
		if o.Status == stress.StatusNotApplicable {
			status = "N/A"
		}
		w.printf("%-6s %-7s %-5s %s\n", status, o.Test, unitName(o), headline(o))
		if o.Status == stress.StatusFail {
			for _, id := range failedGPUs(r.GPUs, o) {
				w.printf("%-20s %s\n", "", id)
			}
		}
		for _, f := range o.Findings {
			if !strings.Contains(o.Reason, f.Message) {
				w.printf("%-20s %s: %s\n", "", f.Kind, f.Message)
			}
		}
		if c := o.Clocks; c != nil && showClocks(o) {
			if c.Error != "" {
				w.printf("%-20s clocks not sampled: %s\n", "", c.Error)
			} else if c.AvgSMClockMHz > 0 {
				w.printf("%-20s SM clock %d-%d MHz, avg %d (%d samples)%s\n", "", c.MinSMClockMHz, c.MaxSMClockMHz, c.AvgSMClockMHz, c.Samples, eventsNote(c))
			}
		}
	}
	s := r.Summary
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	w.printf("\n%s: %d pass, %d fail, %d skip, %d not applicable in %.1fs\n", verdict, s.Pass, s.Fail, s.Skip, s.NotApplicable, r.Seconds)
	w.printf("GB = 10^9 bytes. hbm counts bytes read plus written; pcie and p2p count bytes moved once.\n")
	return w.err
}

// failedGPUs names the GPUs of a failed test the ways a person finds them: "GPU 3: GPU-…,
// serial 1654…, 00000000:5D:00.0" (both GPUs of a pair).
func failedGPUs(gpus []stress.GPU, o stress.Outcome) []string {
	idx := []int{o.GPU}
	if o.Peer != nil {
		idx = append(idx, *o.Peer)
	}
	var out []string
	for _, i := range idx {
		for _, g := range gpus {
			if g.Index != i {
				continue
			}
			var ids []string
			for _, id := range []string{g.UUID, g.Serial, g.BusID} {
				if id == "" {
					continue
				}
				if id == g.Serial {
					id = "serial " + id
				}
				ids = append(ids, id)
			}
			if len(ids) > 0 {
				out = append(out, fmt.Sprintf("GPU %d: %s", g.Index, strings.Join(ids, ", ")))
			}
		}
	}
	return out
}

// showClocks: clocks are printed for a test that ran on one GPU, and for a
// pair only when they slowed.
func showClocks(o stress.Outcome) bool {
	if o.Status == stress.StatusNotApplicable || o.Status == stress.StatusSkip {
		return false
	}
	return o.Peer == nil || len(o.Clocks.Throttle) > 0
}

func eventsNote(c *stress.ClockSummary) string {
	if len(c.Events) == 0 {
		return ""
	}
	s := make([]string, len(c.Events))
	for i, e := range c.Events {
		s[i] = string(e)
	}
	return "; clock events: " + strings.Join(s, ", ")
}
