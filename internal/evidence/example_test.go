package evidence_test

import (
	"context"
	"fmt"
	"os"
	"testing/fstest"
	"time"

	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
)

// The agent, on a fault that needs a reset: collect, write, then report the summary.
func Example() {
	clock := func() time.Time { return time.Date(2026, 11, 29, 18, 0, 3, 0, time.UTC) }
	scenario, _ := sim.PresetScenario("h100x8")
	backend, _ := sim.New(scenario, sim.WithClock(clock))
	kernel := records{{Time: clock().Add(-2 * time.Second), Level: 3,
		Text: "NVRM: Xid (PCI:0000:18:00): 48, pid=1234, An uncorrectable double bit error (DBE) has been detected on GPU"}}
	trigger := health.Finding{GPU: "GPU-0", GPUIndex: 0, Component: fault.ComponentMemory, Severity: fault.SeverityCritical,
		Action: fault.ActionResetGPU, Source: health.SourceKmsg, Cause: health.XIDCause(48), FirstSeen: clock().Add(-2 * time.Second)}
	c := evidence.Collector{
		Node:    evidence.NodeFacts{Node: "gpu-node-07", Agent: "v0.1.0"},
		Root:    fstest.MapFS{"proc/sys/kernel/random/boot_id": {Data: []byte("0f5c3c1e-8b52-4f57-9d2e-6f0e4f1a9b11\n")}},
		Backend: backend, Kernel: kernel, Clock: clock,
	}
	dir, _ := os.MkdirTemp("", "evidence")
	defer func() { _ = os.RemoveAll(dir) }()
	store := &evidence.Store{Dir: dir}
	sum, err := store.Write(context.Background(), c.Collect(context.Background(), trigger))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = evidence.Verify(sum.Path)
	fmt.Println("trigger:", sum.Trigger, "on", sum.TriggerGPU)
	fmt.Printf("counts: %+v\n", sum.Counts)
	fmt.Println("failed sources:", sum.Counts.Errors, "(kernel release and hostname were not in the host root)")
	fmt.Println("verified:", err == nil)
	// Output:
	// trigger: xid-48 on GPU-0
	// counts: {KernelRecords:1 Snapshots:1 Findings:1 Pods:0 Errors:2 Dropped:0}
	// failed sources: 2 (kernel release and hostname were not in the host root)
	// verified: true
}

// records is a kernel log of fixed records (the agent reads /dev/kmsg: evidence.KmsgDevice).
type records []evidence.KernelRecord

func (r records) Records(_ context.Context, w evidence.Window) ([]evidence.KernelRecord, error) {
	var out []evidence.KernelRecord
	for _, rec := range r {
		if w.Contains(rec.Time) {
			out = append(out, rec)
		}
	}
	return out, nil
}
