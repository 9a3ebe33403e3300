package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// examplePolicies are the GPUNodePolicies the docs show, read strictly (a field the API
// does not have is an error).
func examplePolicies(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../examples/gpunodepolicies/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example GPUNodePolicies in examples/gpunodepolicies (%v)", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

func TestTheExampleGPUNodePoliciesReadStrictlyAndAreTheOnesTheDocsShow(t *testing.T) {
	docs := map[string]string{}
	for _, d := range []string{"../../docs/policy.md", "../../docs/install.md"} {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		docs[d] = string(b)
	}
	for f, text := range examplePolicies(t) {
		var p v1alpha1.GPUNodePolicy
		if err := yaml.UnmarshalStrict([]byte(text), &p); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if p.Kind != "GPUNodePolicy" || p.APIVersion != v1alpha1.GroupVersion.String() || p.Name == "" {
			t.Errorf("%s: kind %q, apiVersion %q, name %q: want a named gpunode.dev/v1alpha1 GPUNodePolicy", f, p.Kind, p.APIVersion, p.Name)
		}
		for d, doc := range docs {
			if !strings.Contains(doc, "```yaml\n"+text+"```") {
				t.Errorf("%s does not show %s as it is", d, f)
			}
		}
	}
}

func TestTheAPIServerAcceptsTheExampleGPUNodePolicies(t *testing.T) {
	_, c := testenv.Start(t)
	examples := examplePolicies(t)
	files, _ := filepath.Glob("../../examples/policies/*.yaml") // the files of gpunode accept --policy
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples[f] = string(b)
	}
	for f, text := range examples {
		var p v1alpha1.GPUNodePolicy
		if err := yaml.UnmarshalStrict([]byte(text), &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.Create(t.Context(), &p, client.DryRunAll); err != nil {
			t.Errorf("%s: the API server refuses it: %v", f, err)
		}
	}
}
