// Package rules owns the per-GPU hardware rules: each rule is defined once here, judged
// against one thresholds table that comes from the policy, and used by the acceptance
// engine (internal/accept turns an outcome into pass, warn or fail) and by the health
// monitor (internal/health turns it into a finding, and the finding into health). Level is
// the one mapping between the two: a failing outcome is an unhealthy-making finding, a
// warning one a degrading finding (docs/health.md, docs/policy.md).
package rules

import "github.com/gpunode/gpunode/internal/fault"

// Thresholds is the one thresholds table: the spec.acceptance.thresholds of a
// GPUNodePolicy (internal/nodepolicy converts it), used by every rule of this package and by
// the acceptance engine's XID and performance checks. DefaultThresholds has the defaults.
type Thresholds struct {
	// MaxTemperatureC: warn at or above; 0 = the GPU's own slowdown threshold minus 5 °C.
	MaxTemperatureC int `json:"maxTemperatureC,omitempty"`
	// MaxPCIeReplays since the driver loaded: warn above.
	MaxPCIeReplays uint64 `json:"maxPCIeReplays"`
	// MaxCorrectedECC (volatile, since the last reset): warn above.
	MaxCorrectedECC uint64 `json:"maxCorrectedECC"`
	// MaxRetiredPages (single + double bit): fail above (NVIDIA's RMA guidance is 60+).
	MaxRetiredPages int `json:"maxRetiredPages"`
	// MaxCorrectableRemappedRows: warn above.
	MaxCorrectableRemappedRows int `json:"maxCorrectableRemappedRows"`
	// MaxPowerPercent of the enforced limit while the GPU is not busy: warn above.
	MaxPowerPercent int `json:"maxPowerPercent"`
	// CorrectedECCPerMinute: warn when volatile corrected ECC errors grow faster (judged
	// between two readings: the monitor's polls).
	CorrectedECCPerMinute uint64 `json:"correctedECCPerMinute"`
	// PCIeReplaysPerMinute: warn when the PCIe replay counter grows faster (between two
	// readings).
	PCIeReplaysPerMinute uint64 `json:"pcieReplaysPerMinute"`
	// IgnoreXIDs: XIDs since boot that do not fail acceptance (application-level ones).
	IgnoreXIDs []int `json:"ignoreXIDs,omitempty"`
	// MinPerformancePercent of the baseline a measured value must reach (default 90).
	MinPerformancePercent int `json:"minPerformancePercent"`
}

// DefaultThresholds returns the defaults:
//
//   - MaxPCIeReplays 100 since driver load, MaxCorrectedECC 1,000 since the last reset,
//     MaxCorrectableRemappedRows 512, MaxPowerPercent 95, MaxTemperatureC 0 (slowdown - 5).
//   - MaxRetiredPages 60: NVIDIA's RMA guidance.
//   - CorrectedECCPerMinute 100: a corrected-error storm (about 6,000 an hour); single
//     corrected errors are routine and row remapping absorbs them.
//   - PCIeReplaysPerMinute 8: DCGM's PCIe health-watch threshold ("more than 8 PCIe
//     replays per minute").
//   - IgnoreXIDs: the application-level XIDs (catalog action IGNORE or RESTART_APP).
//   - MinPerformancePercent 90.
func DefaultThresholds() Thresholds {
	return Thresholds{
		MaxPCIeReplays:             100,
		MaxCorrectedECC:            1000,
		MaxRetiredPages:            60,
		MaxCorrectableRemappedRows: 512,
		MaxPowerPercent:            95,
		CorrectedECCPerMinute:      100,
		PCIeReplaysPerMinute:       8,
		IgnoreXIDs:                 []int{8, 13, 31, 32, 38, 43, 44, 45, 63, 68, 69, 92, 94, 121, 137},
		MinPerformancePercent:      90,
	}
}

// Level is how bad an outcome is, the same for every consumer.
type Level int

// Levels, from best to worst.
const (
	// OK: nothing to report.
	OK Level = iota
	// Note: history worth recording (an info finding; acceptance passes and says so).
	Note
	// Warn: the GPU stays in service (acceptance warns; the monitor degrades the GPU).
	Warn
	// Fail: the GPU is not fit for service (acceptance fails; the monitor makes the GPU
	// unhealthy).
	Fail
)

// LevelOf is the level of a fault of severity s requiring action a: the one mapping from
// the fault taxonomy to acceptance statuses and health. Critical or fatal, or a GPU reset or
// more, fails (unhealthy); a warning (or an unknown severity), or an action short of a GPU
// reset, warns (degraded); anything else is a note.
func LevelOf(s fault.Severity, a fault.Action) Level {
	switch {
	case s.Rank() >= fault.SeverityCritical.Rank() || a.Rank() >= fault.ActionResetGPU.Rank():
		return Fail
	case s == fault.SeverityWarning || s.Rank() < 0 || a.Rank() > fault.ActionNone.Rank():
		return Warn
	}
	return Note
}
