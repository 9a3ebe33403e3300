package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

type promlintProblem = promlint.Problem

// dcgmCompatProblems are the promlint findings that dcgm-exporter's own names carry and
// that compatibility keeps: its labels (UUID, modelName, Hostname, DCGM_FI_DRIVER_VERSION)
// and counter names without _total.
var dcgmCompatProblems = []string{
	"label names should be written in 'snake_case' not 'camelCase'",
	`counter metrics should have "_total" suffix`,
	"metric name should not include type 'counter'",
}

// single exposes one of the exporter's collectors as a prometheus.Collector.
type single struct{ c collector }

func (s single) Describe(ch chan<- *prometheus.Desc) { s.c.describe(ch) }
func (s single) Collect(ch chan<- prometheus.Metric) {
	if err := s.c.collect(context.Background(), ch); err != nil {
		panic(err)
	}
}

func TestEveryCollectorPassesPromlint(t *testing.T) {
	e, _, _ := fullExporter(t, faultyH100, nil)
	reg, err := NewRegistry(e)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	cases := []struct {
		name string
		lint func() ([]string, error)
	}{
		{"the whole exporter", lintCollector(e)},
		{"the telemetry collector", lintCollector(single{e.collectors[0]})},
		{"the health collector", lintCollector(single{e.collectors[1]})},
		{"the acceptance collector", lintCollector(single{e.collectors[2]})},
		{"the registry served on /metrics, Go and process collectors included", func() ([]string, error) {
			problems, err := testutil.GatherAndLint(reg)
			return texts(problems), err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems, err := tc.lint()
			if err != nil {
				t.Fatalf("lint: %v", err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// lintCollector lints c and keeps the problems that dcgm compatibility does not explain.
func lintCollector(c prometheus.Collector) func() ([]string, error) {
	return func() ([]string, error) {
		problems, err := testutil.CollectAndLint(c)
		return texts(problems), err
	}
}

func texts(problems []promlintProblem) []string {
	var out []string
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "DCGM_FI_") && isCompatProblem(p.Text) {
			continue
		}
		out = append(out, p.Metric+": "+p.Text)
	}
	return out
}

func isCompatProblem(text string) bool {
	for _, c := range dcgmCompatProblems {
		if text == c {
			return true
		}
	}
	return false
}

func TestTheCompatibilityAllowanceCoversOnlyDCGMNames(t *testing.T) {
	got := texts([]promlintProblem{
		{Metric: "gpunode_findings", Text: dcgmCompatProblems[0]},
		{Metric: "DCGM_FI_DEV_GPU_TEMP", Text: dcgmCompatProblems[0]},
		{Metric: "DCGM_FI_DEV_GPU_TEMP", Text: "metric names should be written in 'snake_case' not 'camelCase'"},
	})
	if len(got) != 2 || !strings.HasPrefix(got[0], "gpunode_findings") || !strings.Contains(got[1], "metric names") {
		t.Errorf("problems kept %q, want the gpunode one and the DCGM metric-name one", got)
	}
}
