package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpunode/gpunode/internal/evidence"
	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
)

// writeBundle writes the evidence bundle the agent would for an XID 48 on GPU 0.
func writeBundle(t *testing.T, dir string) evidence.Summary {
	t.Helper()
	clock := func() time.Time { return time.Date(2026, 11, 29, 18, 0, 3, 0, time.UTC) }
	scenario, err := sim.PresetScenario("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	backend, err := sim.New(scenario, sim.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	trigger := health.Finding{GPU: "GPU-0", GPUIndex: 0, Component: fault.ComponentMemory, Severity: fault.SeverityCritical,
		Action: fault.ActionResetGPU, Source: health.SourceKmsg, Cause: health.XIDCause(48), FirstSeen: clock()}
	c := evidence.Collector{Node: evidence.NodeFacts{Node: "gpu-node-07"}, Backend: backend, Clock: clock,
		Root: fstest.MapFS{"proc/sys/kernel/random/boot_id": {Data: []byte("0f5c3c1e-8b52-4f57-9d2e-6f0e4f1a9b11\n")}}}
	sum, err := (&evidence.Store{Dir: dir}).Write(context.Background(), c.Collect(context.Background(), trigger))
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestEvidenceVerify(t *testing.T) {
	dir := t.TempDir()
	sum := writeBundle(t, dir)
	corrupt := filepath.Join(t.TempDir(), sum.Name)
	b, err := os.ReadFile(sum.Path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	notABundle := writeFile(t, t.TempDir(), "notes.tar.gz", "x")
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"a bundle as the agent wrote it verifies", []string{sum.Path}, ExitOK,
			[]string{"OK  " + sum.Name, "node gpu-node-07, trigger xid-48 on GPU-0"}, nil},
		{"a bundle with a changed byte is corrupt", []string{sum.Path, corrupt}, ExitFail,
			[]string{"OK  " + sum.Name, "CORRUPT  verify " + corrupt}, nil},
		{"a file that is not named as a bundle is bad input", []string{notABundle}, ExitUsage,
			nil, []string{"not an evidence bundle"}},
		{"a bundle that does not exist is bad input", []string{filepath.Join(dir, "missing", sum.Name)}, ExitUsage,
			nil, []string{"no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, append([]string{"evidence", "verify"}, tc.args...)...).check(t, tc.code, tc.stdout, tc.stderr)
		})
	}
}
