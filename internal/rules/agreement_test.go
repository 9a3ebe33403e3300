package rules_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/rules"
)

// The threshold-agreement test: every threshold of the table, and every condition of the
// rule set, run through the acceptance engine (accept.Run) and through the health monitor
// (monitor.Monitor, one poll, thresholds set as the agent sets them), under the default and
// a custom policy. Acceptance's fail must be the monitor's unhealthy, warn its degraded,
// pass its healthy. Rates (correctedECCPerMinute, pcieReplaysPerMinute) need two readings
// and acceptance has one: internal/health's tests cover them.

var t0 = time.Date(2025, 5, 18, 19, 2, 39, 0, time.UTC)

// custom is a policy with every threshold away from its default.
func custom() rules.Thresholds {
	t := rules.DefaultThresholds()
	t.MaxRetiredPages, t.MaxCorrectableRemappedRows, t.MaxCorrectedECC = 30, 100, 50
	t.MaxPCIeReplays, t.MaxPowerPercent, t.MaxTemperatureC = 10, 80, 70
	return t
}

type agreeCase struct {
	name   string
	t      rules.Thresholds
	mutate func(d *gpu.Device)
	want   accept.Status // GPU 0's worst status over the rule set's checks
}

// boundary is three cases around a limit: just under and at it pass, just over it is over.
func boundary(policy string, t rules.Thresholds, what string, limit int, set func(d *gpu.Device, v int), over accept.Status) []agreeCase {
	var out []agreeCase
	for _, c := range []struct {
		v    int
		word string
		want accept.Status
	}{{limit - 1, "just under", accept.StatusPass}, {limit, "at", accept.StatusPass}, {limit + 1, "just over", over}} {
		verb := map[accept.Status]string{accept.StatusPass: "passes", accept.StatusWarn: "warns", accept.StatusFail: "fails"}[c.want]
		out = append(out, agreeCase{
			name: fmt.Sprintf("under the %s policy %d %s, %s the limit of %d, %s everywhere", policy, c.v, what, c.word, limit, verb),
			t:    t, mutate: func(d *gpu.Device) { set(d, c.v) }, want: c.want,
		})
	}
	return out
}

func thresholdCases() []agreeCase {
	var out []agreeCase
	for _, p := range []struct {
		name string
		t    rules.Thresholds
	}{{"default", rules.DefaultThresholds()}, {"custom", custom()}} {
		t := p.t
		out = append(out, boundary(p.name, t, "retired pages", t.MaxRetiredPages, func(d *gpu.Device, v int) { d.RetiredPages.SingleBit = v }, accept.StatusFail)...)
		out = append(out, boundary(p.name, t, "correctable remapped rows", t.MaxCorrectableRemappedRows, func(d *gpu.Device, v int) { d.RowRemap.Correctable = v }, accept.StatusWarn)...)
		out = append(out, boundary(p.name, t, "corrected ECC errors since the reset", int(t.MaxCorrectedECC), func(d *gpu.Device, v int) { d.ECC.VolatileCorrected = uint64(v) }, accept.StatusWarn)...)
		out = append(out, boundary(p.name, t, "PCIe replays since driver load", int(t.MaxPCIeReplays), func(d *gpu.Device, v int) { d.PCI.ReplayCounter = uint64(v) }, accept.StatusWarn)...)
		out = append(out, boundary(p.name, t, "percent of the power limit drawn by an idle GPU", t.MaxPowerPercent, func(d *gpu.Device, v int) {
			d.Power = gpu.Power{DrawW: float64(10 * v), LimitW: 1000, DefaultLimitW: 1000}
		}, accept.StatusWarn)...)
		// The temperature limit warns at the limit itself: its boundary is one degree lower.
		limit := t.MaxTemperatureC
		if limit == 0 {
			limit = 89 - 5 // the simulated H100's slowdown threshold minus 5 °C
		}
		out = append(out, boundary(p.name, t, "°C", limit-1, func(d *gpu.Device, v int) { d.Thermal.GPUC = v }, accept.StatusWarn)...)
	}
	return out
}

func conditionCases() []agreeCase {
	d := rules.DefaultThresholds()
	c := func(name string, mutate func(d *gpu.Device), want accept.Status) agreeCase {
		return agreeCase{name: name, t: d, mutate: mutate, want: want}
	}
	return []agreeCase{
		c("a healthy GPU passes everywhere", func(*gpu.Device) {}, accept.StatusPass),
		c("a GPU that fell off the bus fails everywhere", func(d *gpu.Device) { d.SetErr(gpu.FieldECCErrors, gpu.ErrGPULost) }, accept.StatusFail),
		c("one uncorrected ECC error since the reset (contained) warns everywhere", func(d *gpu.Device) { d.ECC.VolatileUncorrected = 1 }, accept.StatusWarn),
		c("a second uncorrected ECC error since the reset fails everywhere", func(d *gpu.Device) { d.ECC.VolatileUncorrected = 2 }, accept.StatusFail),
		c("uncorrected ECC errors in the GPU's lifetime only pass everywhere", func(d *gpu.Device) { d.ECC.AggregateUncorrected = 2 }, accept.StatusPass),
		c("a pending row remap fails everywhere", func(d *gpu.Device) { d.RowRemap.Pending = true }, accept.StatusFail),
		c("a failed row remap fails everywhere", func(d *gpu.Device) { d.RowRemap.Failure = true }, accept.StatusFail),
		c("a pending page retirement fails everywhere", func(d *gpu.Device) { d.RetiredPages.Pending = true }, accept.StatusFail),
		c("a power limit below the default warns everywhere", func(d *gpu.Device) { d.Power.LimitW = d.Power.DefaultLimitW - 100 }, accept.StatusWarn),
		c("a busy GPU near its power limit passes everywhere", func(d *gpu.Device) { d.Power.DrawW, d.ClockEvents = d.Power.LimitW, nil }, accept.StatusPass),
		c("a hardware slowdown warns everywhere", func(d *gpu.Device) { d.ClockEvents = []gpu.ClockEvent{gpu.ClockEventHWSlowdown} }, accept.StatusWarn),
		c("a narrower PCIe link fails everywhere", func(d *gpu.Device) { d.PCI.LinkWidth = 8 }, accept.StatusFail),
		c("a lower PCIe generation on a busy GPU warns everywhere", func(d *gpu.Device) { d.PCI.LinkGen, d.ClockEvents = 4, nil }, accept.StatusWarn),
		c("a lower PCIe generation on an idle GPU passes everywhere", func(d *gpu.Device) { d.PCI.LinkGen = 4 }, accept.StatusPass),
		c("a down NVLink fails everywhere", func(d *gpu.Device) { d.NVLinks[3].Active = false }, accept.StatusFail),
		c("an incomplete fabric registration fails everywhere", func(d *gpu.Device) { d.Fabric.State = "in-progress" }, accept.StatusFail),
		c("a fabric registration with an error fails everywhere", func(d *gpu.Device) { d.Fabric.Status = "NVML_ERROR_UNKNOWN" }, accept.StatusFail),
		c("the driver asking for a GPU reset fails everywhere", func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryGPUReset }, accept.StatusFail),
		c("the driver asking for a node reboot fails everywhere", func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryNodeReboot }, accept.StatusFail),
		c("the driver asking to drain peer-to-peer work fails everywhere", func(d *gpu.Device) { d.RecoveryAction = gpu.RecoveryDrainP2P }, accept.StatusFail),
		c("the driver asking for an action unknown here fails everywhere", func(d *gpu.Device) { d.RecoveryAction = "self-destruct" }, accept.StatusFail),
	}
}

func TestAcceptanceAndTheMonitorAgreeOnEveryThresholdAndCondition(t *testing.T) {
	cases := append(thresholdCases(), conditionCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := healthySnapshot(t)
			tc.mutate(&snap.Devices[0])
			status := acceptStatus(t, snap, tc.t)
			h := monitorHealth(t, snap, tc.t)
			if status != tc.want {
				t.Errorf("acceptance says %s, want %s", status, tc.want)
			}
			if want := agreeing(status); h != want {
				t.Errorf("acceptance says %s but the monitor says %s (want %s): the two engines disagree", status, h, want)
			}
		})
	}
}

// agreeing is the monitor's health that agrees with an acceptance status: the one mapping
// (rules.Level) seen from both ends.
func agreeing(s accept.Status) health.Health {
	for _, l := range []rules.Level{rules.OK, rules.Note, rules.Warn, rules.Fail} {
		if accept.StatusOf(l) == s {
			return health.HealthOf(l)
		}
	}
	return health.Healthy // skip: nothing judged
}

func TestTheLevelMapsToOneStatusAndOneHealth(t *testing.T) {
	cases := []struct {
		name   string
		level  rules.Level
		status accept.Status
		health health.Health
	}{
		{"nothing wrong passes and stays healthy", rules.OK, accept.StatusPass, health.Healthy},
		{"a note passes and stays healthy", rules.Note, accept.StatusPass, health.Healthy},
		{"a warning warns and degrades", rules.Warn, accept.StatusWarn, health.Degraded},
		{"a failure fails and makes the GPU unhealthy", rules.Fail, accept.StatusFail, health.Unhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if s, h := accept.StatusOf(tc.level), health.HealthOf(tc.level); s != tc.status || h != tc.health {
				t.Errorf("level %s maps to %s and %s, want %s and %s", tc.level, s, h, tc.status, tc.health)
			}
		})
	}
}

func healthySnapshot(t *testing.T) *gpu.Snapshot {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snap.Time = t0
	for i := range snap.Devices { // Hopper has no page retirement: make the field readable
		delete(snap.Devices[i].Errors, gpu.FieldRetiredPages)
	}
	return snap
}

// ruleChecks are the acceptance checks of the rule set.
func ruleChecks() []string {
	ids := []string{"hardware.gpu-responding"}
	for _, r := range rules.Rules() {
		ids = append(ids, r.Check)
	}
	return ids
}

// acceptStatus runs acceptance's hardware layer under thresholds th and returns GPU 0's
// worst status over the rule set's checks.
func acceptStatus(t *testing.T, snap *gpu.Snapshot, th rules.Thresholds) accept.Status {
	t.Helper()
	p := accept.DefaultPolicy()
	p.Layers, p.Thresholds = []accept.Layer{accept.LayerHardware}, th
	rep, err := accept.Run(context.Background(), &accept.Facts{Node: "node-1", GPU: snap}, &p, func() time.Time { return t0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	worst := accept.StatusPass
	for _, r := range rep.Results {
		if !slices.Contains(ruleChecks(), r.ID) {
			continue
		}
		for _, g := range r.GPUs {
			if g.Index == 0 && g.Status != accept.StatusSkip {
				worst = accept.Worse(worst, g.Status)
			}
		}
	}
	return worst
}

// monitorHealth is GPU 0's health after one poll of a monitor given thresholds th the way
// the agent gives them (SetThresholds).
func monitorHealth(t *testing.T, snap *gpu.Snapshot, th rules.Thresholds) health.Health {
	t.Helper()
	m, err := monitor.New(monitor.Config{Backend: fixed{snap}, NoEvents: true, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	m.SetThresholds(th)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run polls once, then sees the context ended
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range m.Health() {
		if g.Index == 0 {
			return g.Health
		}
	}
	t.Fatal("the monitor does not know GPU 0")
	return ""
}

// fixed is a backend whose snapshot never changes.
type fixed struct{ snap *gpu.Snapshot }

func (fixed) Name() string                                      { return "test" }
func (f fixed) Snapshot(context.Context) (*gpu.Snapshot, error) { return f.snap, nil }
func (fixed) Close() error                                      { return nil }

// A rule is one table entry; it is complete, and it is an acceptance check (the monitor
// judges every rule by itself: rules.Judge).
func TestEveryRuleIsCompleteAndAnAcceptanceCheck(t *testing.T) {
	checks := map[string]accept.Check{}
	for _, c := range accept.Checks([]accept.Layer{accept.LayerHardware}) {
		checks[c.ID] = c
	}
	seen := map[string]bool{}
	for _, r := range rules.Rules() {
		t.Run(r.Check+" is complete and an acceptance check", func(t *testing.T) {
			if r.Check == "" || r.Title == "" || r.Fix == "" || r.Judge == nil || r.Pass == nil || len(r.Fields) == 0 {
				t.Errorf("rule %+v lacks a check ID, title, fix, Judge, Pass or fields", r)
			}
			if seen[r.Check] {
				t.Errorf("two rules are check %s", r.Check)
			}
			seen[r.Check] = true
			c, ok := checks[r.Check]
			if !ok {
				t.Fatalf("no acceptance check %s: add it to internal/accept's hardware checks", r.Check)
			}
			if c.Title != r.Title || c.Fix != r.Fix {
				t.Errorf("acceptance's %s says %q / %q, the rule %q / %q", r.Check, c.Title, c.Fix, r.Title, r.Fix)
			}
		})
	}
}
