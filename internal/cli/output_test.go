package cli

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// documentCommands are the commands that print one document, with arguments that make
// them print it quickly on simulated GPUs.
var documentCommands = []struct {
	name string
	args []string
	code int // the exit code the arguments give, whatever the format
}{
	{"version prints its identity", []string{"version"}, 0},
	{"xid explain prints the catalog entry", []string{"xid", "explain", "79"}, 0},
	{"inventory prints every fact", []string{"inventory", "--sim", "h100x8"}, 0},
	{"doctor prints its report", []string{"doctor", "--sim", "h100x8"}, 0},
	{"stress prints its report", []string{"stress", "-q", "--sim", "h200x1", "--tests", "fp64"}, 0},
}

func TestEveryCommandThatPrintsADocumentPrintsTheSameOneAsJSONAndAsYAML(t *testing.T) {
	for _, c := range documentCommands {
		t.Run(c.name, func(t *testing.T) {
			asJSON := execute(t, append(c.args, "-o", "json")...)
			asYAML := execute(t, append(c.args, "-o", "yaml")...)
			alias := execute(t, append(c.args, "--json")...)
			for _, r := range []result{asJSON, asYAML, alias} {
				if r.code != c.code {
					t.Fatalf("exit code %d, want %d\nstderr:\n%s", r.code, c.code, r.stderr)
				}
			}
			var fromJSON, fromYAML, fromAlias map[string]any
			if err := json.Unmarshal([]byte(asJSON.stdout), &fromJSON); err != nil {
				t.Fatalf("-o json is not one JSON object: %v\n%s", err, asJSON.stdout)
			}
			if err := yaml.Unmarshal([]byte(asYAML.stdout), &fromYAML); err != nil {
				t.Fatalf("-o yaml is not YAML: %v\n%s", err, asYAML.stdout)
			}
			if err := json.Unmarshal([]byte(alias.stdout), &fromAlias); err != nil {
				t.Fatalf("--json is not one JSON object: %v\n%s", err, alias.stdout)
			}
			// Times and measured figures differ between runs: compare the keys, which say
			// the documents are the same document.
			if got, want := keysOf(fromYAML), keysOf(fromJSON); !reflect.DeepEqual(got, want) {
				t.Errorf("-o yaml has keys %v, -o json %v", got, want)
			}
			if got, want := keysOf(fromAlias), keysOf(fromJSON); !reflect.DeepEqual(got, want) {
				t.Errorf("--json has keys %v, -o json %v", got, want)
			}
		})
	}
}

func TestABadOutputFormatIsAUsageErrorNamingTheFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown format", []string{"version", "-o", "xml"}, `-o/--output "xml": must be text, table, json or yaml`},
		{"--json beside -o yaml", []string{"xid", "explain", "79", "--json", "-o", "yaml"}, "--json and -o yaml: choose one"},
		{"an unknown format on a streaming command", []string{"xid", "decode", "-o", "csv", "/dev/null"}, `-o/--output "csv"`},
		{"an unknown format on accept", []string{"accept", "--sim", "h100x8", "-o", "csv"}, `-o/--format "csv": want table, text, json, yaml or markdown`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			execute(t, c.args...).check(t, ExitUsage, nil, []string{c.want})
		})
	}
}

func TestTableIsTheTextFormatUnderKubectlsName(t *testing.T) {
	text := execute(t, "xid", "explain", "79")
	table := execute(t, "xid", "explain", "79", "-o", "table")
	if text.code != 0 || table.code != 0 || text.stdout != table.stdout {
		t.Errorf("-o table printed (exit %d)\n%s\nwant what no -o prints (exit %d)\n%s", table.code, table.stdout, text.code, text.stdout)
	}
}

func TestAStreamPrintsOneJSONLineOrOneYAMLDocumentPerEvent(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "kern.log", strings.Join([]string{
		"[  100.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
		"[  200.000000] NVRM: Xid (PCI:0000:86:00): 48, pid=1234, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
	}, "\n")+"\n")
	asJSON := execute(t, "xid", "decode", log, "-o", "json")
	asYAML := execute(t, "xid", "decode", log, "-o", "yaml")
	if asJSON.code != 0 || asYAML.code != 0 {
		t.Fatalf("exit codes %d and %d, want 0\n%s%s", asJSON.code, asYAML.code, asJSON.stderr, asYAML.stderr)
	}
	lines := strings.Split(strings.TrimSpace(asJSON.stdout), "\n")
	docs := strings.Split(strings.TrimPrefix(asYAML.stdout, "---\n"), "---\n")
	if len(lines) != 2 || len(docs) != 2 {
		t.Fatalf("%d JSON lines and %d YAML documents, want 2 each:\n%s\n%s", len(lines), len(docs), asJSON.stdout, asYAML.stdout)
	}
	for i := range lines {
		var a, b map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &a); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if err := yaml.Unmarshal([]byte(docs[i]), &b); err != nil {
			t.Fatalf("document %d is not YAML: %v", i, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("event %d: JSON %v, YAML %v", i, a, b)
		}
	}
}

func TestVersionFlagPrintsTheLineTheVersionCommandPrints(t *testing.T) {
	flag := execute(t, "--version")
	cmd := execute(t, "version")
	if flag.code != 0 || flag.stdout != cmd.stdout || !strings.HasPrefix(flag.stdout, "gpunode ") {
		t.Errorf("--version printed %q (exit %d), `gpunode version` %q", flag.stdout, flag.code, cmd.stdout)
	}
}

func keysOf(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

func TestABadListenAddressIsUsageAndAnAddressInUseIsAFailure(t *testing.T) {
	cases := []struct {
		name string
		addr string
		code int
		want string
	}{
		{"a port that is not a number", "127.0.0.1:http-ish", ExitUsage, `port "http-ish": want a number from 0 to 65535`},
		{"no port at all", "127.0.0.1", ExitUsage, "want HOST:PORT"},
		{"a port out of range", ":70000", ExitUsage, `port "70000"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			execute(t, "exporter", "--sim", "h100x8", "--web.listen-address", c.addr).check(t, c.code, nil, []string{"--web.listen-address", c.want})
		})
	}
}
