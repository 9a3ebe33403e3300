package agent_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/record"
)

func TestARecordIsCutToTheLimitsOfTheAPI(t *testing.T) {
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	r := &record.Record{
		ID: strings.Repeat("N", 300) + "-20260102T150405Z-abcdef12", Node: "n1", Result: record.ResultFailed,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond), Backend: "sim",
		Policy:   record.PolicyRef{Name: "default", Source: "built-in", SHA256: strings.Repeat("a", 64)},
		Template: record.Template{Node: record.Field{Value: "n1"}},
	}
	for i := range 300 {
		r.Checks = append(r.Checks, accept.Result{ID: fmt.Sprintf("hardware.c%d", i), Layer: accept.LayerHardware, Status: accept.StatusPass, Message: "ok"})
	}
	r.Checks[0].Message = strings.Repeat("é", 2000) // 4000 bytes, cut on a character boundary
	for i := range 20 {
		r.Checks[0].Evidence = append(r.Checks[0].Evidence, fmt.Sprintf("%d %s", i, strings.Repeat("x", 600)))
	}
	obj := agent.RecordObject(r, 3)
	c0 := obj.Spec.Checks[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"the name is the ID in lower case, cut to 253 characters from the front",
			len(obj.Name) == 253 && strings.HasSuffix(obj.Name, "-20260102t150405z-abcdef12") && obj.Name == strings.ToLower(obj.Name)},
		{"at most MaxChecks checks", len(obj.Spec.Checks) == v1alpha1.MaxChecks},
		{"at most MaxEvidenceLines lines, the rest counted", len(c0.Evidence) == v1alpha1.MaxEvidenceLines && c0.EvidenceOmitted == 4},
		{"evidence lines cut to MaxEvidenceLineLength", len(c0.Evidence[0]) <= v1alpha1.MaxEvidenceLineLength && strings.HasSuffix(c0.Evidence[0], "…")},
		{"the message is cut to 2048 bytes of valid UTF-8", len(c0.Message) <= 2048 && utf8.ValidString(c0.Message)},
		{"an empty template field says why", obj.Spec.Template.DCGMDiagnostics.NotApplicable != "" && obj.Spec.Template.Node.Value == "n1"},
		{"the generation answered is carried", obj.Spec.AcceptanceGeneration == 3},
		{"the duration is in milliseconds", obj.Spec.DurationMilliseconds == 1500},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so", c.what)
		}
	}
	if s := agent.Summary(obj); s.RecordName != obj.Name || s.Generation != 3 || s.Result != v1alpha1.AcceptanceFailed {
		t.Errorf("Summary = %+v", s)
	}
}

func policy(name string, prio int32, match map[string]string) v1alpha1.GPUNodePolicy {
	return v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GPUNodePolicySpec{Priority: prio, NodeSelector: metav1.LabelSelector{MatchLabels: match}}}
}

func TestAGPUNodePolicyBecomesTheAcceptancePolicyOfTheNodesClass(t *testing.T) {
	temp, cgroup, ecc := int32(80), int32(1), false
	gp := policy("fleet", 0, nil)
	gp.Spec.Classes = []v1alpha1.ClassExpectation{{Class: "other", GPUs: 4}, {Class: "h100", GPUs: 8, Model: "NVIDIA H100 80GB HBM3", ECC: &ecc}}
	gp.Spec.Versions.Driver = []string{">=580"}
	gp.Spec.Acceptance.Layers = []v1alpha1.Layer{"hardware", "kubernetes"}
	gp.Spec.Acceptance.Thresholds.MaxTemperatureC = &temp
	gp.Spec.Acceptance.Host.CgroupVersion = &cgroup

	p, ref := agent.AcceptPolicy(&gp, "h100")
	def, defRef := agent.AcceptPolicy(nil, "h100")
	checks := []struct {
		what string
		ok   bool
	}{
		{"the policy is named by the GPUNodePolicy", p.Name == "fleet" && ref.Name == "fleet" && ref.Source == "GPUNodePolicy/fleet"},
		{"the class's expectation applies", p.Expect.GPUs == 8 && p.Expect.Model == "NVIDIA H100 80GB HBM3" && p.Expect.ECC != nil && !*p.Expect.ECC},
		{"unset expectations keep their defaults", p.Expect.PersistenceMode != nil && *p.Expect.PersistenceMode && p.Expect.MIG == "disabled"},
		{"only node-local layers are run", len(p.Layers) == 1 && p.Layers[0] == accept.LayerHardware},
		{"set thresholds override, unset keep the default", p.Thresholds.MaxTemperatureC == 80 && p.Thresholds.MaxRetiredPages == 60},
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
	if other, _ := agent.AcceptPolicy(&gp, "a100"); other.Expect.GPUs != 0 || other.Expect.Model != "" {
		t.Errorf("a class the policy does not list got expectations %+v", other.Expect)
	}
}

// A node no GPUNodePolicy selects runs acceptance under the built-in defaults, which are
// accept.DefaultPolicy itself: the policy of `gpunode accept` without --policy.
func TestTheBuiltInDefaultsAreTheDefaultPolicyOfGpunodeAccept(t *testing.T) {
	p, ref := agent.AcceptPolicy(nodepolicy.BuiltIn(), "h100")
	nilP, nilRef := agent.AcceptPolicy(nil, "h100")
	if !reflect.DeepEqual(p, accept.DefaultPolicy()) {
		t.Errorf("the built-in defaults give %+v, want accept.DefaultPolicy() %+v", p, accept.DefaultPolicy())
	}
	if ref.Name != "default" || ref.Source != "built-in" || ref != nilRef || !reflect.DeepEqual(p, nilP) {
		t.Errorf("the built-in defaults are named %+v, want %+v (as gpunode accept without --policy)", ref, nilRef)
	}
}
