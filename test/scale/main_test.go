// Package scale measures `gpunode controller` against a large simulated fleet: a real
// kube-apiserver and etcd (envtest), N Nodes and GPUNodes cloned from one node that a
// simulated agent really took through acceptance, and the controller as its own process.
// It reports the controller's memory (VmRSS, VmHWM), its decision times per controller
// (controller_runtime_reconcile_time_seconds) and the time from a GPU fault published in
// a GPUNode's status to remediation's hold on the Node, in one `SCALE ...` line.
//
// It runs only when asked (never in CI by default):
//
//	export KUBEBUILDER_ASSETS=$(bash hack/k8s-test-assets.sh)
//	GPUNODE_SCALE_NODES=1000 go test ./test/scale/ -run TestScale -v -timeout 60m
package scale

import (
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpunode/gpunode/internal/testenv"
)

func TestMain(m *testing.M) {
	// The in-process template controller's warnings and errors; the benchmarked
	// controller's log is its own file.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(testenv.Run(m))
}

// envNodes is the variable that turns the benchmark on and sizes the fleet.
const envNodes = "GPUNODE_SCALE_NODES"

// skipReason says how to run the benchmark.
const skipReason = envNodes + " not set: this benchmark runs only when asked, e.g. " +
	"`GPUNODE_SCALE_NODES=5000 go test ./test/scale/ -run TestScale -v -timeout 60m` " +
	"(with KUBEBUILDER_ASSETS set; GPUNODE_BIN=path uses a built gpunode instead of building one)"

// fleetSize is the number of simulated nodes GPUNODE_SCALE_NODES asks for; it skips t when
// the variable is not set and fails it when the value is not a count of at least 2.
func fleetSize(t *testing.T) int {
	t.Helper()
	s := os.Getenv(envNodes)
	if s == "" {
		t.Skip(skipReason)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("%s=%q: want a node count of at least 2", envNodes, s)
	}
	return n
}
