package record

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gpunode/gpunode/internal/accept"
)

// JSON renders the record as indented, versioned JSON.
func JSON(r *Record) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render record %s as JSON: %w", r.ID, err)
	}
	return append(b, '\n'), nil
}

// Markdown renders the record for people: the template first, then every check.
func Markdown(w io.Writer, r *Record, jsonSHA256 string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Node acceptance record: %s\n\n", r.Node)
	fmt.Fprintf(&b, "**Result: %s** (%d pass, %d warn, %d fail, %d skip)  \n", strings.ToUpper(r.Result), r.Summary.Pass, r.Summary.Warn, r.Summary.Fail, r.Summary.Skip)
	fmt.Fprintf(&b, "Record `%s`, %s to %s (%.2f s), gpunode %s, policy `%s` (%s), GPU backend `%s`.\n",
		r.ID, r.StartedAt.Format("2006-01-02 15:04:05Z07:00"), r.FinishedAt.Format("15:04:05Z07:00"), r.DurationSeconds, r.Tool.Version, r.Policy.Name, r.Policy.Source, r.Backend)
	if jsonSHA256 != "" {
		fmt.Fprintf(&b, "Machine-readable record: sha256 `%s`.\n", jsonSHA256)
	}
	if r.Backend == "sim" {
		b.WriteString("\n> These GPUs are **simulated** (`--sim`): this record proves the pipeline, not hardware.\n")
	}
	b.WriteString("\n## Record\n\n| Field | Value |\n|---|---|\n")
	for _, l := range r.Template.Labels() {
		v := l.Field.Value
		if v == "" {
			v = "_n/a: " + l.Field.NotApplicable + "_"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", l.Label, cell(v))
	}
	if len(r.GPUs) > 0 {
		b.WriteString("\n## GPUs\n\n| # | Model | UUID | Serial | Memory | VBIOS | PCI | Link | Status |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range r.GPUs {
			fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %d MiB | %s | %s | %s | %s |\n", g.Index, cell(g.Model), g.UUID, cell(g.Serial), g.MemoryMiB, cell(g.VBIOS), g.PCIBusID, cell(g.PCIe), g.Status)
		}
	}
	b.WriteString("\n## Checks\n")
	var layer accept.Layer
	for _, c := range r.Checks {
		if c.Layer != layer {
			layer = c.Layer
			fmt.Fprintf(&b, "\n### %s %s\n\n| Status | Check | Result |\n|---|---|---|\n", layer.Code(), layer)
		}
		fmt.Fprintf(&b, "| %s | `%s` %s | %s |\n", badge(c.Status), c.ID, cell(c.Title), cell(c.Message))
	}
	performanceMarkdown(&b, r)
	frameworksMarkdown(&b, r)
	var bad []accept.Result
	for _, c := range r.Checks {
		if c.Status == accept.StatusFail || c.Status == accept.StatusWarn {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		b.WriteString("\n## Findings and fixes\n")
		for _, c := range bad {
			fmt.Fprintf(&b, "\n### %s `%s`\n\n%s\n\n", badge(c.Status), c.ID, c.Message)
			if c.Fix != "" {
				fmt.Fprintf(&b, "**Fix:** %s\n\n", c.Fix)
			}
			for _, e := range c.Evidence {
				fmt.Fprintf(&b, "- %s\n", e)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func badge(s accept.Status) string {
	switch s {
	case accept.StatusPass:
		return "PASS"
	case accept.StatusWarn:
		return "WARN"
	case accept.StatusFail:
		return "FAIL"
	}
	return "SKIP"
}

// cell escapes a value for a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
