package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
)

// progress shows acceptance layer by layer on stderr. At a terminal the current check is
// redrawn in place; piped, each layer prints one plain line when it finishes.
type progress struct {
	w      io.Writer
	tty    bool
	quiet  bool
	start  time.Time
	now    func() time.Time
	layer  accept.Layer
	total  int
	done   int
	stepT0 time.Time
}

func newProgress(w io.Writer, quiet bool) *progress {
	return &progress{w: w, tty: isTerminal(w), quiet: quiet, now: time.Now, start: time.Now()}
}

// step announces a phase of fact gathering ("reading GPUs").
func (p *progress) step(what string) {
	if p.quiet {
		return
	}
	p.stepT0 = p.now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K  … %s", what)
		return
	}
	fmt.Fprintf(p.w, "%s\n", what)
}

// stepDone ends a phase.
func (p *progress) stepDone(what string, err error) {
	if p.quiet {
		return
	}
	d := p.now().Sub(p.stepT0).Round(time.Millisecond)
	status := "ok"
	if err != nil {
		status = "unavailable: " + err.Error()
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K  %s %s (%s)\n", mark(err == nil), what, d)
		return
	}
	fmt.Fprintf(p.w, "%s: %s (%s)\n", what, status, d)
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "!"
}

func (p *progress) LayerStarted(l accept.Layer, n int) {
	p.layer, p.total, p.done = l, n, 0
	if p.quiet || !p.tty {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s: 0/%d", l.Code(), l, n)
}

func (p *progress) CheckDone(r accept.Result) {
	p.done++
	if p.quiet || !p.tty {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s: %d/%d %s", p.layer.Code(), p.layer, p.done, p.total, r.ID)
}

func (p *progress) LayerDone(l accept.Layer, s accept.Summary) {
	if p.quiet {
		return
	}
	line := fmt.Sprintf("%s %s: %d checks: %d pass, %d warn, %d fail, %d skip", l.Code(), l, p.total, s.Pass, s.Warn, s.Fail, s.Skip)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
		return
	}
	fmt.Fprintln(p.w, line)
}
