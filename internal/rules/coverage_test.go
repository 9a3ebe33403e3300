package rules_test

import (
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/internal/rules"
)

// notAgreed are the thresholds the agreement test cannot run through both engines, and why.
var notAgreed = map[string]string{
	"CorrectedECCPerMinute": "a rate: it needs two readings, and acceptance has one (internal/health's tests judge it)",
	"PCIeReplaysPerMinute":  "a rate: it needs two readings, and acceptance has one (internal/health's tests judge it)",
	"IgnoreXIDs":            "acceptance's XID check, not a rule of the set",
	"MinPerformancePercent": "the performance layer, not a rule of the set",
}

// A new threshold is run through the agreement test under a custom value too: custom()
// moves every threshold away from its default, and thresholdCases() puts a boundary at it.
func TestTheCustomPolicyMovesEveryThresholdTheAgreementTestRuns(t *testing.T) {
	def, cus := reflect.ValueOf(rules.DefaultThresholds()), reflect.ValueOf(custom())
	for i := range def.NumField() {
		name := def.Type().Field(i).Name
		if why, skip := notAgreed[name]; skip {
			t.Logf("%s: not in the agreement test: %s", name, why)
			continue
		}
		if reflect.DeepEqual(def.Field(i).Interface(), cus.Field(i).Interface()) {
			t.Errorf("custom() leaves %s at its default: set it in custom() and add a boundary(...) for it in thresholdCases()", name)
		}
	}
}
