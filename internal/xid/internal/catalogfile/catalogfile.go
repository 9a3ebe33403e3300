// Package catalogfile reads the XID catalog table (internal/xid/catalog.tsv), checks every
// row, and renders the Go table that `go generate` writes to internal/xid/catalog_gen.go.
// The generator (internal/xid/gen) and the freshness test share it, so a stale table fails.
package catalogfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
)

// Columns is the header every catalog file starts with (after comment lines).
var Columns = []string{"xid", "mnemonic", "description", "applies", "immediate", "investigatory",
	"raises154", "component", "severity", "action", "note"}

// Buckets are the catalog's immediate-action buckets; "" is a row without one (162-170).
var Buckets = []string{"", "IGNORE", "RESTART_APP", "RESET_GPU", "RESTART_BM", "RESTART_VM",
	"CONTACT_SUPPORT", "CHECK_UVM", "XID_154", "WORKFLOW_XID_13", "WORKFLOW_XID_31",
	"WORKFLOW_XID_45", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR"}

// Row is one checked catalog row.
type Row struct {
	XID                      int
	Mnemonic, Description    string
	A100, H100, B100, GB200  bool
	Immediate, Investigatory string
	Raises154                string
	Component                fault.Component
	Severity                 fault.Severity
	Action                   fault.Action
	Note                     string
	line                     int
}

// Parse reads a catalog file. name is used in errors, which carry the line number.
// Lines starting with '#' and blank lines are ignored. Rows come back sorted by XID.
func Parse(r io.Reader, name string) ([]Row, error) {
	sc := bufio.NewScanner(r)
	var rows []Row
	seen := map[int]int{}
	header := false
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if !header {
			if !slices.Equal(fields, Columns) {
				return nil, fmt.Errorf("%s:%d: header is %q, want %q", name, n, fields, Columns)
			}
			header = true
			continue
		}
		row, err := parseRow(fields)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if prev, dup := seen[row.XID]; dup {
			return nil, fmt.Errorf("%s:%d: XID %d again (first on line %d)", name, n, row.XID, prev)
		}
		seen[row.XID] = n
		row.line = n
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: no header line (want %q)", name, Columns)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	slices.SortFunc(rows, func(a, b Row) int { return a.XID - b.XID })
	return rows, nil
}

func parseRow(f []string) (Row, error) {
	if len(f) != len(Columns) {
		return Row{}, fmt.Errorf("%d columns, want %d (tab-separated: %s)", len(f), len(Columns), strings.Join(Columns, ", "))
	}
	var r Row
	var err error
	if r.XID, err = strconv.Atoi(f[0]); err != nil || r.XID <= 0 {
		return Row{}, fmt.Errorf("xid %q: not a positive number", f[0])
	}
	if r.Mnemonic, r.Description = f[1], f[2]; r.Mnemonic == "" || r.Description == "" {
		return Row{}, fmt.Errorf("XID %d: mnemonic and description must not be empty", r.XID)
	}
	if r.A100, r.H100, r.B100, r.GB200, err = parseApplies(f[3]); err != nil {
		return Row{}, fmt.Errorf("XID %d: %w", r.XID, err)
	}
	if !slices.Contains(Buckets, f[4]) {
		return Row{}, fmt.Errorf("XID %d: unknown immediate-action bucket %q (want one of %q)", r.XID, f[4], Buckets)
	}
	r.Immediate, r.Investigatory, r.Raises154 = f[4], f[5], f[6]
	if r.Component, err = fault.ParseComponent(f[7]); err != nil {
		return Row{}, fmt.Errorf("XID %d: %w", r.XID, err)
	}
	if r.Severity, err = fault.ParseSeverity(f[8]); err != nil {
		return Row{}, fmt.Errorf("XID %d: %w", r.XID, err)
	}
	if r.Action, err = fault.ParseAction(f[9]); err != nil {
		return Row{}, fmt.Errorf("XID %d: %w", r.XID, err)
	}
	r.Note = f[10]
	return r, checkMapping(r)
}

// checkMapping rejects mappings the health engine could not act on.
func checkMapping(r Row) error {
	switch {
	case r.Severity.Rank() >= fault.SeverityCritical.Rank() && r.Action == fault.ActionNone:
		return fmt.Errorf("XID %d: severity %s needs an action other than none", r.XID, r.Severity)
	case r.Severity == fault.SeverityInfo && r.Action != fault.ActionNone:
		return fmt.Errorf("XID %d: severity info cannot require action %s", r.XID, r.Action)
	}
	return nil
}

func parseApplies(s string) (a, h, b, g bool, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return false, false, false, false, fmt.Errorf("applies %q: want four Y or N separated by / (A100/H100/B100/GB200)", s)
	}
	var v [4]bool
	for i, p := range parts {
		switch p {
		case "Y":
			v[i] = true
		case "N":
		default:
			return false, false, false, false, fmt.Errorf("applies %q: %q is not Y or N", s, p)
		}
	}
	return v[0], v[1], v[2], v[3], nil
}

// Render writes the generated Go file (package xid) for rows, gofmt'ed.
func Render(rows []Row) ([]byte, error) {
	if len(rows) == 0 {
		return nil, errors.New("no rows to render")
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./gen from catalog.tsv; DO NOT EDIT.\n\npackage xid\n\n")
	b.WriteString("// catalog holds every row of catalog.tsv, sorted by XID.\nvar catalog = [...]Entry{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "\t{XID: %d, Mnemonic: %q, Description: %q,\n", r.XID, r.Mnemonic, r.Description)
		fmt.Fprintf(&b, "\t\tApplies: Applies{A100: %t, H100: %t, B100: %t, GB200: %t},\n", r.A100, r.H100, r.B100, r.GB200)
		fmt.Fprintf(&b, "\t\tBucket: %q, Investigatory: %q, Raises154Since: %q,\n", r.Immediate, r.Investigatory, r.Raises154)
		fmt.Fprintf(&b, "\t\tComponent: %q, Severity: %q, Action: %q, Known: true,\n", r.Component, r.Severity, r.Action)
		fmt.Fprintf(&b, "\t\tNote: %q},\n", r.Note)
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated catalog: %w", err)
	}
	return out, nil
}
