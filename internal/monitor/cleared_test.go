package monitor

import (
	"context"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/xid"
)

func TestKernelLinesARecoveryClearedAreCountedNotJudged(t *testing.T) {
	cases := []struct {
		name string
		// lines are fed in order: the XID 95 line of GPU 3, tagged with the boot.
		boots []string
		// cleared: occurrences 1..n of the line in boot "boot-a" were cleared.
		n           int
		wantCleared int
		wantHealth  health.Health
	}{
		{"an XID a recovery cleared is counted and its GPU stays healthy", []string{"boot-a"}, 1, 1, health.Healthy},
		{"the same line logged again after the recovery is a new fault", []string{"boot-a", "boot-a"}, 1, 1, health.Unhealthy},
		{"a line of another boot is judged though the same text was cleared in this one", []string{"boot-b"}, 1, 0, health.Unhealthy},
		{"with nothing cleared every XID is judged", []string{"boot-a"}, 0, 0, health.Unhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := sim.Load("h100x8")
			if err != nil {
				t.Fatal(err)
			}
			var xidLine string
			m, err := New(Config{Backend: b, NoEvents: true, Cleared: func(boot, line string, n int) bool {
				return boot == "boot-a" && line == xidLine && n <= tc.n
			}})
			if err != nil {
				t.Fatal(err)
			}
			m.poll(context.Background()) // the GPUs and their addresses, before the fault (its counters are not judged here)
			before := len(b.KernelLog())
			if err := b.Inject(sim.Fault{Type: sim.FaultXID, GPU: 3, XID: 95}); err != nil {
				t.Fatal(err)
			}
			lines := b.KernelLog()[before:]
			var sc xid.Scanner
			for _, l := range lines {
				if ev, ok := sc.Line(l.Text); ok {
					xidLine = ev.Line
				}
			}
			if xidLine == "" {
				t.Fatal("the simulated XID logged no XID line")
			}
			for _, boot := range tc.boots {
				for _, l := range lines {
					m.kernelLine(KernelLine{Time: l.Time, Text: l.Text, Boot: boot})
				}
			}
			if got := m.Stats().ClearedXIDs; got != tc.wantCleared {
				t.Errorf("cleared XIDs counted %d, want %d", got, tc.wantCleared)
			}
			if got := m.Health()[3].Health; got != tc.wantHealth {
				t.Errorf("GPU 3 is %s, want %s", got, tc.wantHealth)
			}
		})
	}
}
