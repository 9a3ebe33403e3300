package monitor

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/xid"
)

// maxWindow is how many recent XIDs per device are kept for correlation.
const maxWindow = 32

func (m *Monitor) follow(ctx context.Context) {
	m.mu.Lock()
	m.stats.KernelFollow = true
	m.mu.Unlock()
	err := m.cfg.Kernel(ctx, m.kernelLine)
	if err != nil && ctx.Err() == nil {
		now := m.cfg.Clock()
		m.add(health.Finding{GPUIndex: -1, Component: fault.ComponentNode, Severity: fault.SeverityWarning, Action: fault.ActionNone,
			Source: health.SourceKmsg, Cause: "kernel-log-unavailable", Summary: "the kernel log cannot be followed: " + err.Error(),
			FirstSeen: now, LastSeen: now})
	}
}

// kernelLine turns one kernel-log line into findings: XIDs (correlated with the same
// device's recent XIDs; consequences are counted, not reported; those a recovery cleared
// are counted, not judged) and lost-record gaps.
func (m *Monitor) kernelLine(l KernelLine) {
	now := l.Time
	if now.IsZero() {
		now = m.cfg.Clock()
	}
	if l.Lost > 0 {
		m.mu.Lock()
		m.stats.KernelLost += l.Lost
		m.mu.Unlock()
		m.add(health.Finding{GPUIndex: -1, Component: fault.ComponentNode, Severity: fault.SeverityWarning, Action: fault.ActionNone,
			Source: health.SourceKmsg, Cause: "kernel-log-overrun", Summary: fmt.Sprintf("%d kernel-log records were lost before they could be read", l.Lost),
			FirstSeen: now, LastSeen: now, Count: 1})
		return
	}
	m.mu.Lock()
	m.stats.KernelLines++
	if l.Boot != m.logBoot { // a new boot's log: its lines are counted afresh
		m.logBoot, m.occur, m.windows = l.Boot, map[string]int{}, map[string][]xid.Event{}
	}
	ev, ok := m.scanner.Line(l.Text)
	if !ok {
		m.mu.Unlock()
		return
	}
	m.occur[ev.Line]++
	if m.cfg.Cleared != nil && m.cfg.Cleared(l.Boot, ev.Line, m.occur[ev.Line]) {
		m.stats.ClearedXIDs++
		m.mu.Unlock()
		return
	}
	// The driver's separate "fallen off the bus" line repeats the XID 79 line before it.
	if ev.Derived && repeats(m.windows[ev.PCI], ev) {
		m.stats.Consequences++
		m.mu.Unlock()
		return
	}
	m.stats.XIDs++
	win := append(m.windows[ev.PCI], ev)
	if len(win) > maxWindow {
		win = win[len(win)-maxWindow:]
	}
	m.windows[ev.PCI] = win
	d := xid.Decode(win, m.cfg.XIDOptions)[len(win)-1]
	ref, known := m.byPCI[ev.PCI]
	if d.Consequence {
		m.stats.Consequences++
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	f := health.FromXID(d, now)
	f.Evidence = []string{l.Text}
	switch {
	case known:
		f.GPU, f.GPUIndex = ref.uuid, ref.index
	case ev.UUID != "":
		f.GPU = ev.UUID
	}
	m.add(f)
}

// repeats reports whether a derived event repeats a reported one of the same code.
func repeats(win []xid.Event, ev xid.Event) bool {
	for _, w := range win {
		if !w.Derived && w.XID == ev.XID {
			return true
		}
	}
	return false
}
