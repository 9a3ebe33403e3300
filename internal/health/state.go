package health

import (
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/rules"
)

// Health is a GPU's health.
type Health string

// Healths, from best to worst.
const (
	// Healthy: no fault since the last passing check.
	Healthy Health = "healthy"
	// Degraded: warnings; the GPU stays in service.
	Degraded Health = "degraded"
	// Unhealthy: out of service until State.Action is done and the checks pass.
	Unhealthy Health = "unhealthy"
)

// RecoveryKind is a recovery step that was carried out on a GPU.
type RecoveryKind string

// Recovery kinds, with the action each one covers (recoveryCovers).
const (
	RecoveryGPUReset     RecoveryKind = "gpu-reset"
	RecoveryDriverReload RecoveryKind = "driver-reload"
	RecoveryNodeReboot   RecoveryKind = "node-reboot"
	// RecoveryServiced: a person repaired the GPU (the service action, the RMA path).
	RecoveryServiced RecoveryKind = "serviced"
)

// recoveryCovers is the most disruptive action each recovery carries out; it covers every
// less disruptive one (a node reboot also resets the GPU).
var recoveryCovers = map[RecoveryKind]fault.Action{
	RecoveryGPUReset:     fault.ActionResetGPU,
	RecoveryDriverReload: fault.ActionReloadDriver,
	RecoveryNodeReboot:   fault.ActionRebootNode,
	RecoveryServiced:     fault.ActionService,
}

// MaxCauses is the most causes a State lists; more are counted in MoreCauses.
const MaxCauses = 32

// State is one GPU's health (docs/health.md has the machine). The zero State is Healthy.
type State struct {
	Health Health `json:"health"`
	// Action is the most disruptive action the causes require: required while Unhealthy,
	// advisory while Degraded (less than a GPU reset), none while Healthy. It only
	// escalates until the GPU is Healthy again.
	Action fault.Action `json:"action"`
	// Causes are the causes of the findings since the GPU was last Healthy, sorted.
	Causes     []string `json:"causes,omitempty"`
	MoreCauses int      `json:"moreCauses,omitempty"`
	// Since is when Health last changed.
	Since time.Time `json:"since"`
	// AwaitingCheck: a recovery that covers Action was carried out; the checks decide.
	AwaitingCheck bool `json:"awaitingCheck,omitempty"`
	// Recovery and RecoveredAt are the last recovery that counted.
	Recovery    RecoveryKind `json:"recovery,omitempty"`
	RecoveredAt time.Time    `json:"recoveredAt,omitzero"`
}

// InService reports whether the GPU may run work: every state but Unhealthy. A GPU leaves
// service on a finding that needs a GPU reset or more, and comes back only when Next makes
// it Healthy again (after the recovery step and a passing check). The device plugin's
// Healthy/Unhealthy and the DRA plugin's device taints both follow it.
func (s State) InService() bool { return s.Health != Unhealthy }

// NewState is a Healthy GPU first seen at now.
func NewState(now time.Time) State {
	return State{Health: Healthy, Action: fault.ActionNone, Since: now}
}

// Covers reports whether recovery k carries out action a or a more disruptive one (a
// reboot covers a GPU reset); an unknown kind covers nothing.
func (k RecoveryKind) Covers(a fault.Action) bool {
	c, ok := recoveryCovers[k]
	return ok && a.Rank() <= c.Rank()
}

// Input is what moves the machine: a Finding, Recovered, CheckPassed or CheckFailed.
type Input interface{ input() }

// Recovered says a recovery step was carried out on the GPU.
type Recovered struct {
	Kind RecoveryKind `json:"kind"`
}

// CheckPassed says the GPU's checks passed.
type CheckPassed struct{}

// CheckFailed says one of the GPU's checks failed, and what it calls for (none if unsaid).
type CheckFailed struct {
	Check  string       `json:"check,omitempty"`
	Action fault.Action `json:"action,omitempty"`
}

func (Recovered) input()   {}
func (CheckPassed) input() {}
func (CheckFailed) input() {}

// Next is the GPU health state machine: the state after in, at now. It is pure: now only
// stamps Since and RecoveredAt, and time alone never changes Health.
//
//   - A Finding that is Unhealthy() makes the GPU Unhealthy with the finding's action, or
//     escalates the action of an Unhealthy GPU (never lowers it), and cancels a pending
//     AwaitingCheck: the recovery did not hold. A finding that Degrades() makes a Healthy
//     GPU Degraded. Info findings change nothing. A finding last seen before the last
//     recovery, whose action that recovery covers, is stale and changes nothing.
//   - Recovered on a Degraded or Unhealthy GPU whose Action the recovery covers sets
//     AwaitingCheck; Health does not change: a reset or a reboot alone clears nothing. A
//     recovery that does not cover Action (a GPU reset when a reboot is required), or of
//     an unknown kind, changes nothing.
//   - CheckPassed makes a Degraded GPU, or an Unhealthy GPU AwaitingCheck, Healthy and
//     clears its causes. On an Unhealthy GPU not AwaitingCheck it changes nothing.
//   - CheckFailed makes the GPU Unhealthy with at least the check's action, cause
//     "check-failed" or "check-failed/<check>", and cancels AwaitingCheck.
//   - Any other input (a *Finding) changes nothing.
func Next(s State, in Input, now time.Time) State {
	if s.Health == "" {
		s.Health = Healthy
	}
	if s.Action == "" {
		s.Action = fault.ActionNone
	}
	switch in := in.(type) {
	case Finding:
		return onFinding(s, in, now)
	case Recovered:
		covers, known := recoveryCovers[in.Kind]
		if !known || covers.Rank() < s.Action.Rank() {
			return s
		}
		s.Recovery, s.RecoveredAt = in.Kind, now
		s.AwaitingCheck = s.Health != Healthy
		return s
	case CheckPassed:
		if s.Health == Degraded || (s.Health == Unhealthy && s.AwaitingCheck) {
			s.Health, s.Since = Healthy, now
			s.Action, s.Causes, s.MoreCauses, s.AwaitingCheck = fault.ActionNone, nil, 0, false
		}
		return s
	case CheckFailed:
		cause := CauseCheckFailed
		if in.Check != "" {
			cause += "/" + in.Check
		}
		return worsen(s, cause, in.Action, true, now)
	}
	return s
}

func onFinding(s State, f Finding, now time.Time) State {
	if !f.Unhealthy() && !f.Degrades() {
		return s
	}
	if !s.RecoveredAt.IsZero() && !f.LastSeen.IsZero() && f.LastSeen.Before(s.RecoveredAt) &&
		f.Action.Rank() <= recoveryCovers[s.Recovery].Rank() {
		return s
	}
	return worsen(s, f.Cause, f.Action, f.Unhealthy(), now)
}

// worsen records a cause and moves to Unhealthy (unhealthy) or at least Degraded.
func worsen(s State, cause string, a fault.Action, unhealthy bool, now time.Time) State {
	s = addCause(s, cause)
	s.Action = fault.Max(s.Action, a)
	switch {
	case unhealthy:
		if s.Health != Unhealthy {
			s.Health, s.Since = Unhealthy, now
		}
		s.AwaitingCheck = false
	case s.Health == Healthy:
		s.Health, s.Since = Degraded, now
	}
	return s
}

// addCause inserts a cause in sorted order without touching the caller's slice.
func addCause(s State, cause string) State {
	i, found := slices.BinarySearch(s.Causes, cause)
	switch {
	case found:
	case len(s.Causes) >= MaxCauses:
		s.MoreCauses++
	default:
		s.Causes = slices.Insert(slices.Clip(s.Causes), i, cause)
	}
	return s
}

// HealthOf is the health a rule outcome's level leads a healthy GPU to: unhealthy for
// Fail, degraded for Warn, healthy otherwise; acceptance maps the same level to fail, warn
// and pass (accept.StatusOf).
func HealthOf(l rules.Level) Health {
	switch l {
	case rules.Fail:
		return Unhealthy
	case rules.Warn:
		return Degraded
	}
	return Healthy
}
