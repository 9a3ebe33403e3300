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

// MetricNames lists every metric the exporter can serve besides the go_* and process_*
// ones: the DCGM_FI_* metrics in dcgm-exporter's order, then gpunode's own. Alert rules
// and dashboards are checked against it.
func MetricNames() []string {
	names := make([]string, 0, len(dcgmMetrics)+1+len(gpunodeNames))
	for _, m := range dcgmMetrics {
		names = append(names, m.name)
	}
	names = append(names, "DCGM_FI_DEV_XID_ERRORS")
	return append(names, gpunodeNames...)
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
