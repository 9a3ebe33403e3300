// Package metrics is gpunode's Prometheus exporter: dcgm-exporter compatible GPU metrics
// (DCGM_FI_*) and gpunode's own health metrics (gpunode_*), computed on scrape.
//
// An Exporter is one prometheus.Collector made of collectors that each report their own
// success (node_exporter style): "telemetry" (one gpu.TelemetrySource read per scrape, the
// DCGM_FI_* metrics and the driver's recovery action), "health" (the monitor's per-GPU
// health, findings and XID counts) and "acceptance" (the newest acceptance record). A
// collector that fails reports gpunode_collector_success 0; the others are still served.
// docs/metrics.md lists every metric, its labels and its cardinality.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// Pod is one container that holds a GPU.
type Pod struct {
	Namespace string
	Name      string
	Container string
}

// PodLookup attributes GPUs to pods. It is read on every scrape and must answer from
// memory (a cache refreshed off the scrape path); nil or empty means no pod holds the GPU.
type PodLookup interface {
	PodsFor(uuid string) []Pod
}

// HealthSource is the health monitor's state (*monitor.Monitor).
type HealthSource interface {
	Health() []monitor.GPUHealth
	Findings() []health.Finding
}

// Inventory reads the devices' identity (model, PCI bus id, driver version) for labels; a
// gpu.Backend is one. It is read at the first scrape and again only when a GPU appears
// that it did not list.
type Inventory interface {
	Snapshot(ctx context.Context) (*gpu.Snapshot, error)
}

// Options configure an Exporter.
type Options struct {
	// Telemetry is read once per scrape (required).
	Telemetry gpu.TelemetrySource
	// Inventory gives the labels of the DCGM_FI_* metrics (required).
	Inventory Inventory
	// Hostname is the Hostname label.
	Hostname string
	// Pods attributes GPUs to pods; nil: no pod labels.
	Pods PodLookup
	// Health is the monitor; nil: no health collector.
	Health HealthSource
	// XIDs counts the monitor's XID findings (wire XIDs.Observe into its OnFinding); nil:
	// no gpunode_xid_errors_total, and DCGM_FI_DEV_XID_ERRORS is not exported.
	XIDs *XIDCounter
	// Records is the folder of acceptance records (os.DirFS of --records-dir); nil: no
	// acceptance collector.
	Records fs.FS
	// Timeout bounds the backend reads of one scrape (default 5 s).
	Timeout time.Duration
	// Clock (default time.Now).
	Clock func() time.Time
}

// collector is one part of the exporter that reports its own success.
type collector interface {
	name() string
	describe(ch chan<- *prometheus.Desc)
	collect(ctx context.Context, ch chan<- prometheus.Metric) error
}

// Exporter is the prometheus.Collector of every gpunode metric. It is safe for concurrent
// scrapes.
type Exporter struct {
	timeout    time.Duration
	clock      func() time.Time
	telemetry  *telemetryCollector
	collectors []collector
	errors     []atomic.Uint64 // per collector, failed scrapes

	success, duration, scrapeErrors *prometheus.Desc
}

var _ prometheus.Collector = (*Exporter)(nil)

// New builds an Exporter.
func New(o Options) (*Exporter, error) {
	if o.Telemetry == nil || o.Inventory == nil {
		return nil, errors.New("metrics: the exporter needs a telemetry source and an inventory")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	e := &Exporter{
		timeout: o.Timeout,
		clock:   o.Clock,
		success: prometheus.NewDesc("gpunode_collector_success",
			"Whether the collector answered in this scrape (1) or failed (0).", []string{"collector"}, nil),
		duration: prometheus.NewDesc("gpunode_scrape_duration_seconds",
			"How long the collector took in this scrape, in seconds.", []string{"collector"}, nil),
		scrapeErrors: prometheus.NewDesc("gpunode_scrape_errors_total",
			"Scrapes in which the collector failed, since the exporter started.", []string{"collector"}, nil),
	}
	e.telemetry = newTelemetryCollector(o)
	e.collectors = append(e.collectors, e.telemetry)
	if o.Health != nil || o.XIDs != nil {
		e.collectors = append(e.collectors, newHealthCollector(o.Health, o.XIDs))
	}
	if o.Records != nil {
		e.collectors = append(e.collectors, newAcceptanceCollector(o.Records))
	}
	e.errors = make([]atomic.Uint64, len(e.collectors))
	return e, nil
}

// Describe implements prometheus.Collector: every metric's descriptor.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.success
	ch <- e.duration
	ch <- e.scrapeErrors
	for _, c := range e.collectors {
		c.describe(ch)
	}
}

// Collect implements prometheus.Collector: each collector in turn, each timed and reporting
// its own success.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	for i, c := range e.collectors {
		start := time.Now()
		err := c.collect(ctx, ch)
		took := time.Since(start).Seconds()
		ok := 1.0
		if err != nil {
			ok = 0
			e.errors[i].Add(1)
		}
		ch <- prometheus.MustNewConstMetric(e.success, prometheus.GaugeValue, ok, c.name())
		ch <- prometheus.MustNewConstMetric(e.duration, prometheus.GaugeValue, took, c.name())
		ch <- prometheus.MustNewConstMetric(e.scrapeErrors, prometheus.CounterValue, float64(e.errors[i].Load()), c.name())
	}
}

// Healthy reports whether the telemetry backend answers: nil when a scrape read it within
// maxAge, else the result of reading it now (bounded by ctx and the exporter's timeout).
func (e *Exporter) Healthy(ctx context.Context, maxAge time.Duration) error {
	if last := e.telemetry.lastSuccess(); !last.IsZero() && e.clock().Sub(last) <= maxAge {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if _, err := e.telemetry.read(ctx); err != nil {
		return fmt.Errorf("GPU telemetry: %w", err)
	}
	return nil
}
