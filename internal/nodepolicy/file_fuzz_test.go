package nodepolicy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/accept"
)

// FuzzParse: a policy file (`gpunode accept --policy`) is YAML a person writes. Whatever it
// holds, Parse does not panic, and gives a policy or a *accept.PolicyError naming the file
// (never both, never neither).
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../examples/*policies/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata: {name: x}\nspec: {}\n---\nkind: Other\n"))
	f.Add([]byte("apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nspec: {acceptance: {gpuCount: -1}}\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("policy.yaml", data)
		if err == nil {
			if p == nil {
				t.Fatal("no policy and no error")
			}
			return
		}
		var pe *accept.PolicyError
		if p != nil || !errors.As(err, &pe) || pe.File != "policy.yaml" {
			t.Fatalf("Parse = %v, %v (%T); want only a *accept.PolicyError naming the file", p, err, err)
		}
	})
}
