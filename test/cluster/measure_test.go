package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/simfleet"
)

// The measurements of docs/benchmarks.md on the real cluster. They take minutes, so they run
// only when asked:
//
//	GPUNODE_CLUSTER_MEASURE=1 GPUNODE_CLUSTER_ASSETS=$(bash hack/cluster-assets.sh) \
//	  KUBEBUILDER_ASSETS=$(bash hack/k8s-test-assets.sh) \
//	  go test -count=1 -timeout 90m -v -run '^(TestTheChartOnARealCluster|TestMeasure)/^helm_install' ./test/cluster/
func measuring(t *testing.T) {
	t.Helper()
	need(t)
	if os.Getenv("GPUNODE_CLUSTER_MEASURE") != "1" {
		t.Skip("a measurement of minutes: set GPUNODE_CLUSTER_MEASURE=1 (docs/benchmarks.md has the command)")
	}
	// The node as docs/install.md leaves it: labelled, the agent Ready.
	var n corev1.Node
	if err := getJSON(t.Context(), &n, "node", nodeName); err != nil {
		t.Fatal(err)
	}
	if n.Labels["nvidia.com/gpu.present"] != "true" {
		runDocs(t, "label-node")
	}
	waitFor(t, "the agent's pod Ready", settle, agentReady)
}

// summary is the part of the kubelet's /stats/summary the measurement reads: per container,
// the cgroup's working set (what `kubectl top` shows) and its CPU time.
type summary struct {
	Pods []struct {
		PodRef     struct{ Name, Namespace string } `json:"podRef"`
		Containers []struct {
			Name   string `json:"name"`
			Memory struct {
				WorkingSetBytes uint64 `json:"workingSetBytes"`
			} `json:"memory"`
			CPU struct {
				UsageCoreNanoSeconds uint64 `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
		} `json:"containers"`
	} `json:"pods"`
}

// TestMeasureTheAgentPodsFootprint samples the agent pod's containers as the kubelet sees
// them for GPUNODE_MEASURE_DURATION (default 10m), with 8 simulated GPUs, the device plugin
// and the metrics (served by the agent, scraped once a sample) on.
func TestMeasureTheAgentPodsFootprint(t *testing.T) {
	measuring(t)
	pod := agentPod(t).Name
	d := 10 * time.Minute
	if v, err := time.ParseDuration(os.Getenv("GPUNODE_MEASURE_DURATION")); err == nil {
		d = v
	}
	type sample struct {
		at       time.Time
		ws, cpu  map[string]uint64
		scrapeMS float64
	}
	read := func() sample {
		var s summary
		raw, err := inCluster(t.Context(), "kubectl", "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/stats/summary")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatalf("the kubelet's stats summary: %v", err)
		}
		out := sample{at: time.Now(), ws: map[string]uint64{}, cpu: map[string]uint64{}}
		for _, p := range s.Pods {
			if p.PodRef.Name != pod {
				continue
			}
			for _, c := range p.Containers {
				out.ws[c.Name], out.cpu[c.Name] = c.Memory.WorkingSetBytes, c.CPU.UsageCoreNanoSeconds
			}
		}
		// Prometheus's part of the load: one scrape per sample.
		t0 := time.Now()
		if _, err := inCluster(t.Context(), "kubectl", "get", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+pod+":9400/proxy/metrics"); err != nil {
			t.Fatal(err)
		}
		out.scrapeMS = float64(time.Since(t0).Microseconds()) / 1000
		return out
	}
	first := read()
	peak := map[string]uint64{}
	var last sample
	for time.Since(first.at) < d {
		time.Sleep(15 * time.Second)
		last = read()
		for c, ws := range last.ws {
			peak[c] = max(peak[c], ws)
		}
	}
	wall := last.at.Sub(first.at).Seconds()
	var podPeak uint64
	var podCPU float64
	for _, c := range slices.Sorted(maps.Keys(last.ws)) {
		cpu := float64(last.cpu[c]-first.cpu[c]) / 1e9 / wall * 100
		t.Logf("BENCH cluster-footprint container=%s working_set_peak_mib=%.1f working_set_last_mib=%.1f cpu_percent_of_core=%.2f over_s=%.0f",
			c, mib(peak[c]), mib(last.ws[c]), cpu, wall)
		podPeak, podCPU = podPeak+peak[c], podCPU+cpu
	}
	t.Logf("BENCH cluster-footprint pod containers=%d working_set_peak_mib=%.1f cpu_percent_of_core=%.2f", len(last.ws), mib(podPeak), podCPU)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// TestMeasureFaultToHold injects XID 79 into the simulated agent through its control socket
// (the host side of its state folder) GPUNODE_MEASURE_INJECTIONS times (default 100) and
// times each injection to the node's remediation hold, seen through a watch. Between
// injections the ladder recovers the node (a node that ends in Maintenance is released as a
// person would, with the gpunode.dev/release annotation).
func TestMeasureFaultToHold(t *testing.T) {
	measuring(t)
	n := 100
	if v, err := strconv.Atoi(os.Getenv("GPUNODE_MEASURE_INJECTIONS")); err == nil {
		n = v
	}
	// Every injection must meet a node the ladder may still act on: a policy with attempts
	// to spare (the defaults end in Maintenance after a few faults in a window, rightly).
	if _, err := inClusterStdin(t.Context(), measurePolicy, "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(env.state, "var-lib/gpunode/sim.sock")
	var lat []float64
	for i := range n {
		waitInService(t)
		w := watchTaints(t, nodeName)
		waitFor(t, "the watch's first version", settle, func() (bool, string) { return w.versions() > 0, "none yet" })
		t0 := time.Now()
		req := simfleet.InjectRequest{Node: nodeName, Fault: simfleet.Fault{GPU: i % 8, Type: "xid", XID: 79}}
		if _, err := simfleet.InjectAt(t.Context(), socket, req); err != nil {
			t.Fatalf("injection %d: %v", i, err)
		}
		var held time.Time
		waitFor(t, fmt.Sprintf("injection %d held", i), settle, func() (bool, string) {
			held = w.firstWith(v1alpha1.TaintUnschedulable)
			return !held.IsZero(), "not held yet"
		})
		w.close()
		lat = append(lat, float64(held.Sub(t0).Microseconds())/1000)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(math.Ceil(p*float64(len(lat))))-1] }
	t.Logf("BENCH cluster-fault-to-hold xid=79 injections=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f min_ms=%.1f",
		len(lat), q(0.50), q(0.99), lat[len(lat)-1], lat[0])
}

// measurePolicy lets the ladder reboot the simulated node as often as the measurement
// injects, with the whole pool as its budget.
const measurePolicy = `apiVersion: gpunode.dev/v1alpha1
kind: GPUNodePolicy
metadata:
  name: measure-fault-to-hold
spec:
  priority: 100
  nodeSelector:
    matchLabels:
      kubernetes.io/hostname: gpu-node-1
  remediation:
    steps:
      - {step: reset-gpu, maxAttempts: 10, window: 10s, backoff: 1s}
      - {step: reboot-node, maxAttempts: 10, window: 10s, backoff: 1s}
    budget: {maxUnavailable: "100%"}
    breaker: {threshold: "100%"}
`

// waitInService waits for the node to be back in service; a node in Maintenance is
// released once, as a person would.
func waitInService(t *testing.T) {
	t.Helper()
	released := false
	waitFor(t, "the node in service", 2*settle, func() (bool, string) {
		gn := gpuNode(t)
		if gn.Status.Phase == v1alpha1.PhaseMaintenance && !released {
			released = true
			_, _ = inCluster(context.Background(), "kubectl", "annotate", "gpunode", nodeName, "--overwrite",
				v1alpha1.AnnotationRelease+"="+time.Now().UTC().Format(time.RFC3339))
		}
		return gn.Status.Phase == v1alpha1.PhaseInService && !nodeTainted(t, v1alpha1.TaintUnschedulable),
			fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
}
