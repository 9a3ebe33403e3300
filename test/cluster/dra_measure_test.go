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
	"strings"
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
// (GPUNODE_MEASURE_XID, default 48: a GPU reset) into the simulated GPUs through the agent's
// control socket and times each injection to the first version of the node's ResourceSlice,
// seen through a watch, whose device carries the health taint. It injects in rounds, one
// injection per GPU with the ladder off, then turns the ladder on and waits for it to
// recover every GPU and lift the taints; it stops after GPUNODE_MEASURE_INJECTIONS
// injections (default 100) or at the end of the round that passes GPUNODE_MEASURE_DURATION
// (default 12m: a round with its recovery takes about half a minute, 100 injections 13
// rounds). The machine's load average is logged with the numbers.
func TestMeasureFaultToDeviceTaint(t *testing.T) {
	measuring(t)
	needDRA(t, false)
	n, xid, budget := 100, 48, 12*time.Minute
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
	const policy = "measure-fault-to-hold"
	gpus := len(gpuNode(t).Status.Inventory.GPUs)
	socket := filepath.Join(env.state, "var-lib/gpunode/sim.sock")
	var lat []float64
	start, load0 := time.Now(), loadAvg()
	for round := 0; len(lat) < n && time.Since(start) < budget; round++ {
		setRemediation(t, policy, true)
		waitInService(t)
		for i := range gpus {
			waitDeviceTaint(t, fmt.Sprintf("gpu-%d", i), "")
		}
		setRemediation(t, policy, false)
		w := watchSlices(t)
		waitFor(t, "the watch's first version", settle, func() (bool, string) { return w.versions() > 0, "none yet" })
		for i := 0; i < gpus && len(lat) < n; i++ {
			device := fmt.Sprintf("gpu-%d", i)
			if !w.firstTainted(device).IsZero() {
				t.Fatalf("round %d: device %s tainted before its fault", round, device)
			}
			t0 := time.Now()
			req := simfleet.InjectRequest{Node: nodeName, Fault: simfleet.Fault{GPU: i, Type: "xid", XID: xid}}
			if _, err := simfleet.InjectAt(t.Context(), socket, req); err != nil {
				t.Fatalf("round %d, GPU %d: %v", round, i, err)
			}
			var tainted time.Time
			waitFor(t, fmt.Sprintf("round %d: device %s tainted", round, device), settle, func() (bool, string) {
				tainted = w.firstTainted(device)
				return !tainted.IsZero(), "not tainted yet"
			})
			lat = append(lat, float64(tainted.Sub(t0).Microseconds())/1000)
		}
		w.close()
	}
	setRemediation(t, policy, true)
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(math.Ceil(p*float64(len(lat))))-1] }
	t.Logf("BENCH cluster-fault-to-device-taint xid=%d injections=%d over_s=%.0f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f min_ms=%.1f load_start=%s load_end=%s",
		xid, len(lat), time.Since(start).Seconds(), q(0.50), q(0.99), lat[len(lat)-1], lat[0], load0, loadAvg())
}

// loadAvg is the machine's 1, 5 and 15 minute load averages, as /proc/loadavg has them.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], "/")
}
