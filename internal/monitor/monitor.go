// Package monitor is the node's health monitor: it runs every fault source (counters
// polled from the GPU backend, the backend's device events, the kernel log) into one
// flood-safe set of findings and one health state per GPU. The decisions are the pure
// functions of internal/health and internal/xid; this package is the wiring and owns the
// goroutines.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/rules"
	"github.com/gpunode/gpunode/internal/xid"
)

// KernelLine is one kernel-log line, or a report that lines were lost.
type KernelLine struct {
	// Time is when the line was logged (zero: unknown, the monitor uses its clock).
	Time time.Time
	Text string
	// Boot is the boot whose log the line is of ("": the running one). A new boot's log
	// starts over: the occurrences of each line are counted afresh.
	Boot string
	// Lost > 0 reports that many records lost before this point (ring-buffer overrun).
	Lost uint64
}

// KernelSource follows the kernel log, calling emit for each line until ctx ends.
type KernelSource func(ctx context.Context, emit func(KernelLine)) error

// Config wires the sources.
type Config struct {
	Backend gpu.Backend
	// Interval between counter polls (default 10 s).
	Interval time.Duration
	// Thresholds the rules judge by (default rules.DefaultThresholds); SetThresholds
	// replaces them while the monitor runs.
	Thresholds rules.Thresholds
	// Kernel follows the kernel log; nil = not followed.
	Kernel KernelSource
	// Events: watch the backend's device events when it has them (default true).
	NoEvents bool
	// Clock (default time.Now).
	Clock func() time.Time
	Log   *slog.Logger
	// OnFinding is called (outside the monitor's lock) for each finding as it is added;
	// isNew is false for a repeat that only bumped a count.
	OnFinding func(f health.Finding, isNew bool)
	// XIDOptions are the correlation windows.
	XIDOptions xid.Options
	// BootID reads the node's boot ID at each poll; a new one is a node reboot seen
	// (recovery.go). nil: not read (a real node's reboot restarts the process anyway).
	BootID func() string
	// OnRecovered is called (outside the monitor's lock) after a poll saw a recovery of
	// uuids and checked them (recovery.go).
	OnRecovered func(uuids []string, kind health.RecoveryKind)
	// Cleared reports whether occurrence n (1 = the first) of an XID line of boot's kernel
	// log was cleared by a recovery step: such a line is counted (Stats.ClearedXIDs), not
	// judged. The kernel log is read from boot at every start, so this is what keeps a
	// restarted monitor from finding again a fault that was already repaired. nil: none.
	Cleared func(boot, line string, n int) bool
}

// Monitor is one node's health monitor. Its read methods are safe while Run runs.
type Monitor struct {
	cfg        Config
	agg        *health.Aggregator
	thresholds atomic.Pointer[rules.Thresholds] // thresholds.go

	mu      sync.Mutex
	states  map[string]*gpuState // by UUID
	byPCI   map[string]gpuRef    // kernel-log address "0000:18:00" -> GPU
	prev    *gpu.Snapshot
	boot    string // the boot ID at the last poll (Config.BootID)
	scanner xid.Scanner
	windows map[string][]xid.Event // recent XIDs per PCI, for correlation
	occur   map[string]int         // occurrences of each XID line in the log's boot
	logBoot string                 // the boot of the last kernel-log line
	stats   Stats
}

type gpuRef struct {
	index int
	uuid  string
}

type gpuState struct {
	index int
	state health.State
}

// Stats count what the monitor saw.
type Stats struct {
	Polls         int    `json:"polls"`
	PollErrors    int    `json:"pollErrors"`
	Events        int    `json:"events"`
	KernelLines   int    `json:"kernelLines"`
	KernelLost    uint64 `json:"kernelLost"`
	XIDs          int    `json:"xids"`
	ClearedXIDs   int    `json:"clearedXIDs"`
	Consequences  int    `json:"consequences"`
	Findings      int    `json:"findings"`
	EventsWatched bool   `json:"eventsWatched"`
	KernelFollow  bool   `json:"kernelFollowed"`
}

// New checks the configuration.
func New(cfg Config) (*Monitor, error) {
	if cfg.Backend == nil {
		return nil, errors.New("monitor: no GPU backend")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if isZero(cfg.Thresholds) {
		cfg.Thresholds = rules.DefaultThresholds()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Log = cfg.Log.With("logger", "monitor") // under the agent's: logger=agent.monitor
	m := &Monitor{cfg: cfg, agg: health.NewAggregator(0), states: map[string]*gpuState{}, byPCI: map[string]gpuRef{}, windows: map[string][]xid.Event{}, occur: map[string]int{}}
	m.SetThresholds(cfg.Thresholds)
	return m, nil
}

// Run polls, watches and follows until ctx ends. A source that fails becomes a node-level
// finding; the others go on.
func (m *Monitor) Run(ctx context.Context) error {
	m.poll(ctx) // first snapshot: the GPUs and their addresses are known before any event
	var wg sync.WaitGroup
	if es, ok := m.cfg.Backend.(gpu.EventSource); ok && !m.cfg.NoEvents {
		wg.Add(1)
		go func() { defer wg.Done(); m.watch(ctx, es) }()
	}
	if m.cfg.Kernel != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.follow(ctx) }()
	}
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
			m.poll(ctx)
		}
	}
}

func (m *Monitor) poll(ctx context.Context) {
	snap, err := m.cfg.Backend.Snapshot(ctx)
	now := m.cfg.Clock()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		m.stats.PollErrors++
		m.mu.Unlock()
		m.add(health.Finding{GPUIndex: -1, Component: fault.ComponentDriver, Severity: fault.SeverityCritical,
			Action: fault.ActionReloadDriver, Source: health.SourceCounter, Cause: "driver-unavailable",
			Summary: "the GPU backend cannot be read: " + err.Error(), FirstSeen: now, LastSeen: now})
		return
	}
	rebooted := false
	if m.cfg.BootID != nil {
		id := m.cfg.BootID()
		m.mu.Lock()
		rebooted = m.boot != "" && id != m.boot
		m.boot = id
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.stats.Polls++
	prev := m.prev
	m.prev = snap
	for _, d := range snap.Devices {
		m.byPCI[xid.NormalizeBusID(d.PCI.BusID)] = gpuRef{index: d.Index, uuid: d.UUID}
		if _, ok := m.states[d.UUID]; !ok && d.UUID != "" {
			m.states[d.UUID] = &gpuState{index: d.Index, state: health.NewState(now)}
		}
	}
	m.mu.Unlock()
	findings := health.FromSnapshot(prev, snap, m.counters())
	for _, f := range findings {
		m.add(f)
	}
	m.observeRecoveries(prev, snap, rebooted, findings)
}

func (m *Monitor) watch(ctx context.Context, es gpu.EventSource) {
	ch, err := es.Watch(ctx)
	if err != nil {
		m.cfg.Log.Info("device events not watched", "err", err)
		return
	}
	m.mu.Lock()
	m.stats.EventsWatched = true
	m.mu.Unlock()
	for ev := range ch {
		m.mu.Lock()
		m.stats.Events++
		m.mu.Unlock()
		m.add(health.FromEvent(ev, lookupXID))
	}
}

// lookupXID adapts the XID catalog to the health package.
func lookupXID(code int) (fault.Component, fault.Severity, fault.Action, bool) {
	e, ok := xid.Lookup(code)
	return e.Component, e.Severity, e.Action, ok
}

// add records a finding and moves its GPU's health.
func (m *Monitor) add(f health.Finding) {
	isNew := m.agg.Add(f)
	m.mu.Lock()
	m.stats.Findings++
	if s, ok := m.states[f.GPU]; ok && f.GPU != "" {
		s.state = health.Next(s.state, f, m.cfg.Clock())
	}
	m.mu.Unlock()
	if m.cfg.OnFinding != nil {
		m.cfg.OnFinding(f, isNew)
	}
}

// Findings returns the deduplicated findings.
func (m *Monitor) Findings() []health.Finding { return m.agg.Findings() }

// GPUHealth is one GPU's state.
type GPUHealth struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	health.State
}

// Health returns every GPU's state, by index.
func (m *Monitor) Health() []GPUHealth {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]GPUHealth, 0, len(m.states))
	for uuid, s := range m.states {
		out = append(out, GPUHealth{Index: s.index, UUID: uuid, State: s.state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Stats returns the counts so far.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Apply feeds a recovery or a check result to a GPU's state machine.
func (m *Monitor) Apply(uuid string, in health.Input) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[uuid]
	if !ok {
		return fmt.Errorf("no GPU %s on this node", uuid)
	}
	s.state = health.Next(s.state, in, m.cfg.Clock())
	if s.state.Health == health.Healthy {
		m.agg.Clear(uuid)
	}
	return nil
}
