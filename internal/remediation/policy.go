package remediation

import "time"

// StepPolicy limits one step of the ladder.
type StepPolicy struct {
	// Disabled skips the step (a driver baked into the image cannot be reloaded by
	// deleting a pod; a cluster may forbid reboots).
	Disabled bool `json:"disabled,omitempty"`
	// MaxAttempts is how many times the step may start within Window; then the ladder
	// skips it. Backoff is the wait after an attempt before the next one, doubled for
	// each attempt in the window. Timeout is how long a started step may go without
	// reporting before it is escalated.
	MaxAttempts int           `json:"maxAttempts,omitempty"`
	Window      time.Duration `json:"window,omitempty"`
	Backoff     time.Duration `json:"backoff,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
}

// Budget is how many of a pool's nodes may be held at once, counting every owner's holds.
// A number and a percentage may both be set: the smaller wins. A percentage of a group's
// size rounds up, so a non-zero percentage always allows one node.
type Budget struct {
	MaxHeld        int `json:"maxHeld,omitempty"`
	MaxHeldPercent int `json:"maxHeldPercent,omitempty"`
	// DomainKey is a failure-domain label (topology.kubernetes.io/zone, a rack label);
	// with it, each of its values within the pool may hold at most MaxHeldPerDomain
	// nodes or MaxHeldPerDomainPercent of its nodes. Nodes without the label share the
	// domain "".
	DomainKey               string `json:"domainKey,omitempty"`
	MaxHeldPerDomain        int    `json:"maxHeldPerDomain,omitempty"`
	MaxHeldPerDomainPercent int    `json:"maxHeldPerDomainPercent,omitempty"`
}

// BreakerPolicy trips a pool's circuit breaker when more than Count nodes, or more than
// Percent of its nodes (and at least MinNodes, so that one fault in a pool of three does
// not stop a fleet), report new faults within Window. With neither Count nor Percent set,
// Percent takes the default.
type BreakerPolicy struct {
	Disabled bool          `json:"disabled,omitempty"`
	Count    int           `json:"count,omitempty"`
	Percent  int           `json:"percent,omitempty"`
	MinNodes int           `json:"minNodes,omitempty"`
	Window   time.Duration `json:"window,omitempty"`
}

// Policy is one pool's remediation policy (from its GPUNodePolicy). A zero field takes the
// default of DefaultPolicy.
type Policy struct {
	// Disabled turns automatic remediation off for the pool: a node that cannot run work
	// is still held, and nothing else happens (faults are recorded, phase Suspect).
	Disabled     bool       `json:"disabled,omitempty"`
	RestartApp   StepPolicy `json:"restartApp,omitzero"`
	ResetGPU     StepPolicy `json:"resetGPU,omitzero"`
	ReloadDriver StepPolicy `json:"reloadDriver,omitzero"`
	RebootNode   StepPolicy `json:"rebootNode,omitzero"`
	PowerCycle   StepPolicy `json:"powerCycle,omitzero"`
	// PowerCycleConfigured: a power-cycle hook exists; without it the step is skipped.
	PowerCycleConfigured bool `json:"powerCycleConfigured,omitempty"`
	// RemediateDegraded starts the ladder (at restart-app) for a degraded GPU whose
	// advisory action is restart-app or drain-p2p. Off by default: application errors
	// are the application's to restart, and holding a node for them punishes everyone.
	RemediateDegraded bool `json:"remediateDegraded,omitempty"`
	// DrainTimeout bounds the eviction of pods before a step; EvidenceTimeout the wait for
	// an evidence bundle; AcceptanceTimeout the wait for the acceptance after a step.
	DrainTimeout      time.Duration `json:"drainTimeout,omitempty"`
	EvidenceTimeout   time.Duration `json:"evidenceTimeout,omitempty"`
	AcceptanceTimeout time.Duration `json:"acceptanceTimeout,omitempty"`
	Budget            Budget        `json:"budget,omitzero"`
	Breaker           BreakerPolicy `json:"breaker,omitzero"`
}

// DefaultPolicy is the policy of a pool that says nothing (docs/remediation.md explains the
// numbers).
func DefaultPolicy() Policy {
	day := 24 * time.Hour
	return Policy{
		RestartApp:        StepPolicy{MaxAttempts: 2, Window: day, Backoff: 5 * time.Minute, Timeout: 10 * time.Minute},
		ResetGPU:          StepPolicy{MaxAttempts: 2, Window: day, Backoff: 15 * time.Minute, Timeout: 5 * time.Minute},
		ReloadDriver:      StepPolicy{MaxAttempts: 1, Window: day, Backoff: time.Hour, Timeout: 15 * time.Minute},
		RebootNode:        StepPolicy{MaxAttempts: 1, Window: day, Backoff: time.Hour, Timeout: 30 * time.Minute},
		PowerCycle:        StepPolicy{MaxAttempts: 1, Window: day, Backoff: time.Hour, Timeout: 30 * time.Minute},
		DrainTimeout:      10 * time.Minute,
		EvidenceTimeout:   5 * time.Minute,
		AcceptanceTimeout: 30 * time.Minute,
		Budget:            Budget{MaxHeldPercent: 10},
		Breaker:           BreakerPolicy{Percent: 20, MinNodes: 3, Window: 10 * time.Minute},
	}
}

// WithDefaults returns p with every zero field set from DefaultPolicy. A budget with
// neither a number nor a percentage takes the default percentage.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	p.RestartApp = p.RestartApp.withDefaults(d.RestartApp)
	p.ResetGPU = p.ResetGPU.withDefaults(d.ResetGPU)
	p.ReloadDriver = p.ReloadDriver.withDefaults(d.ReloadDriver)
	p.RebootNode = p.RebootNode.withDefaults(d.RebootNode)
	p.PowerCycle = p.PowerCycle.withDefaults(d.PowerCycle)
	orDefault(&p.DrainTimeout, d.DrainTimeout)
	orDefault(&p.EvidenceTimeout, d.EvidenceTimeout)
	orDefault(&p.AcceptanceTimeout, d.AcceptanceTimeout)
	if p.Budget.MaxHeld == 0 && p.Budget.MaxHeldPercent == 0 {
		p.Budget.MaxHeldPercent = d.Budget.MaxHeldPercent
	}
	if p.Breaker.Percent == 0 && p.Breaker.Count == 0 {
		p.Breaker.Percent = d.Breaker.Percent
	}
	if p.Breaker.MinNodes == 0 {
		p.Breaker.MinNodes = d.Breaker.MinNodes
	}
	orDefault(&p.Breaker.Window, d.Breaker.Window)
	return p
}

func (s StepPolicy) withDefaults(d StepPolicy) StepPolicy {
	if s.MaxAttempts == 0 {
		s.MaxAttempts = d.MaxAttempts
	}
	orDefault(&s.Window, d.Window)
	orDefault(&s.Backoff, d.Backoff)
	orDefault(&s.Timeout, d.Timeout)
	return s
}

func orDefault(v *time.Duration, d time.Duration) {
	if *v == 0 {
		*v = d
	}
}

// Step returns the policy of step (the zero StepPolicy for maintenance).
func (p Policy) Step(s Step) StepPolicy {
	switch s {
	case StepRestartApp:
		return p.RestartApp
	case StepResetGPU:
		return p.ResetGPU
	case StepReloadDriver:
		return p.ReloadDriver
	case StepRebootNode:
		return p.RebootNode
	case StepPowerCycle:
		sp := p.PowerCycle
		sp.Disabled = sp.Disabled || !p.PowerCycleConfigured
		return sp
	}
	return StepPolicy{Disabled: true}
}

// longestWindow is the longest step window: attempts older than it no longer count.
func (p Policy) longestWindow() time.Duration {
	var w time.Duration
	for _, s := range Ladder {
		w = max(w, p.Step(s).Window)
	}
	return w
}
