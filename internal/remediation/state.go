package remediation

import (
	"slices"
	"time"
)

// MaxAttempts is the most attempts State keeps; older ones are dropped first. It is far
// above any sane per-window limit, so the limits still hold.
const MaxAttempts = 64

// AttemptResult is how an attempt of a step ended.
type AttemptResult string

// Attempt results.
const (
	// AttemptPending: the step was started and has not reported.
	AttemptPending AttemptResult = "pending"
	// AttemptSucceeded: the executor reported success; acceptance has not answered yet.
	AttemptSucceeded AttemptResult = "succeeded"
	// AttemptCleared: the acceptance after the step passed and the fault is gone.
	AttemptCleared AttemptResult = "cleared"
	// AttemptNotCleared: the step ran but the acceptance failed or the fault remained.
	AttemptNotCleared AttemptResult = "not-cleared"
	// AttemptFailed: the executor reported failure, or the GPUs stayed busy.
	AttemptFailed AttemptResult = "failed"
	// AttemptTimedOut: the step never reported within its timeout.
	AttemptTimedOut AttemptResult = "timed-out"
)

// Attempt is one start of a step. Attempts outlive episodes: a fault that returns after a
// release finds the steps already used in the window.
type Attempt struct {
	Step    Step          `json:"step"`
	ID      int64         `json:"id"`
	GPUs    []int         `json:"gpus,omitempty"`
	Started time.Time     `json:"started"`
	Ended   time.Time     `json:"ended,omitzero"`
	Result  AttemptResult `json:"result"`
	Detail  string        `json:"detail,omitempty"`
}

// EvidenceState is the evidence capture requested for the current step.
type EvidenceState struct {
	// ID of the capture request; Step it was requested for.
	ID          int64     `json:"id,omitempty"`
	Step        Step      `json:"step,omitempty"`
	RequestedAt time.Time `json:"requestedAt,omitzero"`
	// SHA256 and RecordedAt are set once the agent recorded the bundle.
	SHA256     string    `json:"sha256,omitempty"`
	RecordedAt time.Time `json:"recordedAt,omitzero"`
}

// Recorded reports whether the bundle was recorded.
func (e EvidenceState) Recorded() bool { return !e.RecordedAt.IsZero() }

// State is what remediation persists between decisions (GPUNode status). The reconciler
// writes a Decision's State before it carries out the Decision's actions: a controller that
// dies in between finds the step recorded as started and never starts it again.
type State struct {
	Phase      Phase     `json:"phase,omitempty"`
	PhaseSince time.Time `json:"phaseSince,omitzero"`
	// FaultSince is when the episode's fault was first seen; it orders the budget queue.
	FaultSince time.Time `json:"faultSince,omitzero"`
	// GPUs are the indices of the GPUs the episode targets; NodeWide when a node fault
	// is part of it. Causes (at most MaxStateCauses) say what the fault was.
	GPUs     []int    `json:"gpus,omitempty"`
	NodeWide bool     `json:"nodeWide,omitempty"`
	Causes   []string `json:"causes,omitempty"`
	// Step is the current step; DrainStarted when eviction for it began; StepStarted
	// when it was started (zero: not yet) under request RequestID.
	Step         Step      `json:"step,omitempty"`
	DrainStarted time.Time `json:"drainStarted,omitzero"`
	StepStarted  time.Time `json:"stepStarted,omitzero"`
	RequestID    int64     `json:"requestID,omitempty"`
	// EpisodeSteps counts the steps started in this episode: once one has, only a passing
	// acceptance (or a person) ends the episode.
	EpisodeSteps int `json:"episodeSteps,omitempty"`
	// LastID is the last request ID issued to the node (steps and evidence); it only grows.
	LastID   int64         `json:"lastID,omitempty"`
	Evidence EvidenceState `json:"evidence,omitzero"`
	// AcceptanceGeneration is the acceptance requested after the step, at
	// AcceptanceRequestedAt. AfterRelease: it was requested by a release from maintenance.
	AcceptanceGeneration  int64     `json:"acceptanceGeneration,omitempty"`
	AcceptanceRequestedAt time.Time `json:"acceptanceRequestedAt,omitzero"`
	AfterRelease          bool      `json:"afterRelease,omitempty"`
	// Reason says why the node is where it is (the last escalation, or why maintenance).
	Reason string `json:"reason,omitempty"`
	// ReleaseHandled is the release request acted on last.
	ReleaseHandled time.Time `json:"releaseHandled,omitzero"`
	// Attempts of every step within the longest window, oldest first.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// MaxStateCauses is the most causes State records.
const MaxStateCauses = 8

// clone returns a copy that shares nothing mutable with s.
func (s State) clone() State {
	s.GPUs = slices.Clone(s.GPUs)
	s.Causes = slices.Clone(s.Causes)
	s.Attempts = slices.Clone(s.Attempts)
	for i := range s.Attempts {
		s.Attempts[i].GPUs = slices.Clone(s.Attempts[i].GPUs)
	}
	return s
}

// prune drops attempts that ended (or started, while pending) before now-window, and the
// oldest beyond MaxAttempts. A pending attempt is never dropped.
func (s *State) prune(now time.Time, window time.Duration) {
	cut := now.Add(-window)
	s.Attempts = slices.DeleteFunc(s.Attempts, func(a Attempt) bool {
		return a.Result != AttemptPending && a.Started.Before(cut)
	})
	if n := len(s.Attempts) - MaxAttempts; n > 0 {
		s.Attempts = slices.Delete(s.Attempts, 0, n)
	}
}

// attemptsSince counts the attempts of step started at or after t on scope, and the latest
// start. Scope is GPU indexes (nil: the whole node): an attempt counts when it touched one of
// them, and one on the whole node (no GPUs) touched every GPU. So a GPU's resets do not spend
// another GPU's attempts nor make it wait out their backoff.
func (s *State) attemptsSince(step Step, t time.Time, scope []int) (int, time.Time) {
	n, last := 0, time.Time{}
	for _, a := range s.Attempts {
		if a.Step == step && !a.Started.Before(t) && overlaps(a.GPUs, scope) {
			n++
			if a.Started.After(last) {
				last = a.Started
			}
		}
	}
	return n, last
}

// overlaps reports whether two GPU scopes share a GPU; an empty scope is the whole node.
func overlaps(a, b []int) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// current returns the attempt of the running step, if any.
func (s *State) current() *Attempt {
	for i := len(s.Attempts) - 1; i >= 0; i-- {
		if a := &s.Attempts[i]; a.ID == s.RequestID && a.Step == s.Step && s.RequestID != 0 {
			return a
		}
	}
	return nil
}

// clearStep forgets the current step's progress (not its attempts).
func (s *State) clearStep() {
	s.DrainStarted, s.StepStarted, s.RequestID = time.Time{}, time.Time{}, 0
	s.AcceptanceGeneration, s.AcceptanceRequestedAt = 0, time.Time{}
}

// closeEpisode returns to no claim, keeping what outlives an episode: attempts, the last
// request ID and the last release handled.
func (s State) closeEpisode() State {
	return State{LastID: s.LastID, ReleaseHandled: s.ReleaseHandled, Attempts: s.Attempts}
}
