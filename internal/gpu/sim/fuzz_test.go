package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzLoadScenario feeds arbitrary bytes to Parse: it must never panic, every error must be
// a ScenarioError, and every accepted scenario must build a backend that answers.
func FuzzLoadScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: gpunode.dev/sim/v1\npreset: h200x1\nfaults:\n  - {type: xid, gpu: 0, xid: 154}\n"))
	f.Add([]byte("apiVersion: gpunode.dev/sim/v1\npreset: a100x8\ncount: 0\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("- - - -\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var se *ScenarioError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("error %v (%T) is not a ScenarioError", err, err)
			}
			return
		}
		now := time.Unix(0, 0)
		b, err := New(s, WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatalf("Parse accepted a scenario New rejects: %v", err)
		}
		now = now.Add(1000 * time.Hour)
		if _, err := b.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		_ = b.KernelLog()
	})
}
