package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = "xid\tmnemonic\tdescription\tapplies\timmediate\tinvestigatory\traises154\tcomponent\tseverity\taction\tnote\n"

func TestRunWritesTheGeneratedTable(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "c.tsv"), filepath.Join(dir, "c_gen.go")
	row := "79\tFALLEN\tGPU has fallen off the bus\tY/Y/Y/Y\tRESTART_BM\t\t\tpcie\tfatal\treboot-node\t\n"
	if err := os.WriteFile(in, []byte(header+row), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(src), "DO NOT EDIT") || !strings.Contains(string(src), "XID: 79") {
		t.Errorf("generated %q, %v", src, err)
	}
}

func TestRunRefusesABadTableAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "c.tsv"), filepath.Join(dir, "c_gen.go")
	if err := os.WriteFile(in, []byte(header+"79\tFALLEN\tx\tY/Y/Y/Y\tRESTART_BM\t\t\tpcie\tdoom\treboot-node\t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(in, out)
	if err == nil || !strings.Contains(err.Error(), "c.tsv:2:") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
	if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
		t.Errorf("a bad table still wrote %s", out)
	}
	if err := run(filepath.Join(dir, "missing.tsv"), out); err == nil {
		t.Error("a missing table should fail")
	}
}
