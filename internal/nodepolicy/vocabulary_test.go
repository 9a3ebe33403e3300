package nodepolicy

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// enumField is a field of the GPUNodePolicy CRD whose schema lists the values it takes.
type enumField struct {
	path   []string // from spec; "[]" marks a list item
	values []any
}

// crdEnums walks the CRD's schema under spec and returns every field with an enum.
func crdEnums(t *testing.T) []enumField {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/gpunode.dev_gpunodepolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var out []enumField
	var walk func(n schemaNode, path []string)
	walk = func(n schemaNode, path []string) {
		if len(n.Enum) > 0 {
			out = append(out, enumField{path: path, values: n.Enum})
		}
		for k, v := range n.Properties {
			walk(v, append(path[:len(path):len(path)], k))
		}
		if n.Items != nil {
			walk(*n.Items, append(path[:len(path):len(path)], "[]"))
		}
	}
	walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], nil)
	if len(out) == 0 {
		t.Fatal("the CRD's spec has no enum fields: the schema was not read")
	}
	return out
}

type schemaNode struct {
	Enum       []any                 `json:"enum"`
	Properties map[string]schemaNode `json:"properties"`
	Items      *schemaNode           `json:"items"`
}

// listItem is what a list item holds besides the field under test (a class needs its name).
var listItem = map[string]map[string]any{"classes": {"class": "a"}}

// body is the spec (as spec() indents it) that sets only path to v.
func body(t *testing.T, path []string, v any) string {
	t.Helper()
	var build func(path []string) any
	build = func(path []string) any {
		if len(path) == 0 {
			return v
		}
		k := path[0]
		if len(path) > 1 && path[1] == "[]" {
			inner := build(path[2:])
			if m, ok := inner.(map[string]any); ok {
				maps.Copy(m, listItem[k])
			}
			return map[string]any{k: []any{inner}}
		}
		return map[string]any{k: build(path[1:])}
	}
	out, err := yaml.Marshal(build(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// One vocabulary: every value the CRD's schema allows for an enum field, a policy file
// allows too, so a GPUNodePolicy the API server stores is one the agent can use.
func TestEveryValueTheCRDAllowsAPolicyFileAllows(t *testing.T) {
	for _, f := range crdEnums(t) {
		for _, v := range f.values {
			name := fmt.Sprintf("%s is %v", strings.ReplaceAll(strings.Join(f.path, "."), ".[]", "[]"), v)
			t.Run(name, func(t *testing.T) {
				text := spec(body(t, f.path, v))
				if f.path[0] == "remediation" {
					t.Skip("remediation is not read by the acceptance engine; its steps are checked by the remediation ladder's own tests")
				}
				if _, err := Parse("p.yaml", []byte(text)); err != nil {
					t.Errorf("the CRD allows it, the file refuses it: %v\n%s", err, text)
				}
			})
		}
	}
}

// And the other way: a value outside the CRD's enum, the file refuses too (the API server
// would never store it, so a file that took it would mean something the cluster cannot).
func TestAValueTheCRDRefusesAPolicyFileRefuses(t *testing.T) {
	for _, f := range crdEnums(t) {
		if f.path[0] == "remediation" {
			continue // not read by the acceptance engine (see above)
		}
		var bad any = "not-a-value"
		if _, isNumber := f.values[0].(float64); isNumber {
			bad = 99
		}
		name := fmt.Sprintf("%s is %v", strings.ReplaceAll(strings.Join(f.path, "."), ".[]", "[]"), bad)
		t.Run(name, func(t *testing.T) {
			text := spec(body(t, f.path, bad))
			if _, err := Parse("p.yaml", []byte(text)); err == nil {
				t.Errorf("the CRD refuses it, the file takes it:\n%s", text)
			}
		})
	}
}

// A file past the loaders' caps is refused with the policy's own error, at its line, before
// the quadratic decode of its keys (40,000 keys decoded took 15 s).
func TestAPolicyWithTensOfThousandsOfKeysIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: gpunode.dev/v1alpha1\nkind: GPUNodePolicy\nmetadata:\n  name: p\n  labels:\n")
	for i := range 40_000 {
		fmt.Fprintf(&b, "    k%d: v\n", i)
	}
	_, err := Parse("big.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "big.yaml") || !strings.Contains(err.Error(), "line 6") || !strings.Contains(err.Error(), "40000 keys") {
		t.Errorf("error %v: want the policy's error naming big.yaml, line 6 and the 40000 keys", err)
	}
}
