package dra

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// Taint values: what an out-of-service GPU needs before it may run work again.
const (
	ValueNeedsReset        = "NeedsReset"
	ValueNeedsDriverReload = "NeedsDriverReload"
	ValueNeedsReboot       = "NeedsReboot"
	ValueNeedsService      = "NeedsService"
	ValueLost              = "Lost"
)

// Taint is the device taint of a GPU in state s (nil while s.InService(), the device
// plugin's rule: lifted only after the recovery and a passing check), and why. A lost GPU
// (lost: it does not answer), one that needs the node rebooted or a person's service is
// tainted NoExecute when evict is set, else NoSchedule; a GPU that needs a reset or a
// driver reload NoSchedule. The taint's time is left to the API server.
func Taint(s health.State, lost, evict bool) (*resourceapi.DeviceTaint, string) {
	if s.InService() {
		return nil, ""
	}
	value, severe := ValueNeedsReset, false
	switch {
	case lost:
		value, severe = ValueLost, true
	case s.Action == fault.ActionService:
		value, severe = ValueNeedsService, true
	case s.Action == fault.ActionRebootNode:
		value, severe = ValueNeedsReboot, true
	case s.Action == fault.ActionReloadDriver:
		value = ValueNeedsDriverReload
	}
	effect := resourceapi.DeviceTaintEffectNoSchedule
	if severe && evict {
		effect = resourceapi.DeviceTaintEffectNoExecute
	}
	msg := fmt.Sprintf("%s (%s)", value, s.Action)
	if len(s.Causes) > 0 {
		msg += ": " + strings.Join(s.Causes, ", ")
		if s.MoreCauses > 0 {
			msg += fmt.Sprintf(" and %d more", s.MoreCauses)
		}
	}
	return &resourceapi.DeviceTaint{Key: TaintKey, Value: value, Effect: effect}, msg
}
