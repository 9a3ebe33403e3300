package remediation

import (
	"os"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// stepEnum finds the enum of a "steps" list's "step" field anywhere in a schema.
func stepEnum(s *apiextensionsv1.JSONSchemaProps) []string {
	if s == nil {
		return nil
	}
	if steps, ok := s.Properties["steps"]; ok && steps.Items != nil && steps.Items.Schema != nil {
		var out []string
		for _, e := range steps.Items.Schema.Properties["step"].Enum {
			var v string
			if err := yaml.Unmarshal(e.Raw, &v); err == nil {
				out = append(out, v)
			}
		}
		return out
	}
	for _, p := range s.Properties {
		if out := stepEnum(&p); out != nil {
			return out
		}
	}
	return nil
}

// A rung added to the ladder (internal/remediation) must be a step a pool can tune (the
// API's enum and this package's Policy) before it can run.
func TestEveryRungOfTheLadderIsAStepOfThePolicyAPI(t *testing.T) {
	data, err := os.ReadFile("../../../config/crd/gpunode.dev_gpunodepolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	enum := stepEnum(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if len(enum) == 0 {
		t.Fatal("the GPUNodePolicy CRD has no enum of remediation steps")
	}
	for _, s := range remediation.Ladder {
		t.Run(string(s)+" is a step of the API and of the pool's policy", func(t *testing.T) {
			if !slices.Contains(enum, string(s)) {
				t.Errorf("the CRD's steps are %v: add %s to RemediationStep's enum (api/v1alpha1/remediation_types.go) and regenerate", enum, s)
			}
			p, err := Policy("pool", v1alpha1.RemediationPolicy{DriverPodSelector: &v1alpha1.PodSelector{Namespace: "gpu-operator"},
				Steps: []v1alpha1.StepPolicy{{Step: v1alpha1.RemediationStep(s), MaxAttempts: 7}}})
			if err != nil {
				t.Fatalf("Policy: %v", err)
			}
			if got := p.Step(s).MaxAttempts; got != 7 {
				t.Errorf("a pool's maxAttempts 7 for %s gives %d: map the step in Policy (facts.go) and remediation.Policy.Step", s, got)
			}
		})
	}
}
