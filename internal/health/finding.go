// Package health turns facts about GPUs into findings and findings into per-GPU health.
//
// Everything here is a pure decision except the Aggregator, which holds the deduplicated
// findings of one node: FromSnapshot compares two counter snapshots, FromEvent classifies one
// device event, XIDFinding classifies one XID report from any source, and Next is the per-GPU
// health state machine (docs/health.md). The vocabulary is the vendor-neutral taxonomy of
// internal/fault.
package health

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/rules"
)

// Source is where a finding came from.
type Source string

// Sources of findings.
const (
	// SourceKmsg: a line of the kernel log.
	SourceKmsg Source = "kmsg"
	// SourceNVMLEvent: an asynchronous device event (NVML, or the sim backend's).
	SourceNVMLEvent Source = "nvml-event"
	// SourceCounter: a counter or state polled in a snapshot (FromSnapshot).
	SourceCounter Source = "counter"
	// SourceCheck: a check of the acceptance engine.
	SourceCheck Source = "check"
)

// Causes: the stable keys findings are deduplicated on (with the GPU). XID findings use
// XIDCause, NVLink findings NVLinkDownCause and clock events ClockEventCause.
const (
	CauseGPULost          = rules.CauseGPULost
	CauseGPUUnavailable   = "gpu-unavailable"
	CauseECCUncorrected   = rules.CauseECCUncorrected
	CauseECCAggregate     = rules.CauseECCAggregate
	CauseECCCorrected     = rules.CauseECCCorrected
	CauseECCCorrectedRate = rules.CauseECCCorrectedRate
	CauseECCSingleBit     = "ecc-single-bit"
	CauseRowRemapPending  = rules.CauseRowRemapPending
	CauseRowRemapFailure  = rules.CauseRowRemapFailure
	CauseRowRemapRows     = rules.CauseRowRemapRows
	CauseRetiredPending   = rules.CauseRetiredPending
	CauseRetiredLimit     = rules.CauseRetiredLimit
	CausePCIeReplays      = rules.CausePCIeReplays
	CausePCIeReplayRate   = rules.CausePCIeReplayRate
	CausePCIeLinkWidth    = rules.CausePCIeLinkWidth
	CausePCIeLinkGen      = rules.CausePCIeLinkGen
	CauseTemperature      = rules.CauseTemperature
	CausePowerDraw        = rules.CausePowerDraw
	CausePowerLimit       = rules.CausePowerLimit
	CauseRecoveryAction   = rules.CauseRecoveryAction
	CauseFabric           = rules.CauseFabric
	// CauseOverflow is the Aggregator's own finding for what it could not keep.
	CauseOverflow = "overflow"
	// CauseCheckFailed (optionally "check-failed/<check id>") is recorded by Next.
	CauseCheckFailed = "check-failed"
)

// XIDCause is the cause of an XID finding: "xid-79".
func XIDCause(code int) string { return "xid-" + strconv.Itoa(code) }

// EventCause is the cause of a device event of a kind this package does not know.
func EventCause(kind string) string { return "event-" + kind }

// Finding is one fault, deduplicated per GPU and cause.
type Finding struct {
	// GPU is the device's UUID; "" for a node-level finding.
	GPU string `json:"gpu"`
	// GPUIndex is the device's index; -1 for a node-level finding or when unknown.
	GPUIndex  int             `json:"gpuIndex"`
	Component fault.Component `json:"component"`
	Severity  fault.Severity  `json:"severity"`
	// Action is what must happen to clear the fault.
	Action fault.Action `json:"action"`
	Source Source       `json:"source"`
	// Cause is the stable dedupe key ("xid-79", "row-remap-pending", "nvlink-down-7").
	Cause   string `json:"cause"`
	Summary string `json:"summary"`
	// FirstSeen and LastSeen are the source's own times (kernel log, event, snapshot).
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	// Count is how many times the fault was observed (0 on input means 1). A condition
	// that holds (a pending row remap) is observed once per snapshot that shows it.
	Count int `json:"count"`
	// Evidence is the raw facts: the first few observations and the latest one.
	Evidence []string `json:"evidence,omitempty"`
}

func (Finding) input() {}

// String is a one-line rendering for logs.
func (f Finding) String() string {
	where := "node"
	if f.GPU != "" || f.GPUIndex >= 0 {
		where = fmt.Sprintf("GPU %d (%s)", f.GPUIndex, f.GPU)
	}
	return fmt.Sprintf("%s: %s %s/%s, action %s: %s (x%d)", where, f.Cause, f.Component, f.Severity, f.Action, f.Summary, f.Count)
}

// Unhealthy reports whether the finding takes its GPU out of service: its level
// (rules.LevelOf, the mapping acceptance shares) is Fail: it is critical or fatal, or it
// requires a GPU reset or more.
func (f Finding) Unhealthy() bool { return HealthOf(rules.LevelOf(f.Severity, f.Action)) == Unhealthy }

// Degrades reports whether the finding degrades a healthy GPU without taking it out of
// service: its level is Warn: a warning (or an unknown severity), or an action short of a
// GPU reset.
func (f Finding) Degrades() bool { return HealthOf(rules.LevelOf(f.Severity, f.Action)) == Degraded }

// newFinding is a finding of one device observed once at t.
func newFinding(uuid string, index int, c fault.Component, s fault.Severity, a fault.Action, src Source, cause, summary string, t time.Time, evidence ...string) Finding {
	return Finding{
		GPU: uuid, GPUIndex: index, Component: c, Severity: s, Action: a, Source: src,
		Cause: cause, Summary: summary, FirstSeen: t, LastSeen: t, Count: 1, Evidence: evidence,
	}
}
