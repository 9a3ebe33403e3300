package nodepolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
)

const fileHeader = "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  name: p\nspec:\n"

// spec is a policy file whose spec is body (indented by the caller's two spaces); line n of
// body is line 5+n of the file.
func spec(body string) string {
	var b strings.Builder
	b.WriteString(fileHeader)
	for _, l := range strings.SplitAfter(body, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

func TestAPolicyFileIsTheGPUNodePolicyKubectlApplies(t *testing.T) {
	gp, err := Parse("fleet.yaml", []byte(spec(`nodeSelector:
  matchLabels: {pool: a}
classes:
  - class: h100-80g
    gpus: 8
    model: NVIDIA H100 80GB HBM3
versions:
  driver: [">=570"]
acceptance:
  layers: [host, hardware, performance, kubernetes]
  thresholds:
    maxRetiredPages: 30
  host:
    iommu: passthrough
`)))
	if err != nil {
		t.Fatal(err)
	}
	p, ref := AcceptPolicy(gp, "h100-80g")
	checks := []struct {
		what string
		ok   bool
	}{
		{"the policy is named by metadata.name", p.Name == "p" && ref.Name == "p"},
		{"the class's expectation applies", p.Expect.GPUs == 8 && p.Expect.Model == "NVIDIA H100 80GB HBM3"},
		{"the node runs its own layers, the on-demand one included, not the controller's", slices.Equal(p.Layers, []accept.Layer{accept.LayerHost, accept.LayerHardware, accept.LayerPerformance})},
		{"the thresholds are the file's over the defaults", p.Thresholds.MaxRetiredPages == 30 && p.Thresholds.MaxPCIeReplays == 100},
		{"the host policy is the file's", p.Host.IOMMU == "passthrough"},
		{"the version matrix is the file's", slices.Equal(p.Versions.Driver, []string{">=570"})},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so (policy %+v)", c.what, p)
		}
	}
	unused := strings.Join(Unused(gp), "\n")
	for _, want := range []string{"spec.nodeSelector", "spec.acceptance.layers kubernetes"} {
		if !strings.Contains(unused, want) {
			t.Errorf("the fields a node-local run does not use are\n%s\nwant %q among them", unused, want)
		}
	}
}

func TestAPolicyFileErrorNamesFileAndLine(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantLine int
		wantText string
	}{
		{"a YAML syntax error on the first line names line 1", "a: b: c\n", 1, "mapping values are not allowed"},
		{"a tab used as indentation names its line", fileHeader + "\tclasses: []\n", 6, "cannot start any token"},
		{"an earlier AcceptancePolicy file is refused with how to write it", "apiVersion: gpunode.dev/v1alpha1\nkind: AcceptancePolicy\nname: x\n", 2,
			"kind AcceptancePolicy is no longer read: write the policy as a GPUNodePolicy"},
		{"a wrong kind names its line", "apiVersion: gpunode.dev/v1alpha1\nkind: StackPool\n", 2, `kind: "StackPool" is not supported (want GPUNodePolicy)`},
		{"a missing kind is a wrong kind", "apiVersion: gpunode.dev/v1alpha1\n", 0, `kind: "" is not supported`},
		{"a wrong apiVersion names its line", "apiVersion: gpunode.dev/v1\nkind: GPUNodePolicy\n", 1, `apiVersion: "gpunode.dev/v1" is not supported (want gpunode.dev/v1alpha1)`},
		{"an unknown top-level field names its line", fileHeader + "  classes: []\nstatuz: {}\n", 7, `unknown field "statuz"`},
		{"an unknown spec field names its line", spec("clases: []\n"), 6, `unknown field "clases" in spec`},
		{"an unknown field of a class names its own line", spec("classes:\n  - class: a\n    gpuz: 8\n"), 8, `unknown field "gpuz" in spec.classes[0]`},
		{"an unknown threshold names its own line", spec("acceptance:\n  thresholds:\n    maxRetiredPage: 3\n"), 8, `unknown field "maxRetiredPage" in spec.acceptance.thresholds`},
		{"an unknown metadata field names its line", "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  nme: p\n", 4, `unknown field "nme" in metadata`},
		{"a duplicate key names its second line", spec("priority: 1\npriority: 2\n"), 7, `"priority" already defined at line 6`},
		{"a word for a number is a wrong type at its line", spec("classes:\n  - class: a\n    gpus: eight\n"), 8, "spec.classes.gpus: want int32, got string"},
		{"a string for a list is a wrong type", spec("versions:\n  driver: \">=550\"\n"), 7, "spec.versions.driver: want []string, got string"},
		{"a policy without a name is refused", "apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nspec: {}\n", 0, "metadata.name: a policy needs a name"},
		{"an unknown MIG mode names the class's line", spec("classes:\n  - class: a\n  - class: b\n    mig: sometimes\n"), 9, `spec.classes[1].mig: "sometimes" is not one of disabled, enabled, any`},
		{"a power threshold of 0 percent is out of range", spec("acceptance:\n  thresholds:\n    maxPowerPercent: 0\n"), 8, "spec.acceptance.thresholds.maxPowerPercent: must be between 1 and 100 (got 0)"},
		{"a negative retired-page limit is rejected", spec("acceptance:\n  thresholds:\n    maxRetiredPages: -1\n"), 8, "spec.acceptance.thresholds.maxRetiredPages: must not be negative"},
		{"an unknown IOMMU mode is rejected", spec("acceptance:\n  host:\n    iommu: on\n"), 8, `spec.acceptance.host.iommu: "on" is not one of any, enabled, passthrough, disabled`},
		{"a bad driver constraint names the line of spec.versions.driver", spec("versions:\n  driver: [\">=abc\"]\n"), 7, `spec.versions.driver: version constraint ">=abc"`},
		{"an unknown layer names its line", spec("acceptance:\n  layers:\n    - host\n    - gpu\n"), 9, `spec.acceptance.layers: "gpu" is not a layer`},
		{"a layer given twice is rejected", spec("acceptance:\n  layers: [hardware, hardware]\n"), 7, `spec.acceptance.layers: "hardware" is named a second time`},
		{"a second document is rejected", fileHeader + "  priority: 1\n---\nkind: GPUNodePolicy\n", 7, "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.yaml))
			assertPolicyError(t, err, "bad.yaml", tt.wantLine, tt.wantText)
		})
	}
}

func TestAnEmptyPolicyFileIsRefused(t *testing.T) {
	for _, tt := range []struct{ name, yaml string }{
		{"a file with no bytes is empty", ""},
		{"a file of comments only is empty", "# nothing here\n"},
		{"an explicit null is empty", "~\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("empty.yaml", []byte(tt.yaml))
			assertPolicyError(t, err, "empty.yaml", 0, "file is empty")
		})
	}
}

func TestAMissingPolicyFileIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	assertPolicyError(t, err, path, 0, "cannot read: no such file or directory")
}

func TestANodeLocalRunPicksItsClass(t *testing.T) {
	parse := func(body string) *v1alpha1.GPUNodePolicy {
		gp, err := Parse("p.yaml", []byte(spec(body)))
		if err != nil {
			t.Fatal(err)
		}
		return gp
	}
	two, one, none := parse("classes:\n  - class: a\n  - class: b\n"), parse("classes:\n  - class: a\n"), parse("priority: 1\n")
	tests := []struct {
		name, flag, want, wantErr string
		policy                    *v1alpha1.GPUNodePolicy
	}{
		{"the only class is the class", "", "a", "", one},
		{"a policy of no classes checks consistency only", "", "", "", none},
		{"a listed class is taken", "b", "b", "", two},
		{"of several classes one must be chosen", "", "", "the policy lists classes a, b: choose one with --class", two},
		{"a class the policy does not list is refused", "c", "", "--class c: the policy lists a, b", two},
		{"a class for a policy of none is refused", "c", "", "--class c: the policy lists no classes", none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClassFor(tt.policy, tt.flag)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("ClassFor = %q, %q; want %q, %q", got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}

func assertPolicyError(t *testing.T, err error, file string, line int, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", text)
	}
	if !errors.Is(err, accept.ErrInvalidPolicy) {
		t.Errorf("errors.Is(%v, ErrInvalidPolicy) = false", err)
	}
	var pe *accept.PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("%v is not a *PolicyError", err)
	}
	if pe.File != file || pe.Line != line {
		t.Errorf("error at %s line %d, want %s line %d (%v)", pe.File, pe.Line, file, line, err)
	}
	if !strings.Contains(pe.Problem, text) {
		t.Errorf("problem %q, want it to contain %q", pe.Problem, text)
	}
	prefix := "policy " + file + ": "
	if line > 0 {
		prefix += "line " + strconv.Itoa(line) + ": "
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("error %q, want it to start with %q", err, prefix)
	}
}

// TestTheExamplePoliciesLoad keeps the shipped examples valid for `gpunode accept`: every
// file of examples/policies and examples/gpunodepolicies loads and names itself uniquely.
func TestTheExamplePoliciesLoad(t *testing.T) {
	files, _ := filepath.Glob("../../examples/policies/*.yaml")
	more, _ := filepath.Glob("../../examples/gpunodepolicies/*.yaml")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found %v, want the example policies", files)
	}
	seen := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f)+" is a valid policy", func(t *testing.T) {
			gp, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[gp.Name]; dup {
				t.Errorf("%s and %s are both named %q", other, f, gp.Name)
			}
			seen[gp.Name] = f
			if _, err := os.Stat(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
