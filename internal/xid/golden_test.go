package xid

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus/*.golden.jsonl from the decoder's output")

// TestGoldenCorpus decodes every testdata/corpus/*.log (one kernel-log format or family of
// messages each) and compares the JSON lines with the .golden.jsonl beside it. After a
// deliberate change, run `go test ./internal/xid/ -run Golden -update` and review the diff.
func TestGoldenCorpus(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got := decodeFile(t, path)
			golden := strings.TrimSuffix(path, ".log") + ".golden.jsonl"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n%s", path, golden, lineDiff(string(want), string(got)))
			}
		})
	}
}

func decodeFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	scan, err := ScanAll(context.Background(), f, path)
	evs := scan.Events
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, d := range Decode(evs, Options{}) {
		if err := enc.Encode(d.Record()); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// lineDiff shows the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}
