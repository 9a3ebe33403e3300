package evidence

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/monitor"
)

// eventAt is when the fixture's fault happened; the bundle is captured 3 s later.
var eventAt = time.Date(2026, 11, 29, 18, 0, 0, 123456789, time.UTC)

func fixedClock() time.Time { return eventAt.Add(3 * time.Second) }

// simSnapshot is a full snapshot of a simulated 8-GPU H100 node.
func simSnapshot(t testing.TB) gpu.Snapshot {
	t.Helper()
	s, err := sim.PresetScenario("h100x8")
	if err != nil {
		t.Fatalf("preset h100x8: %v", err)
	}
	b, err := sim.New(s, sim.WithClock(fixedClock))
	if err != nil {
		t.Fatalf("sim backend: %v", err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("sim snapshot: %v", err)
	}
	return *snap
}

// xid79 is the trigger of the fixture: GPU 3 fell off the bus.
func xid79(uuid string) health.Finding {
	return health.Finding{GPU: uuid, GPUIndex: 3, Component: fault.ComponentGPU, Severity: fault.SeverityFatal,
		Action: fault.ActionRebootNode, Source: health.SourceKmsg, Cause: health.XIDCause(79),
		Summary: "GPU has fallen off the bus", FirstSeen: eventAt, LastSeen: eventAt, Count: 1,
		Evidence: []string{"NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."}}
}

// kernelLines are n records one second apart, centred on eventAt.
func kernelLines(n int) []KernelRecord {
	out := make([]KernelRecord, n)
	for i := range out {
		out[i] = KernelRecord{Time: eventAt.Add(time.Duration(i-n/2) * time.Second), Seq: uint64(1000 + i), Level: 4,
			Text: fmt.Sprintf("NVRM: line %d of the window", i)}
	}
	return out
}

// fixture is a realistic bundle's contents.
func fixture(t testing.TB) Contents {
	t.Helper()
	snap := simSnapshot(t)
	uuid := snap.Devices[3].UUID
	trig := xid79(uuid)
	warn := health.Finding{GPU: snap.Devices[1].UUID, GPUIndex: 1, Component: fault.ComponentPCIe, Severity: fault.SeverityWarning,
		Action: fault.ActionNone, Source: health.SourceCounter, Cause: health.CausePCIeReplayRate, Summary: "replays",
		FirstSeen: eventAt.Add(-time.Hour), LastSeen: eventAt, Count: 3}
	return Contents{
		Created: fixedClock(),
		Node: NodeFacts{Node: "gpu-node-07", Hostname: "gpu-node-07", BootID: "0f5c3c1e-8b52-4f57-9d2e-6f0e4f1a9b11",
			Kernel: "6.8.0-49-generic", DriverVersion: snap.Driver.Version, CUDAVersion: snap.Driver.CUDAVersion, Backend: "sim", Agent: "test"},
		Trigger:   trig,
		Findings:  []health.Finding{trig, warn},
		Window:    Window{At: eventAt, Before: 10 * time.Minute, After: 3 * time.Second},
		Kernel:    kernelLines(20),
		Snapshots: []gpu.Snapshot{snap},
		Pods: []PodOnGPU{
			{GPU: uuid, Namespace: "train", Name: "llama-0", Container: "trainer"},
			{GPU: uuid, Namespace: "infer", Name: "vllm-7", Container: "server"},
		},
		Health: &HealthState{GPUs: []monitor.GPUHealth{{Index: 3, UUID: uuid, State: health.State{Health: health.Unhealthy}}},
			Stats: monitor.Stats{Polls: 12, XIDs: 1, Findings: 2}},
		Errors: map[string]string{"pods": "pod-resources socket: connection refused"},
	}
}

// kernelLog is a KernelSource of fixed records, as the agent's follower would hand them.
type kernelLog []KernelRecord

func (k kernelLog) Records(ctx context.Context, w Window) ([]KernelRecord, error) {
	var out []KernelRecord
	for _, r := range k {
		if w.Contains(r.Time) {
			out = append(out, r)
		}
	}
	return out, ctx.Err()
}

// open verifies the bundle at path and returns its files.
func open(t *testing.T, path string) Bundle {
	t.Helper()
	if _, err := Verify(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b, err := ReadBundle(f, true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
