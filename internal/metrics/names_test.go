package metrics

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
