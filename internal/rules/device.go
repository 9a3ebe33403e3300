package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Causes of the GPU's own state.
const (
	CauseTemperature    = "temperature-high"
	CausePowerDraw      = "power-draw-high"
	CausePowerLimit     = "power-limit-low"
	CauseRecoveryAction = "recovery-action"
)

// ClockEventCause is the cause of a non-benign clock event: "clock-hw-thermal-slowdown".
func ClockEventCause(e gpu.ClockEvent) string { return "clock-" + string(e) }

// busy reports whether the GPU says it is working: its clock events are known and do not
// include gpu-idle. The draw is judged only on a GPU that is not busy (a busy GPU draws near
// its limit), the link generation only on a busy one (an idle GPU trains its link down).
func busy(d *gpu.Device) bool {
	return d.Err(gpu.FieldClockEvents) == nil && !slices.Contains(d.ClockEvents, gpu.ClockEventIdle)
}

// temperature warns at or above the limit: the policy's, else the GPU's slowdown
// threshold minus 5 °C. Heat is a warning, never a reason to take a GPU out of service: a
// reset does not cool it, and a GPU that actually slows down shows in its clock events and
// in the performance layer.
var temperature = Rule{
	Check: "hardware.temperature", Title: "temperature below the slowdown threshold",
	Fix:    "check airflow, fans, inlet temperature and the data-centre cooling for this rack",
	Fields: []gpu.Field{gpu.FieldTemperature},
	Pass: func(in Input) string {
		d := in.Device
		limit, _ := temperatureLimit(in)
		if limit == 0 {
			return fmt.Sprintf("%d °C (no slowdown threshold reported)", d.Thermal.GPUC)
		}
		return fmt.Sprintf("%d °C, below %d °C", d.Thermal.GPUC, limit)
	},
	Judge: func(in Input) []Outcome {
		d := in.Device
		limit, src := temperatureLimit(in)
		if limit == 0 || d.Thermal.GPUC < limit {
			return nil
		}
		return []Outcome{{Cause: CauseTemperature, Component: fault.ComponentGPU, Severity: fault.SeverityWarning, Action: fault.ActionNone,
			Message:  fmt.Sprintf("%d °C, at or above %d °C (%s)", d.Thermal.GPUC, limit, src),
			Evidence: fmt.Sprintf("thermal.gpuC %d, slowdownC %d", d.Thermal.GPUC, d.Thermal.SlowdownC)}}
	},
}

// temperatureLimit is the policy's limit, else the GPU's slowdown threshold minus 5 °C; 0
// when there is neither.
func temperatureLimit(in Input) (int, string) {
	if in.T.MaxTemperatureC != 0 {
		return in.T.MaxTemperatureC, "policy"
	}
	if s := in.Device.Thermal.SlowdownC; s != 0 {
		return s - 5, fmt.Sprintf("slowdown %d °C - 5", s)
	}
	return 0, ""
}

// power warns when a GPU that is not busy draws more than the policy's share of its limit,
// or when the enforced limit is below the board's default.
var power = Rule{
	Check: "hardware.power", Title: "power draw and limit",
	Fix:    "restore the default power limit (`nvidia-smi -pl`) or fix the policy; an idle GPU near its limit is faulty",
	Fields: []gpu.Field{gpu.FieldPower},
	Skip: func(d *gpu.Device) string {
		if d.Power.LimitW <= 0 {
			return "no power limit reported"
		}
		return ""
	},
	Pass: func(in Input) string {
		w := in.Device.Power
		if busy(in.Device) {
			return fmt.Sprintf("%.0f W of %.0f W (busy: the draw is not judged)", w.DrawW, w.LimitW)
		}
		return fmt.Sprintf("%.0f W of %.0f W", w.DrawW, w.LimitW)
	},
	Judge: func(in Input) []Outcome {
		w := in.Device.Power
		pct := int(100 * w.DrawW / w.LimitW)
		ev := fmt.Sprintf("power drawW %.0f, limitW %.0f, defaultLimitW %.0f", w.DrawW, w.LimitW, w.DefaultLimitW)
		var out []Outcome
		if pct > in.T.MaxPowerPercent && !busy(in.Device) {
			out = append(out, Outcome{Cause: CausePowerDraw, Component: fault.ComponentGPU, Severity: fault.SeverityWarning, Action: fault.ActionNone,
				Message: fmt.Sprintf("%.0f W of %.0f W (%d%%, threshold %d%%)", w.DrawW, w.LimitW, pct, in.T.MaxPowerPercent), Evidence: ev})
		}
		if w.DefaultLimitW > 0 && w.LimitW < w.DefaultLimitW {
			out = append(out, Outcome{Cause: CausePowerLimit, Component: fault.ComponentGPU, Severity: fault.SeverityWarning, Action: fault.ActionNone,
				Message: fmt.Sprintf("power limit %.0f W below the default %.0f W", w.LimitW, w.DefaultLimitW), Evidence: ev})
		}
		return out
	},
}

// clockEvents warns for every non-benign reason for reduced clocks (hardware slowdown,
// thermal slowdown, power brake): one outcome per reason, each naming them all.
var clockEvents = Rule{
	Check: "hardware.clock-events", Title: "no thermal or power slowdown",
	Fix:    "hardware slowdown means overheating or a power-brake signal: check cooling and the PSU/power-brake cabling",
	Fields: []gpu.Field{gpu.FieldClockEvents},
	Pass:   func(Input) string { return "no thermal or power slowdown" },
	Judge: func(in Input) []Outcome {
		var bad []string
		for _, c := range in.Device.ClockEvents {
			if !c.Benign() {
				bad = append(bad, string(c))
			}
		}
		var out []Outcome
		for _, c := range bad {
			out = append(out, Outcome{Cause: ClockEventCause(gpu.ClockEvent(c)), Component: fault.ComponentGPU, Severity: fault.SeverityWarning,
				Action: fault.ActionNone, Message: "clocks reduced by " + strings.Join(bad, ", "), Evidence: "clockEvents " + c})
		}
		return out
	},
}

// recoveryAction fails for any recovery action the driver asks for.
var recoveryAction = Rule{
	Check: "hardware.recovery-action", Title: "driver's recovery action is none",
	Fix:    "do what the driver asks (reset the GPU, reboot the node, or drain peer-to-peer work), then rerun acceptance",
	Fields: []gpu.Field{gpu.FieldRecoveryAction},
	Pass:   func(Input) string { return "none" },
	Judge: func(in Input) []Outcome {
		if o, ok := RecoveryAction(in.Device.RecoveryAction); ok {
			return []Outcome{o}
		}
		return nil
	},
}

// recoveryRule is what one driver recovery action requires.
type recoveryRule struct {
	comp   fault.Component
	action fault.Action
	what   string
}

var recoveryRules = map[gpu.RecoveryAction]recoveryRule{
	gpu.RecoveryGPUReset:      {fault.ComponentGPU, fault.ActionResetGPU, "a GPU reset"},
	gpu.RecoveryNodeReboot:    {fault.ComponentGPU, fault.ActionRebootNode, "a node reboot"},
	gpu.RecoveryDrainP2P:      {fault.ComponentInterconnect, fault.ActionDrainP2P, "draining peer-to-peer work"},
	gpu.RecoveryDrainAndReset: {fault.ComponentGPU, fault.ActionResetGPU, "draining peer-to-peer work, then a GPU reset"},
}

// RecoveryAction classifies the driver's recovery action (the field, or its event); false
// for none. An action this package does not know is treated as a node reboot, the
// strongest automated step.
func RecoveryAction(ra gpu.RecoveryAction) (Outcome, bool) {
	if ra == gpu.RecoveryNone || ra == "" {
		return Outcome{}, false
	}
	r, known := recoveryRules[ra]
	msg := fmt.Sprintf("driver asks for %s (%s)", ra, r.what)
	if !known {
		r = recoveryRule{fault.ComponentGPU, fault.ActionRebootNode, ""}
		msg = fmt.Sprintf("driver asks for %q (unknown here: treated as a node reboot)", ra)
	}
	return Outcome{Cause: CauseRecoveryAction, Component: r.comp, Severity: fault.SeverityCritical, Action: r.action,
		Message: msg, Evidence: "recoveryAction " + string(ra)}, true
}
