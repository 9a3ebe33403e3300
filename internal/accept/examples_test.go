package accept

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const examplePolicies = "../../examples/policies"

// TestExamplePoliciesParse keeps the shipped example policies valid: every file in
// examples/policies must load, name itself, and spell out its apiVersion and kind.
func TestExamplePoliciesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplePolicies, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, want := range []string{"h100x8.yaml", "h200x8.yaml", "h200-pcie-vm.yaml", "minimal.yaml"} {
		if !slices.Contains(names, want) {
			t.Errorf("examples/policies/%s is missing (found %v)", want, names)
		}
	}
	seen := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f)+" is a valid policy", func(t *testing.T) {
			if !strings.HasSuffix(f, ".yaml") {
				t.Fatalf("%s: example policies end in .yaml", f)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := LoadPolicy(f)
			if err != nil {
				t.Fatalf("LoadPolicy: %v", err)
			}
			for _, key := range []string{"apiVersion: " + PolicyAPIVersion, "kind: " + PolicyKind} {
				if !strings.Contains(string(data), key+"\n") {
					t.Errorf("%s does not spell out %q: examples are copied, so they carry the header", f, key)
				}
			}
			if p.Name == "" || p.Name == DefaultPolicy().Name {
				t.Errorf("%s: name %q, want a name of its own", f, p.Name)
			}
			if other, dup := seen[p.Name]; dup {
				t.Errorf("%s and %s are both named %q", other, f, p.Name)
			}
			seen[p.Name] = f
		})
	}
}
