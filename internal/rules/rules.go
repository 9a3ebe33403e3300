package rules

import (
	"slices"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
)

// Input is one GPU's reading, judged by a rule.
type Input struct {
	Device *gpu.Device
	// Prev is the GPU's previous reading (the monitor's last poll), nil when there is none
	// (an acceptance run, the first poll): counters are then judged from zero and rates are
	// not judged.
	Prev *gpu.Device
	// Interval between Prev and Device; 0 when rates cannot be judged.
	Interval time.Duration
	T        *Thresholds
}

// prevOK reports whether Prev has field f (and answered).
func (in Input) prevOK(f gpu.Field) bool {
	return in.Prev != nil && in.Prev.Err(f) == nil && in.Prev.Unreachable() == nil
}

// Outcome is one thing a rule found on one GPU.
type Outcome struct {
	// Cause is the stable key of the fault ("row-remap-pending"): the monitor's finding
	// cause, deduplicated per GPU.
	Cause     string
	Component fault.Component
	Severity  fault.Severity
	Action    fault.Action
	// Message is one line for people: acceptance's per-GPU message, the finding's summary.
	Message string
	// Evidence is the raw facts it was judged from.
	Evidence string
}

// Level is the outcome's level (LevelOf its severity and action).
func (o Outcome) Level() Level { return LevelOf(o.Severity, o.Action) }

// Rule is one per-GPU hardware rule.
type Rule struct {
	// Check is the acceptance check the rule is: "hardware.retired-pages".
	Check string
	Title string
	// Fix is shown when the check does not pass.
	Fix string
	// Fields are the facts the rule reads: a GPU missing one is not judged (acceptance
	// skips or fails it with the backend's words; the monitor leaves it).
	Fields []gpu.Field
	// Skip, when set, says why the rule does not apply to a GPU ("" = it applies).
	Skip func(d *gpu.Device) string
	// Judge returns what is wrong; nothing: the GPU passes. It formats nothing for a GPU
	// that passes (the monitor judges every GPU at every poll).
	Judge func(in Input) []Outcome
	// Pass is acceptance's message for a GPU Judge found nothing wrong with.
	Pass func(in Input) string
}

// ruleSet is every rule, in acceptance order.
var ruleSet = []Rule{
	eccErrors, rowRemap, retiredPages, temperature, power, clockEvents, pcieReplays,
	recoveryAction, pcieLink, nvlinkDown, fabric,
}

// Judge runs every rule that can read its fields on one GPU, in rule order. A GPU that does
// not answer gets Responding's outcome and nothing else.
func Judge(in Input) []Outcome {
	if o, lost := Responding(in.Device); lost {
		return []Outcome{o}
	}
	var out []Outcome
	unread := false
	for _, r := range ruleSet {
		if !Readable(in.Device, r.Fields) {
			unread = true
			continue
		}
		if r.Skip == nil || r.Skip(in.Device) == "" {
			out = append(out, r.Judge(in)...)
		}
	}
	if unread {
		if o, ok := Unreadable(in.Device); ok {
			out = append(out, o)
		}
	}
	return out
}

// CauseUnreadable is the cause of a GPU whose facts a rule needs could not be read (the read
// failed; a fact the hardware does not have is not this).
const CauseUnreadable = "telemetry-unreadable"

// Unreadable reports the facts of the rule set that could not be read on a GPU, as one
// warning: what cannot be read cannot be judged healthy, so it is a finding, never silence.
// It is not a reason to take the GPU out of service (a read can fail while the GPU works);
// acceptance, which must prove a GPU good, fails the checks whose facts it lacks.
func Unreadable(d *gpu.Device) (Outcome, bool) {
	var fields []string
	var evidence []string
	for _, r := range ruleSet {
		for _, f := range r.Fields {
			e := d.Err(f)
			if e == nil || e.NotSupported || slices.Contains(fields, string(f)) {
				continue
			}
			fields = append(fields, string(f))
			evidence = append(evidence, string(f)+": "+e.Message)
		}
	}
	if len(fields) == 0 {
		return Outcome{}, false
	}
	return Outcome{Cause: CauseUnreadable, Component: fault.ComponentDriver, Severity: fault.SeverityWarning, Action: fault.ActionNone,
		Message:  "could not read " + strings.Join(fields, ", ") + ": their faults cannot be seen",
		Evidence: strings.Join(evidence, "; ")}, true
}

// Readable reports whether every field was read.
func Readable(d *gpu.Device, fields []gpu.Field) bool {
	for _, f := range fields {
		if d.Err(f) != nil {
			return false
		}
	}
	return true
}

// CauseGPULost is the cause of a GPU that does not answer, or that the driver no longer lists.
const CauseGPULost = "gpu-lost"

// Responding judges whether the GPU answers (gpu.Device.Unreachable): a GPU that does not
// is fatal and needs a node reboot; every other rule skips it.
func Responding(d *gpu.Device) (Outcome, bool) {
	e := d.Unreachable()
	if e == nil {
		return Outcome{}, false
	}
	return Outcome{Cause: CauseGPULost, Component: fault.ComponentGPU, Severity: fault.SeverityFatal, Action: fault.ActionRebootNode,
		Message: "not answering: " + e.Message, Evidence: "device: " + e.Message}, true
}

// growth is how much a counter grew; a counter below its previous value was reset, so all
// of it is new.
func growth(was, now uint64) uint64 {
	if now < was {
		return now
	}
	return now - was
}

// overRate reports whether n events in interval exceed perMinute. Within a minute or less
// the count itself is compared (n events in 10 s exceed the limit of any minute holding
// them, and a short interval must not magnify one event); over longer intervals the limit
// scales with the minutes.
func overRate(n, perMinute uint64, interval time.Duration) bool {
	if interval <= time.Minute {
		return n > perMinute
	}
	return float64(n) > float64(perMinute)*interval.Minutes()
}

// ByCheck returns the rule of an acceptance check.
func ByCheck(id string) (Rule, bool) {
	for _, r := range ruleSet {
		if r.Check == id {
			return r, true
		}
	}
	return Rule{}, false
}
