package monitoring

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// A synthetic fleet for the alert-behaviour tests: every series an exporter serves for a
// healthy node, one sample a minute for an hour (minutes 0 to 60), with overrides.

// minutes is the length of every series; the alerts are evaluated at its end.
const minutes = 60

// dcgmDefaults are the DCGM_FI_* values of a healthy, busy GPU.
var dcgmDefaults = map[string]float64{
	"DCGM_FI_DEV_GPU_TEMP":                    40,
	"DCGM_FI_DEV_MEMORY_TEMP":                 45,
	"DCGM_FI_DEV_POWER_USAGE":                 350,
	"DCGM_FI_DEV_SM_CLOCK":                    1980,
	"DCGM_FI_DEV_GPU_UTIL":                    80,
	"DCGM_FI_DEV_MEM_COPY_UTIL":               30,
	"DCGM_FI_DEV_FB_USED":                     20000,
	"DCGM_FI_DEV_FB_FREE":                     120000,
	"DCGM_FI_DEV_XID_ERRORS":                  0,
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":           3,
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":           0,
	"DCGM_FI_DEV_ROW_REMAP_FAILURE":           0,
	"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS":   0,
	"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0,
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":         0,
}

// gpunodeStateSets are gpunode's per-GPU one-of-N gauges: the label, its values, the one at 1.
var gpunodeStateSets = []struct {
	metric, label string
	values        []string
	current       string
}{
	{"gpunode_gpu_health", "state", []string{"healthy", "degraded", "unhealthy"}, "healthy"},
	{"gpunode_gpu_required_action", "action",
		[]string{"none", "restart-app", "drain-p2p", "reset-gpu", "reload-driver", "reboot-node", "service"}, "none"},
	{"gpunode_gpu_recovery_action", "action", []string{"none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset"}, "none"},
}

var (
	findingComponents = []string{"application", "gpu", "memory", "interconnect", "pcie", "driver", "node"}
	findingSeverities = []string{"info", "warning", "critical", "fatal"}
	collectors        = []string{"telemetry", "health", "acceptance"}
)

// node is one scrape target.
type node struct {
	host    string // Hostname; the instance is host:9400
	gpunode bool   // gpunode's exporter (gpunode_* series too), else dcgm-exporter
	gpus    int
	// since is the minute the target's first scrape happened (0: before the hour began).
	since int
	// lost maps a GPU index to the minute its DCGM_FI_* series stopped.
	lost map[int]int
	// set overrides a series' samples: key "metric/gpu/value" (value: the state, action,
	// collector or "component/severity" of a gpunode gauge; gpu empty for node-level
	// series), "up" for the target's up; samples in series notation, "" drops the series.
	set map[string]string
}

func (n node) instance() string { return n.host + ":9400" }

func (n node) job() string {
	if n.gpunode {
		return "gpunode"
	}
	return "nvidia-dcgm-exporter"
}

// constant is v for the whole hour from minute from.
func constant(v float64, from int) string {
	if from <= 0 {
		return fmt.Sprintf("%gx%d", v, minutes)
	}
	return fmt.Sprintf("_x%d %gx%d", from, v, minutes-from) // "_xN" is N blanks, "vxN" N+1 values
}

// until is v up to minute end (excluded), then no samples.
func until(v float64, end int) string {
	return fmt.Sprintf("%gx%d _x%d", v, end-1, minutes+1-end)
}

// series returns the node's series descriptions.
func (n node) series() []string {
	target := fmt.Sprintf(`instance=%q, job=%q`, n.instance(), n.job())
	var out []string
	add := func(key, metric, lbls string, v float64) {
		samples, ok := n.set[key]
		if !ok {
			samples = constant(v, n.since)
		}
		if samples != "" {
			out = append(out, fmt.Sprintf("%s{%s, %s} %s", metric, target, lbls, samples))
		}
	}
	if s, ok := n.set["up"]; ok {
		out = append(out, fmt.Sprintf("up{%s} %s", target, s))
	} else {
		out = append(out, fmt.Sprintf("up{%s} %s", target, constant(1, n.since)))
	}
	for g := range n.gpus {
		gpuLabels := fmt.Sprintf(`gpu="%d", UUID="GPU-%s-%d"`, g, n.host, g)
		dcgm := fmt.Sprintf(`%s, device="nvidia%d", modelName="NVIDIA H200", Hostname=%q`, gpuLabels, g, n.host)
		for _, m := range sortedKeys(dcgmDefaults) {
			key := fmt.Sprintf("%s/%d/", m, g)
			if end, ok := n.lost[g]; ok && !overridden(n.set, key) {
				out = append(out, fmt.Sprintf("%s{%s, %s} %s", m, target, dcgm, until(dcgmDefaults[m], end)))
				continue
			}
			add(key, m, dcgm, dcgmDefaults[m])
		}
		for _, s := range gpunodeStateSets {
			for _, v := range s.values {
				if n.gpunode {
					add(fmt.Sprintf("%s/%d/%s", s.metric, g, v), s.metric, fmt.Sprintf(`%s, %s=%q`, gpuLabels, s.label, v), b2f(v == s.current))
				}
			}
		}
	}
	if !n.gpunode {
		return out
	}
	for _, c := range findingComponents {
		for _, s := range findingSeverities {
			add(fmt.Sprintf("gpunode_findings//%s/%s", c, s), "gpunode_findings", fmt.Sprintf(`component=%q, severity=%q`, c, s), 0)
		}
	}
	for _, c := range collectors {
		add("gpunode_collector_success//"+c, "gpunode_collector_success", fmt.Sprintf(`collector=%q`, c), 1)
	}
	for _, r := range []string{"passed", "failed"} {
		add("gpunode_acceptance_last_result//"+r, "gpunode_acceptance_last_result", fmt.Sprintf(`result=%q`, r), b2f(r == "passed"))
	}
	return out
}

// fleet returns the series of every node and the extra series.
func fleet(nodes []node, extra []string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.series()...)
	}
	return append(out, extra...)
}

// unhealthyFrom sets GPU g of a gpunode node unhealthy, requiring action, from minute m.
func unhealthyFrom(g int, action string, m int) map[string]string {
	return stateFrom(g, "unhealthy", action, m)
}

// stateFrom moves GPU g's health to state and its required action to action at minute m.
func stateFrom(g int, state, action string, m int) map[string]string {
	switchAt := func(before, after float64) string {
		return fmt.Sprintf("%gx%d %gx%d", before, m-1, after, minutes-m)
	}
	set := map[string]string{
		fmt.Sprintf("gpunode_gpu_health/%d/healthy", g):   switchAt(1, 0),
		fmt.Sprintf("gpunode_gpu_health/%d/%s", g, state): switchAt(0, 1),
	}
	if action != "none" {
		set[fmt.Sprintf("gpunode_gpu_required_action/%d/none", g)] = switchAt(1, 0)
		set[fmt.Sprintf("gpunode_gpu_required_action/%d/%s", g, action)] = switchAt(0, 1)
	}
	return set
}

// merged returns the union of override sets (later ones win).
func merged(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		maps.Copy(out, s)
	}
	return out
}

// xidSeries is gpunode's XID counter of GPU g of host.
func xidSeries(host string, g, code int, samples string) string {
	return fmt.Sprintf(`gpunode_xid_errors_total{instance="%s:9400", job="gpunode", gpu="%d", UUID="GPU-%s-%d", xid="%d"} %s`,
		host, g, host, g, code, samples)
}

func overridden(set map[string]string, key string) bool {
	_, ok := set[key]
	return ok
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }

func TestSeriesHelpersPlaceSamplesOnTheRightMinutes(t *testing.T) {
	tests := []struct {
		name, samples string
		first, last   int // minutes of the first and last sample
	}{
		{"a constant from minute 0 covers the hour", constant(1, 0), 0, minutes},
		{"a constant from minute 58 starts there", constant(1, 58), 58, minutes},
		{"a series until minute 55 stops the minute before", until(1, 55), 0, 54},
		{"a state switch keeps the hour's length", stateFrom(0, "unhealthy", "reset-gpu", 55)["gpunode_gpu_health/0/healthy"], 0, minutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSeries(t, []string{"x " + tt.samples})[0].samples
			first, last := s[0].T()/step.Milliseconds(), s[len(s)-1].T()/step.Milliseconds()
			if int(first) != tt.first || int(last) != tt.last || len(s) != tt.last-tt.first+1 {
				t.Errorf("%q: %d samples from minute %d to %d, want minute %d to %d, one a minute",
					tt.samples, len(s), first, last, tt.first, tt.last)
			}
		})
	}
}

func TestMatchResultsReportsMissingAndUnexpectedSeries(t *testing.T) {
	series := loadSeries(t, []string{`up{instance="a"} 0x60`, `up{instance="b"} 0x60`})
	got := instantQuery(t, series, "up == 0", time.Unix(0, 0).Add(minutes*step))
	if msg := matchResults(got, []string{"instance=a", "instance=b"}); msg != "" {
		t.Errorf("both series wanted: %s", msg)
	}
	if msg := matchResults(got, []string{"instance=a"}); !strings.Contains(msg, `unexpected [{__name__="up", instance="b"}]`) {
		t.Errorf("one series too many: got %q", msg)
	}
	if msg := matchResults(got, []string{"instance=a", "instance=a"}); !strings.Contains(msg, "missing [instance=a]") {
		t.Errorf("a wanted series matched twice: got %q", msg)
	}
}
