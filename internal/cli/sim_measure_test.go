package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestStressAndThePerformanceLayerGetTheSameSimulatedFigures: a scenario that narrows GPU
// 3's PCIe link and slows GPU 7's bandwidth gives `stress --sim` and the performance layer
// of `accept --sim` the same HBM and PCIe figures for every GPU, and the narrow link shows
// in both.
func TestStressAndThePerformanceLayerGetTheSameSimulatedFigures(t *testing.T) {
	scenario := "../../examples/scenarios/h200x8-degraded.yaml"
	st := execute(t, "stress", "--sim", scenario, "--sim-elapsed", "5m", "--tests", "hbm,pcie", "--duration", "1s", "-q", "--json")
	var sr struct {
		Results []struct {
			Test    string `json:"test"`
			GPU     int    `json:"gpu"`
			Metrics []struct {
				Name  string  `json:"name"`
				Value float64 `json:"value"`
			} `json:"metrics"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &sr); err != nil {
		t.Fatalf("stress --json: %v\n%s%s", err, st.stdout, st.stderr)
	}
	stress := map[string]map[int]float64{}
	for _, r := range sr.Results {
		for _, m := range r.Metrics {
			key := map[string]string{"cuMemcpyDtoD": "hbm-copy", "host to device": "pcie-h2d", "device to host": "pcie-d2h"}[m.Name]
			if key == "" {
				continue
			}
			if stress[key] == nil {
				stress[key] = map[int]float64{}
			}
			stress[key][r.GPU] = m.Value
		}
	}
	ac := execute(t, "accept", "--sim", scenario, "--sim-elapsed", "5m", "--layers", "performance", "-o", "json")
	var ar struct {
		Checks []struct {
			Measurements []struct {
				GPU      int     `json:"gpu"`
				Metric   string  `json:"metric"`
				Measured float64 `json:"measured"`
				Baseline float64 `json:"baseline"`
			} `json:"measurements"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(ac.stdout), &ar); err != nil {
		t.Fatalf("accept -o json: %v\n%s", err, ac.stderr)
	}
	compared := 0
	for _, c := range ar.Checks {
		for _, m := range c.Measurements {
			want, ok := stress[m.Metric][m.GPU]
			if !ok {
				continue
			}
			compared++
			if math.Abs(want-m.Measured) > 0.01 {
				t.Errorf("GPU %d %s: stress %.2f, performance layer %.2f", m.GPU, m.Metric, want, m.Measured)
			}
			narrow := m.GPU == 3 && m.Metric != "hbm-copy"
			slow := m.GPU == 7
			if below := m.Measured < 0.9*m.Baseline; below != (narrow || slow) {
				t.Errorf("GPU %d %s: %.2f of baseline %.2f: below 90%% is %v, want %v", m.GPU, m.Metric, m.Measured, m.Baseline, below, narrow || slow)
			}
		}
	}
	if compared != 3*8 {
		t.Errorf("compared %d figures, want 24 (hbm, h2d, d2h on 8 GPUs): stress %v", compared, stress)
	}
}

// TestEveryGPUCommandTakesTheSameSimFlags: a command that takes --sim takes every flag of
// gpuOptions (--sim-elapsed, --sim-driver-version-file).
func TestEveryGPUCommandTakesTheSameSimFlags(t *testing.T) {
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand())
	seen := 0
	for _, c := range all {
		if c.Flags().Lookup("sim") == nil {
			continue
		}
		seen++
		for _, f := range []string{"sim-elapsed", "sim-driver-version-file"} {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s takes --sim but not --%s", c.CommandPath(), f)
			}
		}
	}
	if seen < 5 {
		t.Errorf("only %d commands take --sim", seen)
	}
}

// TestTheStressTableNamesEveryGPUThatFails: on the 8-GPU preset every failed test names its
// GPU by UUID, serial and PCI address (GPU 3's narrow link, GPU 7's slow bandwidth); a GPU
// that passes gets no such row.
func TestTheStressTableNamesEveryGPUThatFails(t *testing.T) {
	r := execute(t, "stress", "--sim", "../../examples/scenarios/h200x8-degraded.yaml", "--sim-elapsed", "1m", "--tests", "pcie", "--duration", "1s", "-q")
	r.check(t, ExitFail, []string{
		"FAIL   pcie    3     host to device 12.6 GB/s",
		"                     GPU 3: GPU-60a8b45b-a51a-236f-453e-2b288994fbb4, serial 1653049917861, 00000000:5D:00.0",
		"FAIL   pcie    7     host to device 40.3 GB/s",
		"                     GPU 7: GPU-ab10b733-d98b-fe09-323d-040dc7c77523, serial 1653678790894, 00000000:DB:00.0",
	}, nil)
	if strings.Contains(r.stdout, "GPU 0: GPU-") {
		t.Errorf("a passing GPU got a row naming it:\n%s", r.stdout)
	}
}
