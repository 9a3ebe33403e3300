package chart_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// documentedPages are the pages whose helm commands, install-modes table and values examples
// are rendered with the real helm.
var documentedPages = []string{"../../docs/install.md", "../../docs/monitoring.md", chartDir + "/README.md"}

// documented is one values combination a page shows: the helm arguments that render it and
// the values it sets (path=value; a list or object value as JSON).
type documented struct {
	where    string
	args     []string // --set/--set-string pairs; a YAML example is written to a file for -f
	yaml     string
	settings []setting
}

// setting is one value a page sets, with the flag it is set with (--set, --set-string; ""
// for a YAML example's).
type setting struct{ flag, path, value string }

// presetPlaceholder stands for "any preset" in the install-modes table.
const presetPlaceholder = "PRESET"

var (
	fence     = regexp.MustCompile("^\\s*```(\\w*)\\s*$")
	cellValue = regexp.MustCompile("`([A-Za-z][A-Za-z0-9.]*)=([^`\\s]+)`")
	entryPath = regexp.MustCompile("^- \\*\\*`([A-Za-z0-9.]+)`\\*\\*")
)

// documentedCombinations extracts every values combination of page: each `helm install` or
// `helm upgrade` of the chart (an upgrade with --reuse-values adds to the page's install
// before it), each row of an install-modes table, and each YAML example of chart values (in
// the chart's README, nested under the value it illustrates).
func documentedCombinations(t *testing.T, page string, topKeys []string) []documented {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []documented
	var lastInstall []setting
	lang, fenceIndent, block, entry := "", "", []string(nil), ""
	inTable := false
	for n, line := range strings.Split(string(text), "\n") {
		where := fmt.Sprintf("%s:%d", strings.TrimPrefix(page, "../../"), n+1)
		if m := fence.FindStringSubmatch(line); m != nil {
			if block == nil {
				lang, block = m[1], []string{}
				fenceIndent = line[:len(line)-len(strings.TrimLeft(line, " "))]
				continue
			}
			switch lang {
			case "sh", "bash":
				for _, cmd := range helmCommands(block) {
					s := setArgs(cmd)
					if slices.Contains(cmd, "--reuse-values") {
						s = append(slices.Clone(lastInstall), s...)
					} else {
						lastInstall = s
					}
					out = append(out, fromSettings(where, s))
				}
			case "yaml":
				if d, ok := valuesExample(t, where, strings.Join(block, "\n"), entry, topKeys); ok {
					out = append(out, d)
				}
			}
			block = nil
			continue
		}
		if block != nil {
			block = append(block, strings.TrimPrefix(line, fenceIndent))
			continue
		}
		if m := entryPath.FindStringSubmatch(line); m != nil {
			entry = m[1]
		}
		if strings.HasPrefix(line, "| Situation | Values |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			inTable = false
		}
		if inTable && !strings.HasPrefix(line, "|---") {
			out = append(out, tableRow(t, where, line))
		}
	}
	return out
}

// helmCommands joins continued lines and returns each helm install or upgrade of the chart,
// split into words.
func helmCommands(block []string) [][]string {
	var out [][]string
	joined := strings.ReplaceAll(strings.Join(block, "\n"), "\\\n", " ")
	for line := range strings.SplitSeq(joined, "\n") {
		words := strings.Fields(line)
		if len(words) > 2 && words[0] == "helm" && (words[1] == "install" || words[1] == "upgrade") && slices.Contains(words, "./charts/gpunode") {
			out = append(out, words)
		}
	}
	return out
}

func setArgs(words []string) []setting {
	var out []setting
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "--set" || words[i] == "--set-string" {
			path, value, _ := strings.Cut(words[i+1], "=")
			out = append(out, setting{words[i], path, value})
		}
	}
	return out
}

func fromSettings(where string, s []setting) documented {
	d := documented{where: where, settings: s}
	for _, v := range s {
		d.args = append(d.args, v.flag, v.path+"="+v.value)
	}
	return d
}

// tableRow is the combination of one install-modes row: every `path=value` in its Values
// cell (the last; the first may name the GPU Operator's values).
func tableRow(t *testing.T, where, line string) documented {
	t.Helper()
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	var s []setting
	for _, m := range cellValue.FindAllStringSubmatch(cells[len(cells)-1], -1) {
		value := m[2]
		if value == presetPlaceholder {
			value = "h100x8"
		}
		s = append(s, setting{"--set", m[1], value})
	}
	if len(s) == 0 {
		t.Errorf("%s: the install-modes row names no `value=...` to render: %s", where, line)
	}
	return fromSettings(where+" (install modes)", s)
}

// valuesExample is a YAML block of chart values: top-level keys of values.yaml, or (in the
// chart's README) a fragment whose first key is the last part of the entry it follows.
func valuesExample(t *testing.T, where, text, entry string, topKeys []string) (documented, bool) {
	t.Helper()
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) != 1 ||
		doc.Content[0].Kind != yamlv3.MappingNode || len(doc.Content[0].Content) == 0 {
		return documented{}, false // not a mapping: a Dockerfile, a scalar
	}
	first := doc.Content[0].Content[0].Value
	var tree any
	if err := yaml.Unmarshal([]byte(text), &tree); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	switch {
	case slices.Contains(topKeys, first):
	case entry != "" && strings.HasSuffix("."+entry, "."+first):
		parts := strings.Split(entry, ".")
		for i := len(parts) - 2; i >= 0; i-- {
			tree = map[string]any{parts[i]: tree}
		}
	default:
		return documented{}, false // a Kubernetes object, a Prometheus file
	}
	full, err := yaml.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(full, &values); err != nil {
		t.Fatal(err)
	}
	d := documented{where: where + " (values example)", yaml: string(full)}
	flatten("", values, &d.settings)
	return d, true
}

// flatten lists the leaves of values as path=value; a list as JSON.
func flatten(prefix string, v any, out *[]setting) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			flatten(strings.TrimPrefix(prefix+"."+k, "."), m[k], out)
		}
		return
	}
	if s, ok := v.(string); ok {
		*out = append(*out, setting{"", prefix, s})
		return
	}
	j, _ := json.Marshal(v)
	*out = append(*out, setting{"", prefix, string(j)})
}
