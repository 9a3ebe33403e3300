package record

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
)

func TestJSONRoundTripsAndIsVersioned(t *testing.T) {
	cases := []struct {
		name   string
		faults []sim.Fault
	}{
		{"a passing record", nil},
		{"a failing record with evidence and fixes", []sim.Fault{{GPU: 3, Type: sim.FaultXID, XID: 48}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(simulatedInput(t, "h100x8", tc.faults...))
			data, err := JSON(r)
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			if !bytes.HasSuffix(data, []byte("}\n")) {
				t.Errorf("JSON does not end in a newline")
			}
			var back Record
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("the record's JSON does not parse: %v", err)
			}
			if !reflect.DeepEqual(&back, r) {
				t.Errorf("the record changed in a JSON round trip:\n got %+v\nwant %+v", back, *r)
			}
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatalf("JSON as a map: %v", err)
			}
			if doc["apiVersion"] != APIVersion || doc["kind"] != Kind || doc["id"] != r.ID || doc["result"] != r.Result {
				t.Errorf("apiVersion %v kind %v id %v result %v", doc["apiVersion"], doc["kind"], doc["id"], doc["result"])
			}
		})
	}
}

func TestMarkdownHasEveryTemplateLabelInSeedOrder(t *testing.T) {
	cases := []struct {
		name     string
		faults   []sim.Fault
		sha      string
		findings []string // in the findings section; none means no section
	}{
		{name: "a passing record has no findings", sha: ""},
		{name: "a failing record lists the failing check with its fix and evidence",
			faults: []sim.Fault{{GPU: 2, Type: sim.FaultRowRemapPending}},
			sha:    strings.Repeat("ab", 32),
			findings: []string{"### FAIL `hardware.row-remap`", "GPU 2: row remap pending",
				"**Fix:** drain the GPU's work, then reset it", "- GPU 2 ("}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(simulatedInput(t, "h100x8", tc.faults...))
			var b strings.Builder
			if err := Markdown(&b, r, tc.sha); err != nil {
				t.Fatalf("Markdown: %v", err)
			}
			md := b.String()
			pos := 0
			for _, l := range r.Template.Labels() {
				i := strings.Index(md[pos:], "| "+l.Label+" | ")
				if i < 0 {
					t.Fatalf("label %q missing or out of seed order in:\n%s", l.Label, md)
				}
				pos += i + 1
			}
			if !strings.Contains(md, "| Node | gpu-node-07 |") {
				t.Errorf("the Node row does not carry the node name")
			}
			if !strings.Contains(md, "| NIC / RDMA driver | _n/a: "+r.Template.NICRDMA.NotApplicable+"_ |") {
				t.Errorf("a not-applicable field is not rendered with its reason")
			}
			if !strings.Contains(md, "**Result: "+strings.ToUpper(r.Result)+"**") || !strings.Contains(md, "`"+r.ID+"`") {
				t.Errorf("the header does not carry the result and the ID")
			}
			if !strings.Contains(md, "**simulated**") {
				t.Errorf("a record from simulated GPUs does not say so")
			}
			if got := strings.Contains(md, "Machine-readable record: sha256"); got != (tc.sha != "") || !strings.Contains(md, tc.sha) {
				t.Errorf("sha256 line present %v, want %v (sha %q)", got, tc.sha != "", tc.sha)
			}
			for _, c := range r.Checks {
				if !strings.Contains(md, "`"+c.ID+"`") {
					t.Errorf("check %s is not listed", c.ID)
				}
			}
			_, findings, has := strings.Cut(md, "\n## Findings and fixes\n")
			if has != (len(tc.findings) > 0) {
				t.Fatalf("findings section present %v, want %v", has, len(tc.findings) > 0)
			}
			for _, want := range tc.findings {
				if !strings.Contains(findings, want) {
					t.Errorf("findings lack %q:\n%s", want, findings)
				}
			}
		})
	}
}

func TestMarkdownCellsEscapePipesAndNewlines(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"an empty value becomes a dash", "", "-"},
		{"a pipe is escaped", "a|b", `a\|b`},
		{"a newline becomes a space", "a\nb", "a b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cell(tc.in); got != tc.want {
				t.Errorf("cell(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
