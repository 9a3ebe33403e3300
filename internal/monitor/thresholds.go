package monitor

import (
	"slices"

	"github.com/gpunode/gpunode/internal/rules"
)

// SetThresholds makes t the thresholds of the next poll and of every check that asks
// Thresholds. It is safe while Run runs: the node's policy can change between rounds (the
// agent sets the governing GPUNodePolicy's thresholds, internal/nodepolicy.Thresholds).
// A poll in progress keeps the thresholds it started with.
func (m *Monitor) SetThresholds(t rules.Thresholds) {
	t.IgnoreXIDs = slices.Clone(t.IgnoreXIDs)
	m.thresholds.Store(&t)
}

// Thresholds returns the thresholds the monitor judges by now: Config.Thresholds until
// SetThresholds is called. The result is the caller's own copy.
func (m *Monitor) Thresholds() rules.Thresholds {
	t := *m.thresholds.Load()
	t.IgnoreXIDs = slices.Clone(t.IgnoreXIDs)
	return t
}

// isZero reports whether no threshold is set (Config.Thresholds left out).
func isZero(t rules.Thresholds) bool {
	return t.MaxTemperatureC == 0 && t.MaxPCIeReplays == 0 && t.MaxCorrectedECC == 0 && t.MaxRetiredPages == 0 &&
		t.MaxCorrectableRemappedRows == 0 && t.MaxPowerPercent == 0 && t.CorrectedECCPerMinute == 0 &&
		t.PCIeReplaysPerMinute == 0 && t.IgnoreXIDs == nil && t.MinPerformancePercent == 0
}
