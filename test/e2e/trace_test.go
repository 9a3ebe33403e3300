package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// traceDir is where a run leaves its trace for diagnosis (GPUNODE_E2E_TRACE): the
// controllers' log at verbosity 5 (every pass, with the workqueue's own lines) and the
// latency test's timeline. Unset: no trace.
func traceDir() string { return os.Getenv("GPUNODE_E2E_TRACE") }

// controllerLogger is the controllers' logger: discarded unless a trace is asked for.
func controllerLogger(t *testing.T) logr.Logger {
	t.Helper()
	dir := traceDir()
	if dir == "" {
		return logr.Discard()
	}
	f, err := os.Create(filepath.Join(dir, "controller.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	t.Cleanup(func() { mu.Lock(); defer mu.Unlock(); _ = f.Close() })
	return funcr.NewJSON(func(obj string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(f, obj)
	}, funcr.Options{LogTimestamp: true, TimestampFormat: time.RFC3339Nano, Verbosity: 5})
}

// writeTimeline writes each armed node's injection, published-health and hold times
// (Unix nanoseconds; 0: not seen) to the trace, when one is asked for.
func (hw *holdWatch) writeTimeline(t *testing.T) {
	t.Helper()
	dir := traceDir()
	if dir == "" {
		return
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	nodes := make([]string, 0, len(hw.armed))
	for n := range hw.armed {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	out := "node\tinjected\tseen\theld\n"
	ns := func(at time.Time) int64 {
		if at.IsZero() {
			return 0
		}
		return at.UnixNano()
	}
	for _, n := range nodes {
		out += fmt.Sprintf("%s\t%d\t%d\t%d\n", n, ns(hw.armed[n]), ns(hw.seen[n]), ns(hw.held[n]))
	}
	if err := os.WriteFile(filepath.Join(dir, "timeline.tsv"), []byte(out), 0o644); err != nil {
		t.Error(err)
	}
}
