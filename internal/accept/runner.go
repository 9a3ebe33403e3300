package accept

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Observer is told about progress while acceptance runs (a terminal display, a log).
type Observer interface {
	LayerStarted(layer Layer, checks int)
	CheckDone(r Result)
	LayerDone(layer Layer, s Summary)
}

// Report is the outcome of one acceptance run.
type Report struct {
	Node       string        `json:"node"`
	Policy     string        `json:"policy"`
	Layers     []Layer       `json:"layers"`
	StartedAt  time.Time     `json:"startedAt"`
	FinishedAt time.Time     `json:"finishedAt"`
	Results    []Result      `json:"results"`
	Summary    Summary       `json:"summary"`
	Passed     bool          `json:"passed"`
	Duration   time.Duration `json:"-"`
}

// Checks returns every check of the given layers, in run order.
func Checks(layers []Layer) []Check {
	var out []Check
	for _, l := range layers {
		switch l {
		case LayerHost:
			out = append(out, hostChecks()...)
		case LayerHardware:
			out = append(out, hardwareChecks()...)
		case LayerPerformance:
			out = append(out, performanceChecks()...)
		case LayerFrameworks:
			out = append(out, frameworksChecks()...)
		}
	}
	return out
}

// Run evaluates every check of the policy's layers against the facts. It is pure but for
// the clock and the observer; facts are gathered by the caller. A node passes when no
// check fails (warnings and skips are reported, not fatal).
func Run(ctx context.Context, f *Facts, p *Policy, now func() time.Time, obs Observer) (*Report, error) {
	rep := &Report{Node: f.Node, Policy: p.Name, Layers: p.LayersOrDefault(), StartedAt: now()}
	for _, layer := range rep.Layers {
		checks := Checks([]Layer{layer})
		if obs != nil {
			obs.LayerStarted(layer, len(checks))
		}
		var ls Summary
		for _, c := range checks {
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("acceptance interrupted at %s: %w", c.ID, err)
			}
			r := runOne(c, f, p)
			rep.Results = append(rep.Results, r)
			rep.Summary.Add(r.Status)
			ls.Add(r.Status)
			if obs != nil {
				obs.CheckDone(r)
			}
		}
		if obs != nil {
			obs.LayerDone(layer, ls)
		}
	}
	rep.FinishedAt = now()
	rep.Duration = rep.FinishedAt.Sub(rep.StartedAt)
	rep.Passed = rep.Summary.Fail == 0
	return rep, nil
}

// runOne runs a check; a panicking check fails with its panic rather than taking the run down.
func runOne(c Check, f *Facts, p *Policy) (r Result) {
	r = Result{ID: c.ID, Layer: c.Layer, Title: c.Title}
	defer func() {
		if rec := recover(); rec != nil {
			r.Status, r.Message, r.Fix = StatusFail, fmt.Sprintf("check crashed: %v (a gpunode bug: please report it)", rec), c.Fix
		}
	}()
	v := c.Run(f, p)
	r.Status, r.Message, r.Evidence, r.GPUs, r.Measurements = v.Status, v.Message, v.Evidence, v.GPUs, v.Measurements
	if r.Status == "" {
		r.Status = StatusFail
		r.Message = "check returned no verdict (a gpunode bug)"
	}
	if r.Status == StatusWarn || r.Status == StatusFail {
		r.Fix = cmp.Or(v.Fix, c.Fix)
	}
	return r
}
