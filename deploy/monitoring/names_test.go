package monitoring

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Paths of the documents the rules and the dashboard are checked against.
var (
	metricsDoc  = filepath.Join("..", "..", "docs", "metrics.md")
	runbooksDoc = filepath.Join("..", "..", "docs", "runbooks.md")
)

// externalMetrics are the names the rules and the dashboard may use that gpunode does not
// serve: Prometheus's own per-target series.
var externalMetrics = []string{
	"up",
}

// metricRow is a row of a metric table in docs/metrics.md: "| `NAME` | type | ...".
var metricRow = regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\|")

// documentedMetrics returns the metric names of the "## Metric list" section of
// docs/metrics.md, the exporter's list of what it serves.
func documentedMetrics(doc []byte) []string {
	var names []string
	inList := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inList = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == "Metric list"
			continue
		}
		if m := metricRow.FindStringSubmatch(line); inList && m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// knownMetrics is every metric name a rule or a panel may query.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatalf("the exporter's metric list: %v", err)
	}
	names := documentedMetrics(doc)
	if len(names) < 20 {
		t.Fatalf("%s: found %d metric names in its \"## Metric list\" tables, want the full list (%v)", metricsDoc, len(names), names)
	}
	known := map[string]bool{}
	for _, n := range append(names, externalMetrics...) {
		known[n] = true
	}
	return known
}

// promqlParser parses as Prometheus does by default.
var promqlParser = parser.NewParser(parser.Options{})

// metricNames parses a PromQL expression and returns the metric names its selectors name.
func metricNames(expr string) ([]string, error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	seen := map[string]bool{}
	var selErr error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				if m.Type != labels.MatchEqual {
					selErr = fmt.Errorf("%q: selector %s matches metric names by pattern; name them", expr, vs)
				}
				name = m.Value
			}
		}
		seen[name] = true
		return nil
	})
	if selErr != nil {
		return nil, selErr
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// unknownMetrics returns the names expr queries that are not known.
func unknownMetrics(expr string, known map[string]bool) ([]string, error) {
	names, err := metricNames(expr)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, n := range names {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	return unknown, nil
}

// anchorOf is GitHub's anchor for a Markdown heading: lower case, punctuation other than
// '-' and '_' dropped, spaces turned into '-'.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// runbookAnchors returns the anchors of the headings of docs/runbooks.md.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(runbooksDoc)
	if err != nil {
		t.Fatalf("runbooks: %v", err)
	}
	anchors := map[string]bool{}
	inFence := false
	for line := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			anchors[anchorOf(strings.TrimLeft(line, "#"))] = true
		}
	}
	return anchors
}

func TestDocumentedMetricsAreReadFromTheMetricListOnly(t *testing.T) {
	doc := []byte("# Metrics\n\n| `not_listed` | gauge |\n\n## Metric list\n\n### dcgm\n\n" +
		"| metric | type |\n|---|---|\n| `DCGM_FI_DEV_GPU_TEMP` | gauge |\n| `gpunode_gpu_health` | gauge | `gpu` |\n\n" +
		"## Cardinality\n\n| `gpunode_gpu_health` | 3 N |\n| 21 `DCGM_FI_*` metrics | 21 N |\n")
	got := documentedMetrics(doc)
	want := []string{"DCGM_FI_DEV_GPU_TEMP", "gpunode_gpu_health"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("documentedMetrics = %v, want %v", got, want)
	}
}

func TestMetricNamesOfAnExpression(t *testing.T) {
	tests := []struct {
		name, expr string
		want       []string
		wantErr    bool
	}{
		{"a plain selector names its metric", `up == 0`, []string{"up"}, false},
		{"a range, an offset and a join name every metric once",
			`increase(a_total[5m]) > 0 and on (instance) (b offset 5m) unless a_total`, []string{"a_total", "b"}, false},
		{"a name given as a __name__ matcher counts", `{__name__="c", job="x"}`, []string{"c"}, false},
		{"a name given by a pattern is refused", `{__name__=~"DCGM_.*"}`, nil, true},
		{"an expression that does not parse is an error", `rate(x[5m]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := metricNames(tt.expr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("metricNames(%q) error = %v, want error %v", tt.expr, err, tt.wantErr)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("metricNames(%q) = %v, want %v", tt.expr, got, tt.want)
			}
		})
	}
}

func TestAnchorOfAHeading(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"GPUXidError", "gpuxiderror"},
		{" What a person does ", "what-a-person-does"},
		{"GPU lost (XID 79)", "gpu-lost-xid-79"},
	}
	for _, tt := range tests {
		if got := anchorOf(tt.heading); got != tt.want {
			t.Errorf("anchorOf(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}
