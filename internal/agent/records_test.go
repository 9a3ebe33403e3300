package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/record"
	"github.com/gpunode/gpunode/internal/testenv"
)

// The exporter in the agent's pod reads the state folder the agent writes: the record of
// the acceptance the agent ran is the exporter's acceptance result.
func TestTheAcceptanceTheAgentRanIsWhatTheExporterServes(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	dir := filepath.Join(t.TempDir(), "records")
	cfg, b := simConfig(t, c, name)
	cfg.Records = &record.Store{Dir: dir}
	exp, err := metrics.New(metrics.Options{Telemetry: b.Backend, Inventory: b.Backend, Records: os.DirFS(dir)})
	if err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, exp); got.success != 1 || got.results != 0 {
		t.Fatalf("before any acceptance: success %g, %d result series; want 1 and none", got.success, got.results)
	}
	start(t, cfg)
	eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
	askForAcceptance(t, c, name, 1)
	last := acceptedAt(t, c, name, 1)
	got := scrape(t, exp)
	if last.Result != v1alpha1.AcceptancePassed || got.success != 1 || got.passed != 1 || got.failed != 0 || int64(got.finished) != last.Time.Unix() {
		t.Errorf("after the run published as %s (%s, finished %s): success %g, passed %g, failed %g, finished %g; want the run's result",
			last.RecordName, last.Result, last.Time, got.success, got.passed, got.failed, got.finished)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("records folder holds %v (%v), want the one record", ents, err)
	}
}

// scraped is the acceptance collector's part of a scrape.
type scraped struct {
	success, passed, failed, finished float64
	results                           int
}

func scrape(t *testing.T, exp *metrics.Exporter) scraped {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(exp); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var s scraped
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			label := map[string]string{}
			for _, l := range m.GetLabel() {
				label[l.GetName()] = l.GetValue()
			}
			v := m.GetGauge().GetValue()
			switch mf.GetName() {
			case "gpunode_collector_success":
				if label["collector"] == "acceptance" {
					s.success = v
				}
			case "gpunode_acceptance_last_result":
				s.results++
				if label["result"] == record.ResultPassed {
					s.passed = v
				} else {
					s.failed = v
				}
			case "gpunode_acceptance_last_timestamp_seconds":
				s.finished = v
			}
		}
	}
	return s
}
