package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

func TestPolicyMapsTheAPIOntoTheDecisionsPolicy(t *testing.T) {
	pct, two := intstr.FromString("25%"), intstr.FromInt32(2)
	tests := []struct {
		name  string
		in    v1alpha1.RemediationPolicy
		check func(remediation.Policy) bool
	}{
		{"an empty policy leaves every field to the defaults", v1alpha1.RemediationPolicy{},
			func(p remediation.Policy) bool { return p.WithDefaults().Budget.MaxHeldPercent == 10 && !p.Disabled }},
		{"a tuned step keeps its limits", v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
			{Step: v1alpha1.StepResetGPU, MaxAttempts: 3, Timeout: &metav1.Duration{Duration: time.Minute}}}},
			func(p remediation.Policy) bool {
				return p.ResetGPU.MaxAttempts == 3 && p.ResetGPU.Timeout == time.Minute
			}},
		{"a percentage budget with a failure domain applies per domain too", v1alpha1.RemediationPolicy{
			Budget: &v1alpha1.BudgetPolicy{MaxUnavailable: &pct, FailureDomainKey: "rack"}},
			func(p remediation.Policy) bool {
				return p.Budget.MaxHeldPercent == 25 && p.Budget.MaxHeldPerDomainPercent == 25 && p.Budget.DomainKey == "rack"
			}},
		{"a count threshold trips the breaker above that many nodes", v1alpha1.RemediationPolicy{
			Breaker: &v1alpha1.BreakerPolicy{Threshold: &two}},
			func(p remediation.Policy) bool { return p.Breaker.Count == 2 && p.Breaker.Percent == 0 }},
		{"a power-cycle step that is listed and enabled is configured", v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
			{Step: v1alpha1.StepPowerCycle}}},
			func(p remediation.Policy) bool { return p.PowerCycleConfigured }},
		{"without a driver pod selector the reload-driver rung is skipped", v1alpha1.RemediationPolicy{Steps: []v1alpha1.StepPolicy{
			{Step: v1alpha1.StepReloadDriver, MaxAttempts: 2}}},
			func(p remediation.Policy) bool { return p.ReloadDriver.Disabled && p.ReloadDriver.MaxAttempts == 2 }},
		{"with a driver pod selector the reload-driver rung runs", v1alpha1.RemediationPolicy{
			DriverPodSelector: &v1alpha1.PodSelector{Namespace: "gpu-operator"}},
			func(p remediation.Policy) bool { return !p.ReloadDriver.Disabled }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Policy("pool", tt.in)
			if err != nil || !tt.check(got) {
				t.Fatalf("Policy = %+v, %v", got, err)
			}
		})
	}
}

func TestAPercentageThatIsNotOneIsRefusedNamingThePool(t *testing.T) {
	bad := intstr.FromString("lots")
	_, err := Policy("gpu-a", v1alpha1.RemediationPolicy{Budget: &v1alpha1.BudgetPolicy{MaxUnavailable: &bad}})
	if err == nil || !strings.Contains(err.Error(), `"gpu-a"`) || !strings.Contains(err.Error(), "lots") {
		t.Fatalf("err = %v, want one naming the pool and the value", err)
	}
}

func TestFactsReadTheAgentsAnswer(t *testing.T) {
	now := metav1.NewTime(at)
	tests := []struct {
		name         string
		answer       *v1alpha1.RemediationAnswer
		wantResult   remediation.OutcomeResult
		wantEvidence bool
	}{
		{"a successful capture carries its bundle as evidence under the answer's ID",
			&v1alpha1.RemediationAnswer{ID: 7, Step: v1alpha1.StepCaptureEvidence, Outcome: v1alpha1.OutcomeSucceeded,
				Evidence: &v1alpha1.EvidenceSummary{SHA256: sha, Created: now}}, remediation.OutcomeSucceeded, true},
		{"a refused step is a refusal", &v1alpha1.RemediationAnswer{ID: 7, Outcome: v1alpha1.OutcomeRefused}, remediation.OutcomeRefused, false},
		{"a timed-out step counts as failed", &v1alpha1.RemediationAnswer{ID: 7, Outcome: v1alpha1.OutcomeTimedOut}, remediation.OutcomeFailed, false},
		{"a failed capture's bundle is not evidence",
			&v1alpha1.RemediationAnswer{ID: 7, Outcome: v1alpha1.OutcomeFailed, Evidence: &v1alpha1.EvidenceSummary{SHA256: sha}},
			remediation.OutcomeFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{RemediationAnswer: tt.answer}}
			f := Facts(gn, nil, nil, "p", "", remediation.State{})
			if f.Outcome == nil || f.Outcome.ID != 7 || f.Outcome.Result != tt.wantResult {
				t.Fatalf("Outcome = %+v, want ID 7 %s", f.Outcome, tt.wantResult)
			}
			if (f.Evidence != nil) != tt.wantEvidence || (f.Evidence != nil && (f.Evidence.ID != 7 || f.Evidence.SHA256 != sha)) {
				t.Fatalf("Evidence = %+v, want present: %v", f.Evidence, tt.wantEvidence)
			}
		})
	}
}

func TestFactsTakeGPUUUIDsFromTheInventoryAndTheDomainFromTheNodesLabel(t *testing.T) {
	gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{
		Inventory: v1alpha1.Inventory{GPUs: []v1alpha1.GPUInfo{{Index: 3, UUID: "GPU-c"}}},
		GPUHealth: []v1alpha1.GPUHealth{{Index: 3, Health: v1alpha1.HealthUnhealthy, Action: "reset-gpu"}},
	}}
	f := Facts(gn, map[string]string{"rack": "r7"}, nil, "p", "rack", remediation.State{})
	if f.Domain != "r7" || !slices.Equal(f.UUIDs([]int{3}), []string{"GPU-c"}) {
		t.Fatalf("domain %q, UUIDs %v", f.Domain, f.UUIDs([]int{3}))
	}
}

func TestRequestNeverAsksAnIDTwiceNorLowersTheAcceptanceGeneration(t *testing.T) {
	gn := &v1alpha1.GPUNode{Spec: v1alpha1.GPUNodeSpec{
		AcceptanceGeneration: 9, Remediation: &v1alpha1.RemediationRequest{ID: 5, Step: v1alpha1.StepResetGPU},
	}}
	d := remediation.Decision{Actions: []remediation.Action{
		{Kind: remediation.ActionCaptureEvidence, ID: 5},
		{Kind: remediation.ActionRequestAcceptance, ID: 4},
	}}
	upd, requested, err := Request(gn, remediation.Facts{}, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(requested) != 0 || upd.Spec.Remediation.Step != v1alpha1.StepResetGPU || upd.Spec.AcceptanceGeneration != 9 {
		t.Fatalf("requested %v, spec %+v: an ID already asked or a lower generation changed the spec", requested, upd.Spec)
	}
	if _, ok := upd.Annotations[AnnotationState]; !ok {
		t.Fatal("the state was not written with the request")
	}
}

func TestAMalformedStateAnnotationIsAnErrorNamingTheNode(t *testing.T) {
	gn := &v1alpha1.GPUNode{}
	gn.Name, gn.Annotations = "gpu-9", map[string]string{AnnotationState: "{"}
	if _, err := ReadState(gn); err == nil || !strings.Contains(err.Error(), `"gpu-9"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSetupRefusesAReconcilerMissingItsParts(t *testing.T) {
	err := (&Reconciler{}).SetupWithManager(nil)
	for _, want := range []string{"no Client", "no Recorder", "no Clock", "no manager"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to say %q", err, want)
		}
	}
}
