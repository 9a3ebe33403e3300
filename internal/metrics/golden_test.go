package metrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files in testdata")

// durationLine matches the one value that changes from scrape to scrape.
var durationLine = regexp.MustCompile(`(?m)^(gpunode_scrape_duration_seconds\{[^}]*\}) .*$`)

// exposition is one scrape of c in the text format, scrape durations normalised.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("Encode %s: %v", mf.GetName(), err)
		}
	}
	return durationLine.ReplaceAll(buf.Bytes(), []byte("$1 <duration>"))
}

// TestGoldenExpositionOfASimulatedH100Node pins the whole exposition of an h100x8 node: an
// XID 79 on GPU 2 (seen in the kernel log and as an event), GPU 5 degraded, GPU 0 held by a
// pod, a failed acceptance run after a passed one. Run with -update to rewrite it after an
// intended change, and read the diff.
func TestGoldenExpositionOfASimulatedH100Node(t *testing.T) {
	e, _, _ := fullExporter(t, faultyH100, nil)
	got := exposition(t, e)
	path := filepath.Join("testdata", "h100x8.prom")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exposition differs from %s (run go test -run Golden -update ./internal/metrics/ and read the diff):\n%s", path, got)
	}
	// The same scrape twice is the same exposition: nothing but durations moves.
	if again := exposition(t, e); !bytes.Equal(again, got) {
		t.Error("a second scrape of a still node differs from the first")
	}
}
