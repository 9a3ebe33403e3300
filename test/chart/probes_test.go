package chart_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The agent's pod is Ready within 5 s of the agent's health monitor running: the agent's
// readiness is its own /readyz (ready after the monitor's first round) probed every 2 s on
// the address its flag opens (the metrics it serves on its own port are not its probes).
func TestTheAgentPodIsReadySoonAfterItsHealthMonitorRuns(t *testing.T) {
	for _, mode := range installModes {
		t.Run(mode.name, func(t *testing.T) {
			ds := find[*appsv1.DaemonSet](render(t, mode.values), "DaemonSet", "gpunode-agent")
			if ds == nil {
				return // the mode runs no agent pod (the controller alone)
			}
			if agent := container(ds, "agent"); agent != nil {
				port := ""
				for _, a := range agent.Args {
					if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
						_, port, _ = strings.Cut(v, ":")
					}
				}
				r, l := agent.ReadinessProbe, agent.LivenessProbe
				if port == "" || !httpProbe(r, "/readyz", port) || r.PeriodSeconds > 2 {
					t.Errorf("agent: readiness %+v with --health-probe-bind-address port %q, want /readyz on it every 2 s at most", r, port)
				}
				if !httpProbe(l, "/healthz", port) {
					t.Errorf("agent: liveness %+v, want /healthz on port %q", l, port)
				}
			}
		})
	}
}

// httpProbe reports whether p is an HTTP GET of path on port (a number or a port name).
func httpProbe(p *corev1.Probe, path, port string) bool {
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == path && p.HTTPGet.Port.String() == port
}
