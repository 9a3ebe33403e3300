package sim

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/gputest"
)

// startedBefore is a clock whose first reading (the backend's start) lies elapsed before
// every later one: the scenario is read as of elapsed, the same at every call.
func startedBefore(elapsed time.Duration) func() time.Time {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var once sync.Once
	return func() time.Time {
		first := false
		once.Do(func() { first = true })
		if first {
			return start
		}
		return start.Add(elapsed)
	}
}

// injectXID48 makes a simulated backend report a double-bit ECC error on its last GPU: an
// XID event and the ECC event it implies.
func injectXID48(t *testing.T, b gpu.Backend) int {
	t.Helper()
	sb := b.(*Backend)
	if err := sb.Inject(Fault{Type: FaultXID, GPU: len(sb.base) - 1, XID: 48}); err != nil {
		t.Fatalf("Inject: %v", err)
	}
	return 2
}

func TestSimulatedGPUsKeepThePortsContract(t *testing.T) {
	cases := []struct {
		name    string
		source  string // a preset or a scenario file
		elapsed time.Duration
	}{
		{"a scenario whose GPU fell off the bus keeps it", filepath.Join("testdata", "h100x8-xid79.yaml"), time.Minute},
		{"a degraded scenario with a pending remap, a down link and heat keeps it", filepath.Join("testdata", "h200x8-degraded.yaml"), 5 * time.Minute},
		{"a scenario with per-GPU overrides and unsupported facts keeps it", filepath.Join("testdata", "overrides.yaml"), time.Minute},
	}
	for _, p := range Presets() {
		cases = append(cases, struct {
			name    string
			source  string
			elapsed time.Duration
		}{"the preset " + p + " keeps it", p, 0})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gputest.Conformance(t, func(t *testing.T) gpu.Backend {
				b, err := Load(tc.source, WithClock(startedBefore(tc.elapsed)))
				if err != nil {
					t.Fatalf("Load(%s): %v", tc.source, err)
				}
				return b
			}, gputest.WithEvents(injectXID48))
		})
	}
}
