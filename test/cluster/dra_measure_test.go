package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/simfleet"
)

// sliceWatch follows gpunode's ResourceSlices of the node through `kubectl get
// resourceslices -w` and keeps, per device, when a version first showed it with a health
// taint.
type sliceWatch struct {
	mu      sync.Mutex
	n       int
	tainted map[string]time.Time
	stop    context.CancelFunc
	done    chan struct{}
}

func watchSlices(t *testing.T) *sliceWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &sliceWatch{tainted: map[string]time.Time{}, stop: cancel, done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "hack/cluster-exec.sh"), "kubectl", "get", "resourceslices",
		"--field-selector", "spec.driver="+draDriver+",spec.nodeName="+nodeName, "--watch", "-o", "json")
	cmd.Env = append(os.Environ(), "CLUSTER_STATE="+env.state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		dec := json.NewDecoder(out)
		for {
			var s resourcev1.ResourceSlice
			if err := dec.Decode(&s); err != nil {
				break
			}
			at := time.Now()
			w.mu.Lock()
			w.n++
			for _, d := range s.Spec.Devices {
				if slices.ContainsFunc(d.Taints, func(x resourcev1.DeviceTaint) bool { return x.Key == healthTaint }) {
					if _, seen := w.tainted[d.Name]; !seen {
						w.tainted[d.Name] = at
					}
				}
			}
			w.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(w.close)
	return w
}

func (w *sliceWatch) close() { w.stop(); <-w.done }

func (w *sliceWatch) versions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// firstTainted is when a version first showed device with a health taint (zero: none yet).
func (w *sliceWatch) firstTainted(device string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tainted[device]
}

// TestMeasureFaultToDeviceTaint switches the release to DRA and injects an XID
// (GPUNODE_MEASURE_XID, default 79) into a simulated GPU through the agent's control socket,
// GPUNODE_MEASURE_INJECTIONS times (default 100) or until GPUNODE_MEASURE_DURATION (default
// 3m) has passed, cycling over the 8 GPUs, and times each injection to the first version of
// the node's ResourceSlice, seen through a watch, whose device carries the health taint.
// Between injections the ladder recovers the GPU and the taint is lifted.
func TestMeasureFaultToDeviceTaint(t *testing.T) {
	measuring(t)
	needDRA(t, false)
	n, xid, budget := 100, 79, 3*time.Minute
	if v, err := strconv.Atoi(os.Getenv("GPUNODE_MEASURE_INJECTIONS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("GPUNODE_MEASURE_XID")); err == nil {
		xid = v
	}
	if v, err := time.ParseDuration(os.Getenv("GPUNODE_MEASURE_DURATION")); err == nil {
		budget = v
	}
	helmUpgrade(t, "--set", "agent.dra.enabled=true")
	if _, err := inClusterStdin(t.Context(), measurePolicy, "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(env.state, "var-lib/gpunode/sim.sock")
	var lat []float64
	start := time.Now()
	for i := 0; i < n && time.Since(start) < budget; i++ {
		device := fmt.Sprintf("gpu-%d", i%8)
		waitInService(t)
		waitDeviceTaint(t, device, "")
		w := watchSlices(t)
		waitFor(t, "the watch's first version", settle, func() (bool, string) { return w.versions() > 0, "none yet" })
		if !w.firstTainted(device).IsZero() {
			t.Fatalf("injection %d: device %s tainted before the fault", i, device)
		}
		t0 := time.Now()
		req := simfleet.InjectRequest{Node: nodeName, Fault: simfleet.Fault{GPU: i % 8, Type: "xid", XID: xid}}
		if _, err := simfleet.InjectAt(t.Context(), socket, req); err != nil {
			t.Fatalf("injection %d: %v", i, err)
		}
		var tainted time.Time
		waitFor(t, fmt.Sprintf("injection %d: device %s tainted", i, device), settle, func() (bool, string) {
			tainted = w.firstTainted(device)
			return !tainted.IsZero(), "not tainted yet"
		})
		w.close()
		lat = append(lat, float64(tainted.Sub(t0).Microseconds())/1000)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(math.Ceil(p*float64(len(lat))))-1] }
	t.Logf("BENCH cluster-fault-to-device-taint xid=%d injections=%d over_s=%.0f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f min_ms=%.1f",
		xid, len(lat), time.Since(start).Seconds(), q(0.50), q(0.99), lat[len(lat)-1], lat[0])
}
