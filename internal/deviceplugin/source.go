package deviceplugin

import (
	"github.com/gpunode/gpunode/internal/monitor"
)

// MonitorSource is a HealthSource over the health monitor: a GPU is unhealthy while its
// state is not health.State.InService (its causes require a GPU reset or more), and healthy again
// only when the health engine says so (after the recovery step and a passing check).
// Call Notify from the monitor's OnFinding and wherever else the states change.
type MonitorSource struct {
	read    func() []monitor.GPUHealth
	changed chan struct{}
}

// NewMonitorSource reads the states through read, typically (*monitor.Monitor).Health.
func NewMonitorSource(read func() []monitor.GPUHealth) *MonitorSource {
	return &MonitorSource{read: read, changed: make(chan struct{}, 1)}
}

// Health maps each GPU's UUID to whether it is in service.
func (s *MonitorSource) Health() map[string]bool {
	states := s.read()
	out := make(map[string]bool, len(states))
	for _, g := range states {
		out[g.UUID] = g.InService()
	}
	return out
}

// Changed receives a value after Notify; signals that arrive together are merged.
func (s *MonitorSource) Changed() <-chan struct{} { return s.changed }

// Notify signals that a state may have changed. It never blocks.
func (s *MonitorSource) Notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
