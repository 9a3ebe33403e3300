package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/record"
)

func TestAcceptExitCodesAndVerdicts(t *testing.T) {
	dir := t.TempDir()
	xid79 := writeFile(t, dir, "xid79.yaml", scenarioXID79)
	remap := writeFile(t, dir, "remap.yaml", scenarioRowRemap)
	at30s := writeFile(t, dir, "at30s.yaml", strings.Replace(scenarioRowRemap, "  - gpu: 2", "  - at: 30s\n    gpu: 2", 1))
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		absent   []string // not on stdout
	}{
		{"a healthy simulated H100 node passes",
			[]string{"--sim", "h100x8"}, ExitOK,
			[]string{"PASSED: node acceptance on test-node", "PASS   hardware.gpu-count", "note: simulated GPUs"}, []string{"FAIL"}},
		{"a GPU that falls off the bus at 0s fails the node and names the check",
			[]string{"--sim", xid79}, ExitFail,
			[]string{"FAILED: node acceptance on test-node", "FAIL   hardware.gpu-responding", "GPU 2",
				"FAIL   hardware.xid-since-boot", "fix: "}, nil},
		{"a pending row remap at 0s fails the node and names the check",
			[]string{"--sim", remap}, ExitFail,
			[]string{"FAILED:", "FAIL   hardware.row-remap", "GPU 2: row remap pending"}, []string{"FAIL   hardware.gpu-responding"}},
		{"a fault timed at 30s has not happened at the start",
			[]string{"--sim", at30s}, ExitOK, []string{"PASSED:"}, nil},
		{"a fault timed at 30s has happened once --sim-elapsed passes it",
			[]string{"--sim", at30s, "--sim-elapsed", "1m"}, ExitFail,
			[]string{"FAILED:", "FAIL   hardware.row-remap", "GPU 2: row remap pending"}, nil},
		{"expecting 4 GPUs on an 8-GPU node fails the GPU count",
			[]string{"--sim", "h100x8", "--expect-gpus", "4"}, ExitFail,
			[]string{"FAILED:", "FAIL   hardware.gpu-count", "8 GPUs found, 4 expected"}, []string{"FAIL   hardware.gpu-model"}},
		{"expecting H200s on an H100 node fails the GPU model",
			[]string{"--sim", "h100x8", "--expect-model", "NVIDIA H200"}, ExitFail,
			[]string{"FAILED:", "FAIL   hardware.gpu-model", `expected "NVIDIA H200"`}, []string{"FAIL   hardware.gpu-count"}},
		{"expecting exactly the 8 H100s there are passes",
			[]string{"--sim", "h100x8", "--expect-gpus", "8", "--expect-model", "NVIDIA H100 80GB HBM3"}, ExitOK,
			[]string{"PASSED:", "8 GPUs, as expected"}, nil},
		{"running only the host layer runs no hardware check",
			[]string{"--sim", "h100x8", "--layers", "L0"}, ExitOK,
			[]string{"PASSED:", "host.os"}, []string{"hardware."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, append([]string{"accept", "-q", "--node-name", "test-node"}, tc.args...)...)
			r.check(t, tc.code, tc.inStdout, nil)
			if tc.code == ExitFail && strings.Contains(r.stderr, "gpunode:") {
				t.Errorf("a failed node printed an error as well as the table:\n%s", r.stderr)
			}
			for _, s := range tc.absent {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout holds %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

func TestAcceptProgressOnStderr(t *testing.T) {
	layerLine := regexp.MustCompile(`(?m)^L[01] (host|hardware): \d+ checks: \d+ pass, \d+ warn, \d+ fail, \d+ skip$`)
	cases := []struct {
		name  string
		quiet bool
	}{
		{"piped progress is plain lines, one per layer", false},
		{"-q prints no progress at all", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"accept", "--sim", "h100x8", "--node-name", "n"}
			if tc.quiet {
				args = append(args, "-q")
			}
			r := execute(t, args...)
			r.check(t, ExitOK, []string{"PASSED:"}, nil)
			if tc.quiet {
				if r.stderr != "" {
					t.Errorf("-q still wrote to stderr:\n%s", r.stderr)
				}
				return
			}
			if got := layerLine.FindAllString(r.stderr, -1); len(got) != 2 {
				t.Errorf("want one plain line per layer, found %q in:\n%s", got, r.stderr)
			}
			for _, want := range []string{"L0 host: 16 checks: 16 pass, 0 warn, 0 fail, 0 skip\n", "reading GPUs\n", "GPUs: ok ("} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("progress lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.ContainsAny(r.stderr, "\r\033") {
				t.Errorf("piped progress holds terminal control characters: %q", r.stderr)
			}
		})
	}
}

func TestAcceptOutputFormats(t *testing.T) {
	var labels []string
	for _, l := range (&record.Template{}).Labels() {
		labels = append(labels, "| "+l.Label+" |")
	}
	cases := []struct {
		name     string
		format   string
		code     int
		inStdout []string
		inStderr []string
	}{
		{"markdown prints every template label", "markdown", ExitOK, append([]string{"# Node acceptance record: test-node"}, labels...), nil},
		{"table is the default's spelled-out name", "table", ExitOK, []string{"STATUS CHECK", "PASSED:"}, nil},
		{"yaml prints the versioned record", "yaml", ExitOK, []string{"apiVersion: gpunode.dev/record/v1", "kind: AcceptanceRecord"}, nil},
		{"text is the table under the name other commands use", "text", ExitOK, []string{"STATUS CHECK", "PASSED:"}, nil},
		{"xml is refused naming --format", "xml", ExitUsage, nil, []string{`--format "xml"`, "table, text, json, yaml or markdown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, "accept", "-q", "--sim", "h100x8", "--node-name", "test-node", "--format", tc.format)
			r.check(t, tc.code, tc.inStdout, tc.inStderr)
			if tc.code == ExitUsage && r.stdout != "" {
				t.Errorf("a refused format printed on stdout:\n%s", r.stdout)
			}
		})
	}
}

func TestAcceptJSONIsAVersionedRecord(t *testing.T) {
	cases := []struct {
		name string
		flag []string
	}{
		{"--format json prints the record", []string{"--format", "json"}},
		{"-o json is the short form", []string{"-o", "json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, append([]string{"accept", "-q", "--sim", "h100x8", "--node-name", "test-node"}, tc.flag...)...)
			r.check(t, ExitOK, nil, nil)
			var rec record.Record
			if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if rec.APIVersion != "gpunode.dev/record/v1" || rec.Result != record.ResultPassed || rec.Node != "test-node" || rec.Backend != "sim" {
				t.Errorf("apiVersion %q result %q node %q backend %q", rec.APIVersion, rec.Result, rec.Node, rec.Backend)
			}
			if len(rec.GPUs) != 8 || len(rec.Checks) == 0 || rec.Policy.Source != "built-in" || len(rec.Policy.SHA256) != 64 {
				t.Errorf("%d GPUs, %d checks, policy %+v", len(rec.GPUs), len(rec.Checks), rec.Policy)
			}
		})
	}
}
