package nodepolicy

import (
	"strings"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

func TestTheDRATaintEffectOfAnUnhealthyGPUComesFromTheGoverningPolicy(t *testing.T) {
	withEffect := func(e string) *v1alpha1.GPUNodePolicy {
		gp := policy("p", 0, nil)
		gp.Spec.DRA.UnhealthyEffect = e
		return &gp
	}
	tests := []struct {
		name string
		gp   *v1alpha1.GPUNodePolicy
		want string
	}{
		{"a policy that asks for NoExecute gets NoExecute", withEffect("NoExecute"), "NoExecute"},
		{"a policy that asks for NoSchedule gets NoSchedule", withEffect("NoSchedule"), "NoSchedule"},
		{"a policy that says nothing gets NoSchedule", withEffect(""), "NoSchedule"},
		{"the built-in defaults are NoSchedule", BuiltIn(), "NoSchedule"},
		{"no policy is NoSchedule", nil, "NoSchedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DRAUnhealthyEffect(tt.gp); got != tt.want {
				t.Errorf("DRAUnhealthyEffect = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestAPolicyFileWithAnUnknownDRATaintEffectIsRefusedAtItsLine(t *testing.T) {
	_, err := Parse("p.yaml", []byte(spec("dra:\n  unhealthyEffect: Evict\n")))
	if err == nil || !strings.Contains(err.Error(), "p.yaml: line 7") || !strings.Contains(err.Error(), `spec.dra.unhealthyEffect: "Evict" is not a taint effect`) {
		t.Errorf("error %v: want spec.dra.unhealthyEffect named at p.yaml line 7", err)
	}
	gp, err := Parse("p.yaml", []byte(spec("dra:\n  unhealthyEffect: NoExecute\n")))
	if err != nil {
		t.Fatal(err)
	}
	if u := strings.Join(Unused(gp), "\n"); !strings.Contains(u, "spec.dra") {
		t.Errorf("a node-local run does not use spec.dra, but Unused says only\n%s", u)
	}
}
