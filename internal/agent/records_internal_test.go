package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/metrics"
	"github.com/gpunode/gpunode/internal/record"
	"github.com/gpunode/gpunode/internal/xid"
)

// An acceptance run of the agent keeps its record in the folder the exporter reads
// (<state-dir>/records, mounted read-only in the exporter's container), and the exporter
// serves that run's result: before the run, no result and no failed collector.
func TestAnAcceptanceRunKeepsItsRecordWhereTheExporterReadsIt(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "records")
	a, err := New(Config{NodeName: "gpu-node-7", Client: fake.NewClientBuilder().WithScheme(s).Build(), Backend: b,
		Host:    func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		XIDs:    func(context.Context) ([]xid.Event, error) { return nil, nil },
		Records: &record.Store{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := metrics.New(metrics.Options{Telemetry: b, Inventory: b, Records: os.DirFS(dir)})
	if err != nil {
		t.Fatal(err)
	}
	const series = "gpunode_collector_success gpunode_acceptance_last_result"
	before := `# HELP gpunode_collector_success Whether the collector answered in this scrape (1) or failed (0).
# TYPE gpunode_collector_success gauge
gpunode_collector_success{collector="acceptance"} 1
gpunode_collector_success{collector="telemetry"} 1
`
	if err := testutil.CollectAndCompare(exp, strings.NewReader(before), strings.Fields(series)...); err != nil {
		t.Errorf("before any run: %v", err)
	}
	for range 2 { // two runs: the exporter serves the newer
		obj, err := a.runAcceptance(context.Background(), 1, nil, "", false)
		if err != nil {
			t.Fatal(err)
		}
		other := record.ResultFailed
		if obj.Spec.Result == v1alpha1.AcceptanceFailed {
			other = record.ResultPassed
		}
		after := before + `# HELP gpunode_acceptance_last_result Result of the newest acceptance record (1 for its result, 0 for the other).
# TYPE gpunode_acceptance_last_result gauge
gpunode_acceptance_last_result{result="` + string(obj.Spec.Result) + `"} 1
gpunode_acceptance_last_result{result="` + other + `"} 0
`
		if err := testutil.CollectAndCompare(exp, strings.NewReader(after), strings.Fields(series)...); err != nil {
			t.Errorf("after the run recorded as %s: %v", obj.Name, err)
		}
		finished := testutil.ToFloat64(onlyMetric{exp, "gpunode_acceptance_last_timestamp_seconds"})
		if want := float64(obj.Spec.FinishedAt.UnixNano()) / 1e9; int64(finished) != int64(want) {
			t.Errorf("last timestamp %f, want the run's finish %f", finished, want)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 2 {
		t.Errorf("records folder holds %v (%v), want the two runs' records", ents, err)
	}
}

// onlyMetric is the one metric of a collector named name, for testutil.ToFloat64.
type onlyMetric struct {
	c    prometheus.Collector
	name string
}

func (o onlyMetric) Describe(ch chan<- *prometheus.Desc) { o.c.Describe(ch) }

func (o onlyMetric) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { o.c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+o.name+`"`) {
			ch <- m
		}
	}
}
