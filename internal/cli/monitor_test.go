package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The example scenarios are the fault sequences users read first: each must produce the
// findings and GPU health it promises.
func TestMonitorTurnsEachExampleScenarioIntoItsFindings(t *testing.T) {
	cases := []struct {
		name      string
		scenario  string
		findings  []string // "gpu/cause/action"
		unhealthy []string // "gpu/action"
		degraded  []string
	}{
		{"a GPU that falls off the bus needs a reboot", "h100x8-xid79.yaml",
			[]string{"2/xid-79/reboot-node", "2/gpu-lost/reboot-node"}, []string{"2/reboot-node"}, nil},
		// A contained error (94) restarts the app and so does the one uncorrected ECC error it
		// counts: that GPU stays in service, degraded (a reset only when containment fails or
		// repeats).
		{"a double-bit error with a page retirement needs a reset, a contained error restarts the app", "a100x8-memory-errors.yaml",
			[]string{"0/xid-48/reset-gpu", "0/xid-63/reset-gpu", "0/row-remap-pending/reset-gpu", "5/xid-94/restart-app", "5/ecc-uncorrected/restart-app"},
			[]string{"0/reset-gpu"}, []string{"5"}},
		{"the driver's own recovery action is followed", "b200x8-recovery-action.yaml",
			[]string{"4/recovery-action/reboot-node"}, []string{"4/reboot-node"}, nil},
		{"a degraded node: remap, narrow link, NVLink down, thermal slowdown", "h200x8-degraded.yaml",
			[]string{"1/row-remap-pending/reset-gpu", "3/pcie-link-width/reset-gpu", "6/nvlink-down-7/drain-p2p", "4/clock-hw-thermal-slowdown/none"},
			[]string{"1/reset-gpu", "3/reset-gpu", "6/drain-p2p"}, []string{"4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, "monitor", "--sim", "../../examples/scenarios/"+tc.scenario, "--sim-elapsed", "30m",
				"--duration", "1500ms", "--interval", "100ms", "--json")
			if r.code != ExitFail {
				t.Fatalf("exit %d, want %d (a GPU is unhealthy); stderr %s", r.code, ExitFail, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			var sum struct {
				Type   string `json:"type"`
				Health []struct {
					Index  int    `json:"index"`
					Health string `json:"health"`
					Action string `json:"action"`
				} `json:"health"`
				Findings []struct {
					GPUIndex int    `json:"gpuIndex"`
					Cause    string `json:"cause"`
					Action   string `json:"action"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" {
				t.Fatalf("last line is not the summary (%v): %s", err, lines[len(lines)-1])
			}
			got := map[string]bool{}
			for _, f := range sum.Findings {
				got[fmt.Sprintf("%d/%s/%s", f.GPUIndex, f.Cause, f.Action)] = true
			}
			for _, want := range tc.findings {
				if !got[want] {
					t.Errorf("no finding %s; got %v", want, got)
				}
			}
			unhealthy, degraded := map[string]bool{}, map[string]bool{}
			for _, h := range sum.Health {
				switch h.Health {
				case "unhealthy":
					unhealthy[fmt.Sprintf("%d/%s", h.Index, h.Action)] = true
				case "degraded":
					degraded[fmt.Sprint(h.Index)] = true
				}
			}
			if len(unhealthy) != len(tc.unhealthy) || len(degraded) != len(tc.degraded) {
				t.Errorf("unhealthy %v degraded %v, want %v and %v", unhealthy, degraded, tc.unhealthy, tc.degraded)
			}
			for _, u := range tc.unhealthy {
				if !unhealthy[u] {
					t.Errorf("GPU %s not unhealthy: %v", u, unhealthy)
				}
			}
		})
	}
}

func TestMonitorRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"monitor", "--sim", "h100x8", "--interval", "0s"},
		{"monitor", "--sim", "h100x8", "--from", "yesterday"},
		{"monitor", "--sim", "h100x8", "--from", "cursor"},
	} {
		execute(t, args...).check(t, ExitUsage, nil, nil)
	}
}

func TestMonitorOnAHealthySimulatedNodeExitsZero(t *testing.T) {
	r := execute(t, "monitor", "--sim", "h100x8", "--duration", "200ms", "--interval", "50ms")
	r.check(t, ExitOK, []string{"healthy", "polls"}, nil)
}
