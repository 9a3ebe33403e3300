package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// gpunodeNames are the gpunode_* metrics the exporter can serve.
var gpunodeNames = []string{
	"gpunode_xid_errors_total", "gpunode_gpu_health", "gpunode_gpu_required_action", "gpunode_findings",
	"gpunode_gpu_recovery_action", "gpunode_acceptance_last_result", "gpunode_acceptance_last_timestamp_seconds",
	"gpunode_collector_success", "gpunode_scrape_duration_seconds", "gpunode_scrape_errors_total",
}

// NewRegistry returns a registry with the exporter and client_golang's Go and process
// collectors: what /metrics serves.
func NewRegistry(e *Exporter) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics collector: %w", err)
		}
	}
	return reg, nil
}
