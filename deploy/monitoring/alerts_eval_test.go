package monitoring

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
)

// The rule expressions evaluated at the end of the synthetic hour: which alerts' conditions
// hold, for which series. ("for" durations are not simulated: a condition that holds here
// fires once it has held for its rule's "for".)

// Two healthy nodes: a gpunode one and a dcgm-exporter one, two GPUs each.
func nodeA(set map[string]string) node {
	return node{host: "node-a", gpunode: true, gpus: 2, set: set}
}

func nodeB(set map[string]string) node { return node{host: "node-b", gpus: 2, set: set} }

func TestAlertConditionsOnASyntheticFleet(t *testing.T) {
	tests := []struct {
		name  string
		nodes []node
		extra []string
		// want maps an alert to its expected result series, each as "label=value,..." pairs
		// that series has; every other alert must return nothing.
		want map[string][]string
	}{
		{
			name:  "a healthy fleet with an XID counted long ago fires nothing",
			nodes: []node{nodeA(nil), nodeB(nil)},
			extra: []string{xidSeries("node-a", 0, 13, constant(1, 0))},
		},
		{
			name: "a row remap failure fires for that GPU alone, with the GPU unhealthy",
			nodes: []node{nodeA(merged(unhealthyFrom(1, "service", 55), map[string]string{
				"DCGM_FI_DEV_ROW_REMAP_FAILURE/1/": "0x54 1x6",
				"gpunode_findings//memory/fatal":   "0x54 1x6",
			})), nodeB(nil)},
			want: map[string][]string{
				"GPURowRemapFailure": {"instance=node-a:9400,gpu=1"},
				"GPUUnhealthy":       {"instance=node-a:9400,gpu=1"},
			},
		},
		{
			name:  "dcgm-exporter's row remap flag fires too",
			nodes: []node{nodeA(nil), nodeB(map[string]string{"DCGM_FI_DEV_ROW_REMAP_FAILURE/0/": "0x54 1x6"})},
			want:  map[string][]string{"GPURowRemapFailure": {"instance=node-b:9400,gpu=0,Hostname=node-b"}},
		},
		{
			name:  "a growing XID counter fires GPUXidError with its code",
			nodes: []node{nodeA(nil), nodeB(nil)},
			extra: []string{xidSeries("node-a", 1, 31, "1x57 2x3")},
			want:  map[string][]string{"GPUXidError": {"instance=node-a:9400,gpu=1,xid=31"}},
		},
		{
			name:  "the first XID of a code, a new series, fires GPUXidError",
			nodes: []node{nodeA(nil), nodeB(nil)},
			extra: []string{xidSeries("node-a", 0, 13, constant(1, 58))},
			want:  map[string][]string{"GPUXidError": {"instance=node-a:9400,gpu=0,xid=13"}},
		},
		{
			name:  "an exporter that just started does not replay old XIDs as new",
			nodes: []node{nodeA(nil), nodeB(nil), {host: "node-c", gpunode: true, gpus: 1, since: 58}},
			extra: []string{xidSeries("node-c", 0, 13, constant(3, 58))},
		},
		{
			name:  "dcgm-exporter's last-XID gauge fires on a dcgm-exporter target",
			nodes: []node{nodeA(nil), nodeB(map[string]string{"DCGM_FI_DEV_XID_ERRORS/1/": "0x50 43x10"})},
			want:  map[string][]string{"GPUXidError": {"instance=node-b:9400,gpu=1,Hostname=node-b"}},
		},
		{
			name:  "gpunode's last-XID gauge is not alerted again after its counter",
			nodes: []node{nodeA(map[string]string{"DCGM_FI_DEV_XID_ERRORS/0/": "0x20 13x40"}), nodeB(nil)},
			extra: []string{xidSeries("node-a", 0, 13, constant(1, 21))},
		},
		{
			name: "an uncorrectable ECC error fires, with the GPU unhealthy",
			nodes: []node{nodeA(merged(unhealthyFrom(0, "reset-gpu", 58), map[string]string{
				"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL/0/": "0x57 1x3",
			})), nodeB(nil)},
			want: map[string][]string{
				"GPUUncorrectableECCError": {"instance=node-a:9400,gpu=0"},
				"GPUUnhealthy":             {"instance=node-a:9400,gpu=0"},
			},
		},
		{
			name: "an uncorrectable error remapping a row fires on dcgm-exporter's default metrics, once with gpunode's",
			nodes: []node{nodeA(map[string]string{
				"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL/1/":           "0x57 2x3",
				"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS/1/": "0x57 1x3",
			}), nodeB(map[string]string{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS/0/": "0x57 1x3"})},
			want: map[string][]string{"GPUUncorrectableECCError": {
				"instance=node-a:9400,gpu=1", "instance=node-b:9400,gpu=0,Hostname=node-b",
			}},
		},
		{
			name: "a GPU fallen off the bus fires GPULost once, from gpunode's health",
			nodes: []node{{host: "node-a", gpunode: true, gpus: 2, lost: map[int]int{1: 55},
				set: unhealthyFrom(1, "reboot-node", 55)}, nodeB(nil)},
			extra: []string{xidSeries("node-a", 1, 79, constant(1, 56))},
			want: map[string][]string{
				"GPULost":      {"instance=node-a:9400,gpu=1,state=unhealthy"},
				"GPUUnhealthy": {"instance=node-a:9400,gpu=1"},
				"GPUXidError":  {"instance=node-a:9400,gpu=1,xid=79"},
			},
		},
		{
			name:  "a GPU whose metrics vanished from a scraped dcgm-exporter fires GPULost",
			nodes: []node{nodeA(nil), {host: "node-b", gpus: 2, lost: map[int]int{0: 52}}},
			want:  map[string][]string{"GPULost": {"instance=node-b:9400,gpu=0,Hostname=node-b"}},
		},
		{
			name: "an exporter that went down fires GPUExporterDown and no GPULost",
			nodes: []node{nodeA(nil), {host: "node-b", gpus: 2, lost: map[int]int{0: 51, 1: 51},
				set: map[string]string{"up": "1x50 0x10"}}},
			want: map[string][]string{"GPUExporterDown": {"instance=node-b:9400,job=nvidia-dcgm-exporter"}},
		},
		{
			name: "gpunode's telemetry collector failing fires one GPULost for the node",
			nodes: []node{{host: "node-a", gpunode: true, gpus: 2, lost: map[int]int{0: 56, 1: 56},
				set: map[string]string{"gpunode_collector_success//telemetry": "1x55 0x5"}}, nodeB(nil)},
			want: map[string][]string{"GPULost": {"instance=node-a:9400,collector=telemetry"}},
		},
		{
			name: "a PCIe link trained narrow fires GPUPCIeLinkDegraded",
			nodes: []node{nodeA(merged(unhealthyFrom(0, "reset-gpu", 55), map[string]string{
				"gpunode_findings//pcie/critical": "0x54 1x6",
			})), nodeB(nil)},
			want: map[string][]string{
				"GPUPCIeLinkDegraded": {"instance=node-a:9400,component=pcie,severity=critical"},
				"GPUUnhealthy":        {"instance=node-a:9400,gpu=0"},
			},
		},
		{
			name: "PCIe replays fire GPUPCIeErrors: gpunode's finding, dcgm-exporter's rate, not both",
			nodes: []node{nodeA(merged(stateFrom(1, "degraded", "none", 10), map[string]string{
				"gpunode_findings//pcie/warning":     "0x9 1x51",
				"DCGM_FI_DEV_PCIE_REPLAY_COUNTER/1/": "0+20x60",
			})), nodeB(map[string]string{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER/1/": "0+20x60"})},
			want: map[string][]string{
				"GPUPCIeErrors": {"instance=node-a:9400,component=pcie", "instance=node-b:9400,gpu=1"},
				"GPUDegraded":   {"instance=node-a:9400,gpu=1"},
			},
		},
		{
			name: "the driver's recovery action fires GPURecoveryActionRequired",
			nodes: []node{nodeA(merged(unhealthyFrom(0, "reset-gpu", 55), map[string]string{
				"gpunode_gpu_recovery_action/0/none":      "1x54 0x6",
				"gpunode_gpu_recovery_action/0/gpu-reset": "0x54 1x6",
			})), nodeB(nil)},
			want: map[string][]string{
				"GPURecoveryActionRequired": {"instance=node-a:9400,gpu=0,action=gpu-reset"},
				"GPUUnhealthy":              {"instance=node-a:9400,gpu=0"},
			},
		},
		{
			name:  "a hold of seven hours fires GPUNodeHeldTooLong, one of an hour does not",
			nodes: []node{nodeA(nil), nodeB(nil)},
			extra: []string{
				`gpunode_node_hold_seconds{node="node-a", owner="remediation", reason="fault"} 21600+60x60`,
				`gpunode_node_hold_seconds{node="node-b", owner="acceptance", reason="not-accepted"} 0+60x60`,
			},
			want: map[string][]string{"GPUNodeHeldTooLong": {"node=node-a,owner=remediation"}},
		},
		{
			name: "a hot, idle GPU with full memory fires the three telemetry alerts",
			nodes: []node{nodeA(nil), nodeB(map[string]string{
				"DCGM_FI_DEV_GPU_TEMP/0/": "90x60", "DCGM_FI_DEV_GPU_UTIL/0/": "0x60",
				"DCGM_FI_DEV_FB_USED/0/": "139000x60", "DCGM_FI_DEV_FB_FREE/0/": "1000x60",
			})},
			want: map[string][]string{
				"GPUTemperatureHigh":  {"instance=node-b:9400,gpu=0"},
				"GPUIdle":             {"instance=node-b:9400,gpu=0"},
				"GPUMemoryNearlyFull": {"instance=node-b:9400,gpu=0"},
			},
		},
		{
			name: "a failed acceptance and a failing collector fire their alerts",
			nodes: []node{nodeA(map[string]string{
				"gpunode_acceptance_last_result//passed": "0x60",
				"gpunode_acceptance_last_result//failed": "1x60",
				"gpunode_collector_success//health":      "0x60",
			}), nodeB(nil)},
			want: map[string][]string{
				"GPUNodeAcceptanceFailed":     {"instance=node-a:9400,result=failed"},
				"GPUExporterCollectorFailing": {"instance=node-a:9400,collector=health"},
			},
		},
	}
	rules := alerts(t)
	at := time.Unix(0, 0).Add(minutes * step)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			series := loadSeries(t, fleet(tt.nodes, tt.extra))
			for _, r := range rules {
				got := instantQuery(t, series, r.Expr, at)
				if msg := matchResults(got, tt.want[r.Alert]); msg != "" {
					t.Errorf("%s: %s", r.Alert, msg)
				}
				for _, s := range got {
					if msg := checkAnnotations(r, s, at, queryFunc(series)); msg != "" {
						t.Errorf("%s for %s: %s", r.Alert, s.Metric, msg)
					}
				}
			}
			for name := range tt.want {
				if !hasAlert(rules, name) {
					t.Errorf("the test expects alert %s, which rules.yaml lacks", name)
				}
			}
		})
	}
}

// matchResults says how the result differs from want ("" when it matches): each wanted
// entry must match a distinct series and no series may be left over.
func matchResults(got promql.Vector, want []string) string {
	left := make([]promql.Sample, len(got))
	copy(left, got)
	var missing []string
	for _, w := range want {
		found := -1
		for i, s := range left {
			if hasLabels(s, w) {
				found = i
				break
			}
		}
		if found < 0 {
			missing = append(missing, w)
			continue
		}
		left = append(left[:found], left[found+1:]...)
	}
	if len(missing) == 0 && len(left) == 0 {
		return ""
	}
	var extra []string
	for _, s := range left {
		extra = append(extra, s.Metric.String())
	}
	return fmt.Sprintf("missing %v, unexpected %v", missing, extra)
}

func hasLabels(s promql.Sample, pairs string) bool {
	for p := range strings.SplitSeq(pairs, ",") {
		k, v, _ := strings.Cut(p, "=")
		if s.Metric.Get(k) != v {
			return false
		}
	}
	return true
}

func hasAlert(rules []rulefmt.Rule, name string) bool {
	for _, r := range rules {
		if r.Alert == name {
			return true
		}
	}
	return false
}
