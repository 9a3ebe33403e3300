package metrics

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// at is the fixed time of every test scrape.
var at = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return at }

// faultyH100 is an h100x8 node whose faults happened at its start: GPU 2 fell off the bus,
// GPU 5 lost NVLink 7, GPU 1 corrected 3 ECC errors, GPU 3 has a row pending remap and
// GPU 4's driver asks for a reboot.
const faultyH100 = `apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - {at: 0s, gpu: 2, type: xid, xid: 79}
  - {at: 0s, gpu: 5, type: nvlink-down, links: [7]}
  - {at: 0s, gpu: 1, type: ecc-corrected, count: 3}
  - {at: 0s, gpu: 3, type: row-remap-pending}
  - {at: 0s, gpu: 4, type: recovery-action, action: node-reboot}
`

// simBackend is a simulated node (a preset name, or a scenario's YAML) whose clock stands
// still, so its telemetry is the same at every scrape.
func simBackend(t testing.TB, presetOrYAML string) *sim.Backend {
	t.Helper()
	var (
		b   *sim.Backend
		err error
	)
	if strings.HasPrefix(presetOrYAML, "apiVersion:") {
		var s *sim.Scenario
		if s, err = sim.Parse("scenario.yaml", []byte(presetOrYAML)); err == nil {
			b, err = sim.New(s, sim.WithClock(fixedClock))
		}
	} else {
		b, err = sim.Load(presetOrYAML, sim.WithClock(fixedClock))
	}
	if err != nil {
		t.Fatalf("simulated node: %v", err)
	}
	return b
}

// fakeHealth is a monitor's state: GPU 2 unhealthy after an XID 79, GPU 5 degraded.
type fakeHealth struct {
	gpus     []monitor.GPUHealth
	findings []health.Finding
}

func newFakeHealth(s *gpu.Snapshot) *fakeHealth {
	h := &fakeHealth{}
	for _, d := range s.Devices {
		st := health.NewState(at)
		switch d.Index {
		case 2:
			st.Health, st.Action, st.Causes = health.Unhealthy, fault.ActionRebootNode, []string{"gpu-lost", "xid-79"}
		case 5:
			st.Health, st.Action, st.Causes = health.Degraded, fault.ActionDrainP2P, []string{"nvlink-down-7"}
		}
		h.gpus = append(h.gpus, monitor.GPUHealth{Index: d.Index, UUID: d.UUID, State: st})
	}
	h.findings = []health.Finding{
		{GPU: s.Devices[2].UUID, GPUIndex: 2, Component: fault.ComponentGPU, Severity: fault.SeverityFatal, Cause: "xid-79"},
		{GPU: s.Devices[2].UUID, GPUIndex: 2, Component: fault.ComponentGPU, Severity: fault.SeverityFatal, Cause: "gpu-lost"},
		{GPU: s.Devices[5].UUID, GPUIndex: 5, Component: fault.ComponentInterconnect, Severity: fault.SeverityWarning, Cause: "nvlink-down-7"},
	}
	return h
}

func (h *fakeHealth) Health() []monitor.GPUHealth { return h.gpus }
func (h *fakeHealth) Findings() []health.Finding  { return h.findings }
func (h *fakeHealth) snapshotUUID(i int) string   { return h.gpus[i].UUID }
func (h *fakeHealth) xidFinding(i, code int, src health.Source) health.Finding {
	return health.Finding{GPU: h.snapshotUUID(i), GPUIndex: i, Cause: health.XIDCause(code), Source: src, Count: 1}
}

// fakePods attributes GPUs by UUID.
type fakePods map[string][]Pod

func (p fakePods) PodsFor(uuid string) []Pod { return p[uuid] }

// brokenTelemetry cannot answer at all.
type brokenTelemetry struct{}

func (brokenTelemetry) Telemetry(context.Context) (*gpu.Telemetry, error) {
	return nil, errors.New("nvml telemetry: counting devices: ERROR_UNKNOWN")
}

// editedTelemetry changes what another source reports.
type editedTelemetry struct {
	src  gpu.TelemetrySource
	edit func(*gpu.Telemetry)
}

func (e editedTelemetry) Telemetry(ctx context.Context) (*gpu.Telemetry, error) {
	t, err := e.src.Telemetry(ctx)
	if err == nil {
		e.edit(t)
	}
	return t, err
}

// records is a records folder with a passed run, a newer failed one, and a JSON file that
// is not a record (newest of all).
func records() fstest.MapFS {
	rec := func(result string, finished time.Time) []byte {
		return []byte(`{"apiVersion":"gpunode.dev/record/v1","kind":"AcceptanceRecord","id":"x","result":"` + result +
			`","finishedAt":"` + finished.Format(time.RFC3339) + `"}`)
	}
	return fstest.MapFS{
		".":               {Mode: fs.ModeDir | 0o755, ModTime: at},
		"node-a-old.json": {Data: rec("passed", at.Add(-2*time.Hour)), ModTime: at.Add(-2 * time.Hour)},
		"node-a-new.json": {Data: rec("failed", at.Add(-time.Hour)), ModTime: at.Add(-time.Hour)},
		"node-a-new.md":   {Data: []byte("# record"), ModTime: at},
		"unrelated.json":  {Data: []byte(`{"kind":"Other"}`), ModTime: at},
	}
}

// fullExporter is an exporter with every collector, over the simulated preset.
func fullExporter(t testing.TB, preset string, tel gpu.TelemetrySource) (*Exporter, *XIDCounter, *fakeHealth) {
	t.Helper()
	b := simBackend(t, preset)
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if tel == nil {
		tel = b
	}
	h := newFakeHealth(snap)
	xids := NewXIDCounter()
	xids.Observe(h.xidFinding(2, 79, health.SourceKmsg), true)
	xids.Observe(h.xidFinding(2, 79, health.SourceNVMLEvent), false)
	e, err := New(Options{
		Telemetry: tel, Inventory: b, Hostname: "node-a", Health: h, XIDs: xids, Records: records(),
		Pods:  fakePods{snap.Devices[0].UUID: {{Namespace: "ml", Name: "train-0", Container: "trainer"}}},
		Clock: fixedClock,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e, xids, h
}

// gather collects one scrape of c into metric families.
func gather(t testing.TB, c prometheus.Collector) map[string]int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}
