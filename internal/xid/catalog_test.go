package xid

import (
	"bytes"
	"os"
	"testing"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/xid/internal/catalogfile"
)

// TestCatalogIsFresh regenerates the Go table from catalog.tsv and fails when
// catalog_gen.go differs: edit the TSV, then run `go generate ./internal/xid/`.
func TestCatalogIsFresh(t *testing.T) {
	tsv, err := os.ReadFile("catalog.tsv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := catalogfile.Parse(bytes.NewReader(tsv), "catalog.tsv")
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalogfile.Render(rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("catalog_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("catalog_gen.go is stale: run `go generate ./internal/xid/`")
	}
	if len(catalog) != len(rows) {
		t.Fatalf("%d entries, %d rows", len(catalog), len(rows))
	}
}

func TestLookupFindsEveryRowAndDefaultsTheRest(t *testing.T) {
	for _, e := range catalog {
		got, ok := Lookup(e.XID)
		if !ok || got != e || !got.Known {
			t.Errorf("Lookup(%d) = %+v, %v", e.XID, got, ok)
		}
		if e.Component == "" || e.Severity.Rank() < 0 || e.Action.Rank() < 0 {
			t.Errorf("XID %d maps outside the taxonomy: %+v", e.XID, e)
		}
	}
	for _, code := range []int{0, 1, 171, 99999} {
		got, ok := Lookup(code)
		if ok || got.Known || got.XID != code || got.Severity != fault.SeverityWarning || got.Action != fault.ActionNone {
			t.Errorf("Lookup(%d) = %+v, %v; want the unknown default", code, got, ok)
		}
	}
}

func TestTheMappingDecisionsTheDocsStateHold(t *testing.T) {
	cases := []struct {
		name string
		xid  int
		c    fault.Component
		s    fault.Severity
		a    fault.Action
	}{
		{"a contained error (94) restarts the application", 94, fault.ComponentApplication, fault.SeverityWarning, fault.ActionRestartApp},
		{"an uncontained error (95) resets the GPU", 95, fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU},
		{"a double-bit error (48) resets the GPU", 48, fault.ComponentMemory, fault.SeverityCritical, fault.ActionResetGPU},
		{"a row-remap failure (64) is service", 64, fault.ComponentMemory, fault.SeverityFatal, fault.ActionService},
		{"a GPU fallen off the bus (79) reboots the node", 79, fault.ComponentPCIe, fault.SeverityFatal, fault.ActionRebootNode},
		{"a GSP timeout (119) is a driver fault", 119, fault.ComponentDriver, fault.SeverityCritical, fault.ActionResetGPU},
		{"a key-rotation error (151) restarts the VM, that is the node", 151, fault.ComponentNode, fault.SeverityCritical, fault.ActionRebootNode},
		{"an NVLink error (74) is the interconnect", 74, fault.ComponentInterconnect, fault.SeverityCritical, fault.ActionResetGPU},
		{"a remap event (63) is a memory warning", 63, fault.ComponentMemory, fault.SeverityWarning, fault.ActionNone},
		{"an unused code (61) goes to the vendor", 61, fault.ComponentGPU, fault.SeverityFatal, fault.ActionService},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := Lookup(tc.xid)
			if e.Component != tc.c || e.Severity != tc.s || e.Action != tc.a {
				t.Errorf("XID %d = %s/%s/%s", tc.xid, e.Component, e.Severity, e.Action)
			}
		})
	}
}
