package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/xid"
)

// ClearedXIDs are the XIDs of one boot that recovery steps covered. The kernel log keeps an
// XID until the next boot, so the health monitor (which reads the log from boot at every
// start) and acceptance would otherwise judge the very XID a GPU reset cleared, again and
// again. Lines are counted, not just remembered: the same line logged again after the step
// is a new fault, and is judged.
type ClearedXIDs struct {
	// BootID is the boot the lines belong to; a set of another boot is forgotten.
	BootID string        `json:"bootID"`
	Lines  []ClearedLine `json:"lines"`
}

// ClearedLine says that the first N occurrences of Line in the boot's kernel log were
// covered by the recovery By names (e.g. "gpu-reset at 2026-01-02T03:04:05Z").
type ClearedLine struct {
	Line string `json:"line"`
	N    int    `json:"n"`
	By   string `json:"by"`
}

// ClearedStore keeps the cleared XIDs across agent restarts (FileCleared on the host).
type ClearedStore interface {
	// Load returns the saved set; ok is false when none is saved. An error means the
	// saved set is unusable.
	Load() (c ClearedXIDs, ok bool, err error)
	// Save replaces the saved set atomically.
	Save(c ClearedXIDs) error
}

// clearedSet is the agent's one cleared set: the health monitor and acceptance both ask
// covers, so they never disagree on what a recovery cleared. Safe for concurrent use.
type clearedSet struct {
	mu    sync.Mutex
	boot  string
	lines map[string]ClearedLine
}

// covers reports whether occurrence n (1 = the first) of line in boot's kernel log was
// cleared by a recovery step, and by which. A line of another boot is never covered.
func (s *clearedSet) covers(boot, line string, n int) (by string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if boot != s.boot {
		return "", false
	}
	c, marked := s.lines[line]
	if !marked || n > c.N {
		return "", false
	}
	return c.By, true
}

// reset forgets every line and starts boot's set.
func (s *clearedSet) reset(boot string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.boot, s.lines = boot, map[string]ClearedLine{}
}

// mark records lines as cleared in boot (a set of another boot is forgotten first): a
// line's count only grows, so marking the same lines twice changes nothing. It returns the
// whole set, to be saved.
func (s *clearedSet) mark(boot string, lines []ClearedLine) ClearedXIDs {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines == nil || boot != s.boot {
		s.boot, s.lines = boot, map[string]ClearedLine{}
	}
	for _, l := range lines {
		if l.N > s.lines[l.Line].N {
			s.lines[l.Line] = l
		}
	}
	return s.snapshotLocked()
}

// load replaces the set with c.
func (s *clearedSet) load(c ClearedXIDs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.boot, s.lines = c.BootID, map[string]ClearedLine{}
	for _, l := range c.Lines {
		s.lines[l.Line] = l
	}
}

func (s *clearedSet) snapshotLocked() ClearedXIDs {
	out := ClearedXIDs{BootID: s.boot, Lines: make([]ClearedLine, 0, len(s.lines))}
	for _, l := range s.lines {
		out.Lines = append(out.Lines, l)
	}
	slices.SortFunc(out.Lines, func(a, b ClearedLine) int {
		switch {
		case a.Line < b.Line:
			return -1
		case a.Line > b.Line:
			return 1
		}
		return 0
	})
	return out
}

// bootID is the running boot's ID ("" when the agent has no steps or cannot read it).
func (a *Agent) bootID(ctx context.Context) string {
	if a.cfg.Steps == nil {
		return ""
	}
	boot, err := a.cfg.Steps.BootID(ctx)
	if err != nil {
		return ""
	}
	return boot
}

// coveredBy reads the kernel log's XIDs now and returns those on uuids (nil: every GPU)
// whose catalog action a recovery of kind covers, counted per line.
func (a *Agent) coveredBy(ctx context.Context, uuids []string, kind health.RecoveryKind) ([]ClearedLine, error) {
	if a.cfg.XIDs == nil || kind == health.RecoveryNodeReboot {
		return nil, nil // a reboot starts a new kernel log: nothing of it is left to clear
	}
	evs, err := a.cfg.XIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel log after a recovery: %w", err)
	}
	byPCI := map[string]string{}
	if snap, err := a.cfg.Backend.Snapshot(ctx); err == nil {
		for _, d := range snap.Devices {
			byPCI[xid.NormalizeBusID(d.PCI.BusID)] = d.UUID
		}
	}
	by := fmt.Sprintf("%s at %s", kind, a.cfg.Clock().UTC().Format(time.RFC3339))
	counts := map[string]int{}
	var order []string
	for _, e := range evs {
		uuid := e.UUID
		if uuid == "" {
			uuid = byPCI[e.PCI]
		}
		entry, known := xid.Lookup(e.XID)
		if !known || !kind.Covers(entry.Action) || (uuids != nil && !slices.Contains(uuids, uuid)) {
			continue
		}
		if counts[e.Line] == 0 {
			order = append(order, e.Line)
		}
		counts[e.Line]++
	}
	out := make([]ClearedLine, 0, len(order))
	for _, l := range order {
		out = append(out, ClearedLine{Line: l, N: counts[l], By: by})
	}
	return out, nil
}

// clear marks lines cleared in the running boot (after a reboot: starts the new boot's set)
// and saves the set on the host. A save that fails is returned: the set is kept in memory,
// and a restarted agent judges those XIDs again.
func (a *Agent) clear(ctx context.Context, lines []ClearedLine, kind health.RecoveryKind) error {
	boot := a.bootID(ctx)
	if kind == health.RecoveryNodeReboot {
		a.cleared.reset(boot)
	}
	set := a.cleared.mark(boot, lines)
	if a.cfg.Cleared == nil {
		return nil
	}
	if err := a.cfg.Cleared.Save(set); err != nil {
		return fmt.Errorf("keeping the XIDs the recovery cleared: %w", err)
	}
	return nil
}

// loadCleared takes the set a previous agent process saved, when it is of the running
// boot. An unusable file is reported and replaced: every XID since boot is judged again
// (a fault is never forgotten; at worst one the recovery covered holds the node again).
func (a *Agent) loadCleared(ctx context.Context) {
	boot := a.bootID(ctx)
	a.cleared.reset(boot)
	if a.cfg.Cleared == nil {
		return
	}
	c, ok, err := a.cfg.Cleared.Load()
	switch {
	case err != nil:
		a.cfg.Log.Warn("the saved cleared XIDs are unusable; every XID since boot is judged again", "node", a.cfg.NodeName, "err", err)
		if err := a.cfg.Cleared.Save(ClearedXIDs{BootID: boot, Lines: []ClearedLine{}}); err != nil {
			a.cfg.Log.Warn("replacing the saved cleared XIDs failed", "node", a.cfg.NodeName, "err", err)
		}
	case !ok:
	case c.BootID != boot:
		a.cfg.Log.Info("the saved cleared XIDs are of an earlier boot; starting afresh", "node", a.cfg.NodeName, "saved", c.BootID, "boot", boot)
	default:
		kept := a.stillLogged(ctx, c)
		a.cleared.load(kept)
		a.cfg.Log.Info("took the XIDs recoveries cleared in this boot", "node", a.cfg.NodeName, "lines", len(kept.Lines),
			"dropped", len(c.Lines)-len(kept.Lines))
		if len(kept.Lines) != len(c.Lines) {
			if err := a.cfg.Cleared.Save(kept); err != nil {
				a.cfg.Log.Warn("keeping the cleared XIDs on the host failed; a restarted agent judges them again", "node", a.cfg.NodeName, "err", err)
			}
		}
	}
}

// stillLogged keeps the cleared lines the kernel log still holds at least as often as they
// were cleared. The log only ever loses lines (the ring buffer drops its oldest), so fewer
// means it lost some, or is not the log the set was made from (a simulated node restarted
// with a fresh log): which occurrences are left cannot be told, and they are judged again.
func (a *Agent) stillLogged(ctx context.Context, c ClearedXIDs) ClearedXIDs {
	if a.cfg.XIDs == nil {
		return c
	}
	evs, err := a.cfg.XIDs(ctx)
	if err != nil {
		return c // nothing can be judged from a log that cannot be read
	}
	counts := map[string]int{}
	for _, e := range evs {
		counts[e.Line]++
	}
	out := ClearedXIDs{BootID: c.BootID, Lines: make([]ClearedLine, 0, len(c.Lines))}
	for _, l := range c.Lines {
		if counts[l.Line] >= l.N {
			out.Lines = append(out.Lines, l)
		}
	}
	return out
}

// clearedKernelLine is the health monitor's question (monitor.Config.Cleared).
func (a *Agent) clearedKernelLine(boot, line string, n int) bool {
	if boot == "" {
		boot = a.cleared.bootOf()
	}
	_, ok := a.cleared.covers(boot, line, n)
	return ok
}

func (s *clearedSet) bootOf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.boot
}

// splitCleared moves the XIDs a recovery covered out of f.XIDs into f.ClearedXIDs: the
// first n occurrences of each marked line, in log order.
func (a *Agent) splitCleared(f *accept.Facts) {
	boot := a.cleared.bootOf()
	seen := map[string]int{}
	kept := f.XIDs[:0:0]
	for _, e := range f.XIDs {
		seen[e.Line]++
		if by, ok := a.cleared.covers(boot, e.Line, seen[e.Line]); ok {
			f.ClearedXIDs = append(f.ClearedXIDs, accept.ClearedXID{Event: e, By: by})
			continue
		}
		kept = append(kept, e)
	}
	f.XIDs = kept
}
