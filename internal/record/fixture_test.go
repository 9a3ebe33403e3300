package record

import (
	"context"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/xid"
)

// testStart is the fixed clock of every simulated run in these tests.
var testStart = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func fixedClock() time.Time { return testStart }

var testTool = buildinfo.Info{Version: "v0.0.0-test", Commit: "abc123", GoVersion: "go1.26", Platform: "linux/amd64"}

// simulatedInput runs acceptance with the default policy on a simulated node: the preset's
// GPUs with faults applied, the simulated host that matches them and their kernel log.
func simulatedInput(t *testing.T, preset string, faults ...sim.Fault) Input {
	t.Helper()
	ctx := context.Background()
	s, err := sim.PresetScenario(preset)
	if err != nil {
		t.Fatalf("preset %s: %v", preset, err)
	}
	s.Faults = faults
	b, err := sim.New(s, sim.WithClock(fixedClock))
	if err != nil {
		t.Fatalf("sim backend for %s: %v", preset, err)
	}
	snap, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatalf("sim snapshot: %v", err)
	}
	hr, err := simhost.Reader(snap.Devices, fixedClock)
	if err != nil {
		t.Fatalf("simulated host: %v", err)
	}
	f := &accept.Facts{Node: "gpu-node-07", GPU: snap}
	f.Host, f.HostErr = hr.Read(ctx, host.Options{}, host.GPURefs(snap.Devices))
	if f.HostErr != nil {
		t.Fatalf("simulated host facts: %v", f.HostErr)
	}
	var sc xid.Scanner
	for _, l := range b.KernelLog() {
		if ev, ok := sc.Line(l.Text); ok {
			f.XIDs = append(f.XIDs, ev)
		}
	}
	return runInput(t, f)
}

// runInput runs acceptance over facts with the default policy, changed by edits.
func runInput(t *testing.T, f *accept.Facts, edits ...func(*accept.Policy)) Input {
	t.Helper()
	pol := accept.DefaultPolicy()
	for _, e := range edits {
		e(&pol)
	}
	rep, err := accept.Run(context.Background(), f, &pol, fixedClock, nil)
	if err != nil {
		t.Fatalf("accept.Run: %v", err)
	}
	return Input{Report: rep, Facts: f, Tool: testTool,
		Policy: PolicyRef{Name: pol.Name, Source: "built-in", SHA256: "0123456789abcdef"}}
}
