package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/rules"
)

// A recovery reaches a GPU's health in two steps, whoever carried it out: Recovered (the
// GPU was reset, the node rebooted), then the per-GPU check (a fresh snapshot judged by the
// health rules: CheckPassed or CheckFailed). The agent records the steps it carries out
// itself (Recovered, Check); the monitor also sees a recovery in its own polls (a reset by
// a person, or by a process it does not know of, and every one in a standalone exporter),
// from what the GPU port can observe:
//   - a new boot ID (Config.BootID): every GPU, a node reboot;
//   - a GPU that was lost answers again;
//   - its volatile ECC counters went down (they restart with every reset);
//   - its pending row remap was carried out (only a reset does that);
//   - the driver's recovery action went back to none.
//
// An XID that leaves none of these traces (a GSP timeout alone) cannot be seen to recover:
// its GPU stays as it is until the agent records a recovery or the process restarts.

// recoverySeen is a recovery one poll observed on one GPU.
type recoverySeen struct {
	UUID string
	Kind health.RecoveryKind
	// Why is what showed it, for the log.
	Why string
}

// recoveriesSeen compares two consecutive snapshots (rebooted: the boot ID changed between
// them) and returns the recoveries they show, by GPU index.
func recoveriesSeen(prev, cur *gpu.Snapshot, rebooted bool) []recoverySeen {
	if prev == nil || cur == nil {
		return nil
	}
	var out []recoverySeen
	for i := range cur.Devices {
		d := &cur.Devices[i]
		if d.UUID == "" {
			continue
		}
		if rebooted {
			out = append(out, recoverySeen{UUID: d.UUID, Kind: health.RecoveryNodeReboot, Why: "the node's boot ID changed"})
			continue
		}
		j := slices.IndexFunc(prev.Devices, func(p gpu.Device) bool { return p.UUID == d.UUID })
		if j < 0 {
			continue
		}
		if why := resetTrace(&prev.Devices[j], d); why != "" {
			out = append(out, recoverySeen{UUID: d.UUID, Kind: health.RecoveryGPUReset, Why: why})
		}
	}
	return out
}

// resetTrace is what in two readings of one GPU shows a reset between them ("" when nothing).
func resetTrace(was, now *gpu.Device) string {
	if now.Unreachable() != nil {
		return ""
	}
	if was.Unreachable() != nil {
		return "the GPU answers again"
	}
	readable := func(f gpu.Field) bool { return was.Err(f) == nil && now.Err(f) == nil }
	switch {
	case readable(gpu.FieldECCErrors) && (now.ECC.VolatileUncorrected < was.ECC.VolatileUncorrected ||
		now.ECC.VolatileCorrected < was.ECC.VolatileCorrected):
		return fmt.Sprintf("its volatile ECC counters restarted (uncorrected %d -> %d, corrected %d -> %d)",
			was.ECC.VolatileUncorrected, now.ECC.VolatileUncorrected, was.ECC.VolatileCorrected, now.ECC.VolatileCorrected)
	case readable(gpu.FieldRowRemap) && was.RowRemap.Pending && !now.RowRemap.Pending:
		return "its pending row remap was carried out"
	case readable(gpu.FieldRecoveryAction) && was.RecoveryAction != gpu.RecoveryNone && was.RecoveryAction != "" &&
		now.RecoveryAction == gpu.RecoveryNone:
		return fmt.Sprintf("the driver's recovery action went from %s back to none", was.RecoveryAction)
	}
	return ""
}

// checkInputs is the per-GPU check: a GPU of uuids (nil: every GPU of states) with a
// finding that makes it unhealthy fails with that finding's cause and action; the others
// pass. findings are the health rules' verdict on a fresh snapshot.
func checkInputs(findings []health.Finding, uuids []string) map[string]health.Input {
	failed := map[string]health.Finding{}
	for _, f := range findings {
		if _, seen := failed[f.GPU]; !seen && f.Unhealthy() {
			failed[f.GPU] = f
		}
	}
	out := make(map[string]health.Input, len(uuids))
	for _, u := range uuids {
		var in health.Input = health.CheckPassed{}
		if f, bad := failed[u]; bad {
			in = health.CheckFailed{Check: f.Cause, Action: f.Action}
		}
		out[u] = in
	}
	return out
}

// CheckResult counts the GPUs a check judged, by their health after it (a passing check
// does not clear a GPU whose required action the recovery did not cover).
type CheckResult struct {
	Healthy, Unhealthy int
}

func (r CheckResult) String() string {
	return fmt.Sprintf("%d healthy, %d still unhealthy", r.Healthy, r.Unhealthy)
}

// Recovered records that a recovery of kind was carried out on uuids (nil: every GPU): a GPU
// whose required action it covers then awaits its check (Check).
func (m *Monitor) Recovered(uuids []string, kind health.RecoveryKind) error {
	var errs []error
	for _, u := range m.gpusOrAll(uuids) {
		errs = append(errs, m.Apply(u, health.Recovered{Kind: kind}))
	}
	return errors.Join(errs...)
}

// Check is the per-GPU check after a recovery of uuids (nil: every GPU): a fresh snapshot
// judged against pre (the snapshot before the step; nil after a reboot) by the health rules.
func (m *Monitor) Check(ctx context.Context, pre *gpu.Snapshot, uuids []string) (CheckResult, error) {
	cur, err := m.cfg.Backend.Snapshot(ctx)
	if err != nil {
		return CheckResult{}, fmt.Errorf("checking the GPUs: %w", err)
	}
	return m.applyCheck(health.FromSnapshot(pre, cur, m.counters()), m.gpusOrAll(uuids))
}

// applyCheck feeds the check of findings to the GPUs uuids and counts the result.
func (m *Monitor) applyCheck(findings []health.Finding, uuids []string) (CheckResult, error) {
	var errs []error
	for u, in := range checkInputs(findings, uuids) {
		errs = append(errs, m.Apply(u, in))
	}
	var r CheckResult
	for _, g := range m.Health() {
		switch {
		case !slices.Contains(uuids, g.UUID):
		case g.Health == health.Unhealthy:
			r.Unhealthy++
		default:
			r.Healthy++
		}
	}
	return r, errors.Join(errs...)
}

// gpusOrAll is uuids, or every GPU the monitor knows when nil.
func (m *Monitor) gpusOrAll(uuids []string) []string {
	if uuids != nil {
		return uuids
	}
	var out []string
	for _, g := range m.Health() {
		out = append(out, g.UUID)
	}
	return out
}

// observeRecoveries records what one poll showed of recoveries (recoveriesSeen) and checks
// the GPUs at once, with the poll's own findings (a reboot's: judged from the boot on).
func (m *Monitor) observeRecoveries(prev, cur *gpu.Snapshot, rebooted bool, findings []health.Finding) {
	seen := recoveriesSeen(prev, cur, rebooted)
	if len(seen) == 0 {
		return
	}
	if rebooted {
		findings = health.FromSnapshot(nil, cur, m.counters())
	}
	var uuids []string
	for _, r := range seen {
		if s, ok := m.stateOf(r.UUID); !ok || s.Health == health.Healthy {
			continue // nothing to recover from: a reset of a healthy GPU changes nothing
		}
		if err := m.Apply(r.UUID, health.Recovered{Kind: r.Kind}); err != nil {
			continue
		}
		m.cfg.Log.Info("recovery seen", "gpu", r.UUID, "kind", string(r.Kind), "why", r.Why)
		uuids = append(uuids, r.UUID)
	}
	if len(uuids) == 0 {
		return
	}
	res, err := m.applyCheck(findings, uuids)
	if err != nil {
		m.cfg.Log.Warn("checking the GPUs after a recovery failed", "err", err)
	}
	m.cfg.Log.Info("GPUs checked after a recovery", "healthy", res.Healthy, "unhealthy", res.Unhealthy)
	if m.cfg.OnRecovered != nil {
		m.cfg.OnRecovered(uuids, seen[0].Kind)
	}
}

// stateOf is one GPU's state.
func (m *Monitor) stateOf(uuid string) (health.State, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[uuid]
	if !ok {
		return health.State{}, false
	}
	return s.state, true
}

// counters is the counter policy the monitor judges snapshots by.
func (m *Monitor) counters() rules.Thresholds { return *m.thresholds.Load() }
