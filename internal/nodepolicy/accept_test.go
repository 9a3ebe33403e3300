package nodepolicy

import (
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/rules"
)

func TestAGPUNodePolicyBecomesTheAcceptancePolicyOfTheNodesClass(t *testing.T) {
	temp, cgroup, ecc := int32(80), int32(1), false
	gp := policy("fleet", 0, nil)
	gp.Spec.Classes = []v1alpha1.ClassExpectation{{Class: "other", GPUs: 4}, {Class: "h100", GPUs: 8, Model: "NVIDIA H100 80GB HBM3", ECC: &ecc}}
	gp.Spec.Versions.Driver = []string{">=580"}
	gp.Spec.Acceptance.Layers = []v1alpha1.Layer{"hardware", "kubernetes"}
	gp.Spec.Acceptance.Thresholds.MaxTemperatureC = &temp
	gp.Spec.Acceptance.Host.CgroupVersion = &cgroup
	retired, rate := int32(30), int64(5)
	gp.Spec.Acceptance.Thresholds.MaxRetiredPages = &retired
	gp.Spec.Acceptance.Thresholds.PCIeReplaysPerMinute = &rate

	p, ref := AcceptPolicy(&gp, "h100")
	def, defRef := AcceptPolicy(nil, "h100")
	checks := []struct {
		what string
		ok   bool
	}{
		{"the policy is named by the GPUNodePolicy", p.Name == "fleet" && ref.Name == "fleet" && ref.Source == "GPUNodePolicy/fleet"},
		{"the class's expectation applies", p.Expect.GPUs == 8 && p.Expect.Model == "NVIDIA H100 80GB HBM3" && p.Expect.ECC != nil && !*p.Expect.ECC},
		{"unset expectations keep their defaults", p.Expect.PersistenceMode != nil && *p.Expect.PersistenceMode && p.Expect.MIG == "disabled"},
		{"only node-local layers are run", len(p.Layers) == 1 && p.Layers[0] == accept.LayerHardware},
		{"set thresholds override, unset keep the default", p.Thresholds.MaxTemperatureC == 80 && p.Thresholds.MaxRetiredPages == 30 &&
			p.Thresholds.PCIeReplaysPerMinute == 5 && p.Thresholds.CorrectedECCPerMinute == 100 && p.Thresholds.MaxPCIeReplays == 100},
		{"the monitor's thresholds are acceptance's", reflect.DeepEqual(Thresholds(&gp), p.Thresholds)},
		{"the host policy overrides", p.Host.CgroupVersion == 1 && p.Host.MinShmMiB == 1024},
		{"the version matrix is copied", len(p.Versions.Driver) == 1 && p.Versions.Driver[0] == ">=580"},
		{"no policy is the built-in default", def.Name == "default" && defRef.Source == "built-in" && def.Expect.GPUs == 0},
		{"the hashes tell the policies apart", len(ref.SHA256) == 64 && ref.SHA256 != defRef.SHA256},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so (policy %+v)", c.what, p)
		}
	}
	if other, _ := AcceptPolicy(&gp, "a100"); other.Expect.GPUs != 0 || other.Expect.Model != "" {
		t.Errorf("a class the policy does not list got expectations %+v", other.Expect)
	}
}

// A node no GPUNodePolicy selects runs acceptance under the built-in defaults, which are
// accept.DefaultPolicy itself: the policy of `gpunode accept` without --policy.
func TestTheBuiltInDefaultsAreTheDefaultPolicyOfGpunodeAccept(t *testing.T) {
	p, ref := AcceptPolicy(BuiltIn(), "h100")
	nilP, nilRef := AcceptPolicy(nil, "h100")
	if !reflect.DeepEqual(Thresholds(BuiltIn()), rules.DefaultThresholds()) || !reflect.DeepEqual(Thresholds(nil), rules.DefaultThresholds()) {
		t.Errorf("the built-in defaults' thresholds are not the rule set's defaults")
	}
	if !reflect.DeepEqual(p, accept.DefaultPolicy()) {
		t.Errorf("the built-in defaults give %+v, want accept.DefaultPolicy() %+v", p, accept.DefaultPolicy())
	}
	if ref.Name != "default" || ref.Source != "built-in" || ref != nilRef || !reflect.DeepEqual(p, nilP) {
		t.Errorf("the built-in defaults are named %+v, want %+v (as gpunode accept without --policy)", ref, nilRef)
	}
}
