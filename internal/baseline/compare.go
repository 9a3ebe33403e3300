package baseline

import (
	"fmt"
	"math"
	"strings"
)

// Outcome is what Compare decided.
type Outcome string

// Compare's outcomes.
const (
	// Within: at most the tolerance below every reference there is.
	Within Outcome = "within"
	// Below: more than the tolerance below the fleet baseline or the node's previous value.
	Below Outcome = "below"
	// NoReference: neither a fleet baseline nor a previous value to compare with.
	NoReference Outcome = "no-reference"
)

// Verdict is one metric compared with the fleet baseline and the node's own previous
// value, with the numbers.
type Verdict struct {
	Metric           Metric
	Measured         float64
	Fleet, Previous  float64 // 0: none
	TolerancePercent float64
	// BelowFleetPercent and BelowPreviousPercent are how far Measured is below each
	// reference, in percent of it (negative: above); 0 without the reference.
	BelowFleetPercent, BelowPreviousPercent float64
	Outcome                                 Outcome
	// Message says it for people, with the numbers.
	Message string
}

// Compare judges a measured value of metric m against the fleet baseline (the median of
// the model's accepted nodes on the same driver; 0 when there is none) and the node's own
// previous value (0 when there is none): Below when it is more than tolerancePercent below
// either. A measured value that is not a finite non-negative number, a negative or
// non-finite reference, or a tolerance outside [0, 100] is an error naming it.
func Compare(m Metric, measured, fleet, previous, tolerancePercent float64) (Verdict, error) {
	switch {
	case !finiteNonNegative(measured):
		return Verdict{}, fmt.Errorf("metric %s: measured value %v is not a non-negative number", m, measured)
	case !finiteNonNegative(fleet):
		return Verdict{}, fmt.Errorf("metric %s: fleet baseline %v is not a non-negative number", m, fleet)
	case !finiteNonNegative(previous):
		return Verdict{}, fmt.Errorf("metric %s: previous value %v is not a non-negative number", m, previous)
	case !(tolerancePercent >= 0 && tolerancePercent <= 100):
		return Verdict{}, fmt.Errorf("metric %s: tolerance %v%% is not between 0 and 100", m, tolerancePercent)
	}
	v := Verdict{Metric: m, Measured: measured, Fleet: fleet, Previous: previous, TolerancePercent: tolerancePercent, Outcome: NoReference}
	unit := m.Unit()
	var parts []string
	judge := func(ref float64, what string) float64 {
		if ref == 0 {
			return 0
		}
		below := 100 * (ref - measured) / ref
		if v.Outcome == NoReference {
			v.Outcome = Within
		}
		if below > tolerancePercent {
			v.Outcome = Below
		}
		word := "below"
		if below < 0 {
			word = "above"
		}
		parts = append(parts, fmt.Sprintf("%.1f%% %s %s %.1f %s", math.Abs(below), word, what, ref, unit))
		return below
	}
	v.BelowFleetPercent = judge(fleet, "the fleet baseline")
	v.BelowPreviousPercent = judge(previous, "the node's previous")
	if v.Outcome == NoReference {
		v.Message = fmt.Sprintf("%s %.1f %s: no fleet baseline and no previous value to compare with", m, measured, unit)
		return v, nil
	}
	v.Message = fmt.Sprintf("%s %.1f %s: %s (tolerance %g%%)", m, measured, unit, strings.Join(parts, ", "), tolerancePercent)
	return v, nil
}

func finiteNonNegative(f float64) bool { return f >= 0 && !math.IsInf(f, 0) }
