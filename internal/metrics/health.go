package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// healthStates are the values of gpunode_gpu_health's state label.
var healthStates = []health.Health{health.Healthy, health.Degraded, health.Unhealthy}

// healthCollector serves the monitor's state: per-GPU health and required action, the
// findings by component and severity, and the XID counter.
type healthCollector struct {
	src  HealthSource
	xids *XIDCounter

	health, action, findings, xidTotal *prometheus.Desc
}

func newHealthCollector(src HealthSource, xids *XIDCounter) *healthCollector {
	gpuLabels := func(l string) []string { return []string{"gpu", "UUID", l} }
	return &healthCollector{
		src: src, xids: xids,
		health: prometheus.NewDesc("gpunode_gpu_health",
			"The GPU's health as the monitor judges it (1 for the current state, 0 for the others).", gpuLabels("state"), nil),
		action: prometheus.NewDesc("gpunode_gpu_required_action",
			"The action the GPU's health requires (1 for the current one, 0 for the others).", gpuLabels("action"), nil),
		findings: prometheus.NewDesc("gpunode_findings",
			"Current deduplicated findings of the node's health monitor.", []string{"component", "severity"}, nil),
		xidTotal: prometheus.NewDesc("gpunode_xid_errors_total",
			"XID errors seen on the GPU since the exporter started (xid: the code, or other when the catalog does not know it).", gpuLabels("xid"), nil),
	}
}

func (c *healthCollector) name() string { return "health" }

func (c *healthCollector) describe(ch chan<- *prometheus.Desc) {
	if c.src != nil {
		ch <- c.health
		ch <- c.action
		ch <- c.findings
	}
	if c.xids != nil {
		ch <- c.xidTotal
	}
}

func (c *healthCollector) collect(_ context.Context, ch chan<- prometheus.Metric) error {
	if c.src != nil {
		c.collectHealth(ch)
		c.collectFindings(ch)
	}
	if c.xids != nil {
		for _, s := range c.xids.series() {
			index := ""
			if s.key.index >= 0 {
				index = strconv.Itoa(s.key.index)
			}
			ch <- prometheus.MustNewConstMetric(c.xidTotal, counter, float64(s.value), index, s.key.uuid, s.key.code)
		}
	}
	return nil
}

func (c *healthCollector) collectHealth(ch chan<- prometheus.Metric) {
	for _, g := range c.src.Health() {
		index := strconv.Itoa(g.Index)
		for _, s := range healthStates {
			ch <- prometheus.MustNewConstMetric(c.health, gauge, boolValue(g.Health == s), index, g.UUID, string(s))
		}
		for _, a := range fault.Actions {
			ch <- prometheus.MustNewConstMetric(c.action, gauge, boolValue(g.Action == a), index, g.UUID, string(a))
		}
	}
}

// collectFindings counts the current findings of every (component, severity) pair, zeros
// included; a finding outside the taxonomy (none today) is not counted.
func (c *healthCollector) collectFindings(ch chan<- prometheus.Metric) {
	type key struct {
		c fault.Component
		s fault.Severity
	}
	counts := make(map[key]int, len(fault.Components)*len(fault.Severities))
	for _, f := range c.src.Findings() {
		counts[key{f.Component, f.Severity}]++
	}
	for _, comp := range fault.Components {
		for _, sev := range fault.Severities {
			ch <- prometheus.MustNewConstMetric(c.findings, gauge, float64(counts[key{comp, sev}]), string(comp), string(sev))
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
