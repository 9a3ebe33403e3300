package monitor

import (
	"reflect"
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
func isZero(t rules.Thresholds) bool { return reflect.ValueOf(t).IsZero() }
