package record

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/accept"
)

// performanceMarkdown writes every measurement of the performance layer against its
// baseline.
func performanceMarkdown(b *strings.Builder, r *Record) {
	var rows []string
	for _, c := range r.Checks {
		for _, m := range c.Measurements {
			base, ratio := "-", "-"
			if m.Baseline > 0 {
				base = fmt.Sprintf("%.1f", m.Baseline)
				ratio = fmt.Sprintf("%.1f%%", 100*m.Ratio)
			}
			st := accept.StatusSkip
			for _, g := range c.GPUs {
				if g.Index == m.GPU {
					st = g.Status
				}
			}
			rows = append(rows, fmt.Sprintf("| %d | %s | %.1f | %s | %s | %s | %.0f%% | %s | %s |", m.GPU, m.Metric, m.Measured, base, m.Unit, ratio,
				100*m.MinRatio, badge(st), cell(strings.TrimSpace(m.BaselineModel+" "+paren(m.BaselineOrigin)))))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Performance against baseline\n\n| GPU | Metric | Measured | Baseline | Unit | Ratio | Minimum | Status | Baseline source |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
}

// frameworksMarkdown writes the frameworks script's report: versions and each test.
func frameworksMarkdown(b *strings.Builder, r *Record) {
	fw := r.Frameworks
	if fw == nil {
		return
	}
	fmt.Fprintf(b, "\n## Frameworks\n\nPython %s, torch %s, CUDA %s, NCCL %s; %d GPUs visible to torch; %.1f s.\n",
		fw.Python, orNA(fw.Torch), orNA(fw.CUDA), orNA(fw.NCCL), len(fw.GPUs), fw.Seconds)
	if fw.Unavailable != "" {
		fmt.Fprintf(b, "\nNot run: %s\n", fw.Reason)
		return
	}
	b.WriteString("\n| Test | Status | Seconds | Result |\n|---|---|---|---|\n")
	for _, t := range fw.Tests {
		fmt.Fprintf(b, "| %s | %s | %.2f | %s |\n", t.Name, strings.ToUpper(string(t.Status)), t.Seconds, cell(t.Message))
	}
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}
