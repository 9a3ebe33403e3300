package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/xid"
)

// clearedXIDs remembers the XIDs since boot that a recovery step covered: the acceptance
// run after a GPU reset must not fail on the very XID the reset cleared (it stays in the
// kernel log until the next boot). Lines are counted, not just remembered: the same line
// logged again after the step is a new fault, and is judged.
type clearedXIDs struct {
	lines map[string]clearedLine
	boot  string
}

type clearedLine struct {
	n  int
	by string
}

// noteRecovery reads the kernel log's XIDs now and marks those on uuids (nil: every GPU)
// whose catalog action the recovery covers. A reboot starts a new kernel log: what was
// marked before is forgotten.
func (a *Agent) noteRecovery(ctx context.Context, uuids []string, kind health.RecoveryKind) {
	if a.cfg.XIDs == nil {
		return
	}
	boot := ""
	if a.cfg.Steps != nil {
		boot, _ = a.cfg.Steps.BootID(ctx)
	}
	if a.cleared.lines == nil || boot != a.cleared.boot || kind == health.RecoveryNodeReboot {
		a.cleared = clearedXIDs{lines: map[string]clearedLine{}, boot: boot}
	}
	evs, err := a.cfg.XIDs(ctx)
	if err != nil {
		a.cfg.Log.Warn("reading the kernel log after a recovery failed; its XIDs will be judged", "node", a.cfg.NodeName, "err", err)
		return
	}
	byPCI := map[string]string{}
	if snap, err := a.cfg.Backend.Snapshot(ctx); err == nil {
		for _, d := range snap.Devices {
			byPCI[xid.NormalizeBusID(d.PCI.BusID)] = d.UUID
		}
	}
	by := fmt.Sprintf("%s at %s", kind, a.cfg.Clock().UTC().Format(time.RFC3339))
	counts := map[string]int{}
	for _, e := range evs {
		uuid := e.UUID
		if uuid == "" {
			uuid = byPCI[e.PCI]
		}
		entry, known := xid.Lookup(e.XID)
		if !known || !kind.Covers(entry.Action) || (uuids != nil && !slices.Contains(uuids, uuid)) {
			continue
		}
		counts[e.Line]++
		a.cleared.lines[e.Line] = clearedLine{n: counts[e.Line], by: by}
	}
}

// splitCleared moves the XIDs a recovery covered out of f.XIDs into f.ClearedXIDs: the
// first n occurrences of each marked line, in log order.
func (a *Agent) splitCleared(f *accept.Facts) {
	if len(a.cleared.lines) == 0 || len(f.XIDs) == 0 {
		return
	}
	seen := map[string]int{}
	kept := f.XIDs[:0:0]
	for _, e := range f.XIDs {
		c, marked := a.cleared.lines[e.Line]
		if marked && seen[e.Line] < c.n {
			seen[e.Line]++
			f.ClearedXIDs = append(f.ClearedXIDs, accept.ClearedXID{Event: e, By: c.by})
			continue
		}
		kept = append(kept, e)
	}
	f.XIDs = kept
}
