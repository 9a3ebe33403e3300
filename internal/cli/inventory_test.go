package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

func TestInventoryLabelsAreSortedKeyValueLines(t *testing.T) {
	r := execute(t, "inventory", "--sim", "h200x8", "--labels")
	r.check(t, ExitOK, nil, nil)
	if r.stderr != "" {
		t.Errorf("--labels wrote progress on stderr:\n%s", r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if !sort.StringsAreSorted(lines) {
		t.Errorf("labels are not sorted:\n%s", r.stdout)
	}
	got := map[string]string{}
	for _, l := range lines {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			t.Fatalf("line %q is not key=value", l)
		}
		got[k] = v
	}
	want := map[string]string{
		"nvidia.com/gpu.product":              "NVIDIA-H200",
		"nvidia.com/gpu.count":                "8",
		"gpunode.dev/accelerator-class":       "h200-141g",
		"gpunode.dev/accelerator-count":       "8",
		"nvidia.com/cuda.driver-version.full": "580.95.05",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestInventoryJSONHoldsGPUAndHostFacts(t *testing.T) {
	r := execute(t, "inventory", "--sim", "h200x8", "--json", "--node-name", "inv-node")
	r.check(t, ExitOK, nil, nil)
	var doc struct {
		Node string `json:"node"`
		GPU  struct {
			Backend string           `json:"backend"`
			Devices []map[string]any `json:"devices"`
		} `json:"gpu"`
		Host   map[string]any    `json:"host"`
		XIDs   []any             `json:"xids"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
	}
	if doc.Node != "inv-node" || doc.GPU.Backend != "sim" || len(doc.GPU.Devices) != 8 {
		t.Errorf("node %q backend %q with %d devices, want inv-node, sim, 8", doc.Node, doc.GPU.Backend, len(doc.GPU.Devices))
	}
	for _, k := range []string{"os", "kernel", "boot", "cgroup", "cpu", "numaNodes", "memory", "disks", "containerd", "cdi"} {
		if _, ok := doc.Host[k]; !ok {
			t.Errorf("host facts lack %q", k)
		}
	}
	if doc.XIDs == nil || len(doc.XIDs) != 0 {
		t.Errorf("xids %v, want an empty list on a healthy node", doc.XIDs)
	}
	if doc.Labels["nvidia.com/gpu.product"] != "NVIDIA-H200" {
		t.Errorf("labels %v lack the product", doc.Labels)
	}
}

func TestInventoryTextSummarizesTheNode(t *testing.T) {
	r := execute(t, "inventory", "-q", "--sim", "h100x8", "--node-name", "inv-node")
	r.check(t, ExitOK, []string{"Node: inv-node", "Driver: 580.95.05", "NVIDIA H100 80GB HBM3", "00000000:18:00.0",
		"OS: Ubuntu 22.04.4 LTS", "XIDs since boot: 0", "nvidia.com/gpu.count=8"}, nil)
}

func TestInventoryRefusesABadLabelMapping(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, path, inStderr string }{
		{"a YAML syntax error", writeFile(t, dir, "syntax.yaml", "rules: [\n"), "syntax.yaml:1: "},
		{"an unknown key", writeFile(t, dir, "unknown.yaml", "rules: []\nrulez: []\n"), `unknown.yaml:2: unknown key "rulez"`},
		{"a missing file", filepath.Join(dir, "missing.yaml"), "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, "inventory", "--sim", "h200x8", "--labels", "--label-mapping", tc.path)
			r.check(t, ExitUsage, nil, []string{tc.path, tc.inStderr})
			if r.stdout != "" {
				t.Errorf("a bad mapping printed labels:\n%s", r.stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	r := execute(t, "version")
	r.check(t, ExitOK, nil, nil)
	line := regexp.MustCompile(`^gpunode \S+ \(commit \S+, go\S+, ` + regexp.QuoteMeta(runtime.GOOS+"/"+runtime.GOARCH) + `\)\n$`)
	if !line.MatchString(r.stdout) {
		t.Errorf("version prints %q", r.stdout)
	}

	r = execute(t, "version", "--json")
	r.check(t, ExitOK, nil, nil)
	var info map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatalf("version --json does not parse: %v\n%s", err, r.stdout)
	}
	if info["version"] == "" || info["version"] == nil || info["goVersion"] != runtime.Version() || info["platform"] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json = %v", info)
	}
}
