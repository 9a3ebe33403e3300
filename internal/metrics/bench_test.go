package metrics

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/nvml"
)

// scrape is what /metrics does: Gather the registry and encode it as text.
func scrape(tb testing.TB, g prometheus.Gatherer, buf *bytes.Buffer) {
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("Gather: %v", err)
	}
	buf.Reset()
	enc := expfmt.NewEncoder(buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			tb.Fatalf("Encode: %v", err)
		}
	}
}

// benchScrapes runs b.N scrapes of reg and reports the 50th and 99th percentile latency
// and the exposition size.
func benchScrapes(b *testing.B, reg prometheus.Gatherer) {
	var buf bytes.Buffer
	scrape(b, reg, &buf) // warm up: the inventory read of the first scrape is not timed
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		scrape(b, reg, &buf)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	pct := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))]) / 1e6 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(buf.Len()), "bytes/scrape")
}

// BenchmarkScrape8SimGPUs is a full /metrics scrape of a simulated h100x8 node: the
// exporter with every collector, the Go and process collectors, text encoding.
// Target (DESIGN.md): p99 <= 5 ms.
func BenchmarkScrape8SimGPUs(b *testing.B) {
	e, _, _ := fullExporter(b, faultyH100, nil)
	reg, err := NewRegistry(e)
	if err != nil {
		b.Fatal(err)
	}
	benchScrapes(b, reg)
}

// openNVML opens the real GPUs, or skips saying why.
func openNVML(tb testing.TB) *nvml.Backend {
	tb.Helper()
	b, err := nvml.New()
	if err != nil {
		tb.Skipf("needs the NVIDIA driver: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// BenchmarkScrapeNVML is the same scrape of this host's real GPUs as the exporter reads
// them (telemetry collector over nvml.ScrapeTelemetry, its energy refresh running; Go and
// process collectors). Build with go test -c ./internal/metrics and run the binary on a
// GPU host: ./metrics.test -test.run '^$' -test.bench NVML -test.benchtime 1000x
func BenchmarkScrapeNVML(b *testing.B) {
	be := openNVML(b)
	st := nvml.NewScrapeTelemetry(be, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.Run(ctx)
	benchNVML(b, st, be)
}

// BenchmarkScrapeNVMLEnergyOnScrape reads every value on the scrape, the slow energy
// counter included (nvml.Backend.Telemetry): what ScrapeTelemetry saves.
func BenchmarkScrapeNVMLEnergyOnScrape(b *testing.B) {
	be := openNVML(b)
	benchNVML(b, be, be)
}

func benchNVML(b *testing.B, tel gpu.TelemetrySource, inv Inventory) {
	e, err := New(Options{Telemetry: tel, Inventory: inv, Hostname: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := NewRegistry(e)
	if err != nil {
		b.Fatal(err)
	}
	benchScrapes(b, reg)
}

// TestScrapeOnThisHost prints the DCGM_FI_* series of this host's real GPUs, so a person
// can hold them against nvidia-smi; without the driver there is nothing to read.
func TestScrapeOnThisHost(t *testing.T) {
	be := openNVML(t)
	e, err := New(Options{Telemetry: nvml.NewScrapeTelemetry(be, 0), Inventory: be, Hostname: "this-host"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(exposition(t, e))
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "DCGM_FI_") || strings.HasPrefix(l, "gpunode_") {
			t.Log(l)
			n++
		}
	}
	if successOf(t, e, "telemetry") != 1 || n == 0 {
		t.Errorf("the telemetry collector failed on a host with the driver:\n%s", out)
	}
}
