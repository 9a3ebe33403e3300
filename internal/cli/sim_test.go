package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpunode/gpunode/internal/simfleet"
)

func TestSimUsageAndRefusals(t *testing.T) {
	noFleet := shortTempDir(t)
	scenario := writeFile(t, t.TempDir(), "s.yaml", scenarioXID79)
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr []string
	}{
		{"sim without a subcommand is bad usage", []string{"sim"}, ExitUsage, []string{"sim needs a subcommand: fleet or inject"}},
		{"a fleet of no nodes is bad usage", []string{"sim", "fleet", "--nodes", "0"}, ExitUsage, []string{"--nodes 0: want 1 to 1000"}},
		{"a scenario and a preset are bad usage", []string{"sim", "fleet", "--scenario", scenario, "--preset", "h100x8"}, ExitUsage, []string{"--scenario and --preset: give one"}},
		{"a scenario file that does not exist is bad usage", []string{"sim", "fleet", "--scenario", filepath.Join(noFleet, "none.yaml")}, ExitUsage, []string{"none.yaml", "no such file"}},
		{"an unknown preset is bad usage", []string{"sim", "fleet", "--preset", "h900x8"}, ExitUsage, []string{`unknown sim preset "h900x8"`}},
		{"an interval that is not positive is bad usage", []string{"sim", "fleet", "--interval", "0s"}, ExitUsage, []string{"--interval 0s: must be positive"}},
		{"inject without a node is bad usage", []string{"sim", "inject", "--xid", "79", "--gpu", "0"}, ExitUsage, []string{"accepts 1 arg"}},
		{"inject without a fault is bad usage", []string{"sim", "inject", "sim-001", "--gpu", "1"}, ExitUsage, []string{"give --xid N or --fault TYPE"}},
		{"an xid fault without its code is bad usage", []string{"sim", "inject", "sim-001", "--fault", "xid", "--gpu", "1"}, ExitUsage, []string{"--fault xid needs --xid N"}},
		{"an xid and another fault type are bad usage", []string{"sim", "inject", "sim-001", "--fault", "gpu-lost", "--xid", "79", "--gpu", "1"}, ExitUsage, []string{"--xid injects an xid fault"}},
		{"a GPU fault without a GPU is bad usage", []string{"sim", "inject", "sim-001", "--xid", "79"}, ExitUsage, []string{"--gpu: which GPU does the xid fault hit?"}},
		{"inject without a running fleet exits one saying how to start one", []string{"sim", "inject", "sim-001", "--gpu", "0", "--xid", "79", "--state-dir", noFleet},
			ExitFail, []string{"no simulated fleet is running with state folder " + noFleet, "gpunode sim fleet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, tc.code, nil, tc.inStderr)
		})
	}
}

func TestSimFleetWithoutAPIServerBinariesNamesTheScript(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	dir := shortTempDir(t)
	execute(t, "sim", "fleet", "--nodes", "1", "--state-dir", dir).check(t, ExitFail, nil,
		[]string{"kube-apiserver and etcd not found", "bash hack/k8s-test-assets.sh"})
}

// A fleet runs under the command; sim inject reaches it through its state folder, explain
// node through its kubeconfig; the fleet stops cleanly when its context ends (SIGINT).
func TestSimFleetInjectAndExplainWorkTogether(t *testing.T) {
	if _, err := simfleet.FindAssets(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the API-server tests must run, not skip)", err)
		}
		t.Skipf("no API server binaries: %v", err)
	}
	dir := shortTempDir(t)
	kc := filepath.Join(dir, simfleet.KubeconfigFile)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"sim", "fleet", "--nodes", "3", "--interval", "500ms", "--refresh", "200ms", "--state-dir", dir}, &out, &errOut)
	}()
	until(t, "the fleet is accepted", 60*time.Second, func() bool {
		return inServiceRows(lastTable(out.String())) == 3
	}, &out)

	execute(t, "sim", "inject", "sim-002", "--gpu", "3", "--xid", "95", "--state-dir", dir).check(t, ExitOK,
		[]string{"injected xid 95 on GPU 3 of sim-002 at "}, nil)
	execute(t, "sim", "inject", "sim-007", "--gpu", "3", "--xid", "95", "--state-dir", dir).check(t, ExitFail, nil,
		[]string{`no such node in the simulated fleet: "sim-007" (the fleet's nodes: sim-001 to sim-003)`})
	execute(t, "sim", "inject", "sim-002", "--gpu", "8", "--xid", "95", "--state-dir", dir).check(t, ExitUsage, nil,
		[]string{"invalid fault", "gpu"})

	// The ladder's attempts outlive the episode: explain shows the reset after the node is back.
	var last result
	until(t, "explain shows the reset and no holds", 40*time.Second, func() bool {
		last = execute(t, "explain", "node", "sim-002", "--kubeconfig", kc)
		return last.code == ExitOK && strings.Contains(last.stdout, "attempt: reset-gpu on GPU 3 at ") && strings.Contains(last.stdout, "holds: none")
	}, &out)
	t.Logf("gpunode explain node sim-002:\n%s", last.stdout)

	stop()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("sim fleet exited %d after SIGINT, want 0\nstderr:\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sim fleet did not stop within 30 s of its context ending")
	}
	if s := out.String(); !strings.Contains(s, "simulated fleet stopped after") || !strings.Contains(s, "sim-002") {
		t.Errorf("stdout lacks the table or the stop line:\n%s", s)
	}
	if _, err := os.Stat(kc); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig %s remains after the fleet stopped (%v)", kc, err)
	}
}

// until polls cond every 200 ms, failing the test (with the fleet's output) after limit.
func until(t *testing.T, what string, limit time.Duration, cond func() bool, out *lockedBuffer) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, limit, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not within %s\nfleet output:\n%s", what, limit, out.String())
	}
}

// lastTable is the last table the fleet printed.
func lastTable(s string) string {
	if i := strings.LastIndex(s, "--- +"); i >= 0 {
		return s[i:]
	}
	return ""
}

// inServiceRows counts the table's nodes that are InService with no holds.
func inServiceRows(table string) int {
	n := 0
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) == 7 && strings.HasPrefix(f[0], "sim-") && f[3] == "InService" && f[5] == "-" {
			n++
		}
	}
	return n
}

// shortTempDir is a temporary folder short enough to hold a unix socket.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// lockedBuffer is a bytes.Buffer that a running command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
