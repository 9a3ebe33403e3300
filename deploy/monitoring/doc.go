// Package monitoring holds no code: deploy/monitoring is gpunode's Prometheus alerting rules
// (rules.yaml, and prometheusrule.yaml for the Prometheus Operator) and its Grafana dashboard
// (grafana-dashboard.json). Its tests keep them valid: every rule parses and has a severity,
// a summary, a description and a runbook section in docs/runbooks.md; every metric the rules
// and the dashboard query is one the exporter serves (docs/metrics.md); the key alerts fire,
// and stay quiet, on synthetic series evaluated by the PromQL engine. docs/monitoring.md says
// how to install them.
package monitoring
