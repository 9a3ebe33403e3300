package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestAGPUNodeStatusIsWrittenOnlyThroughTheStatusSubresource(t *testing.T) {
	_, c := testenv.Start(t)
	n := gpuNode("node-status")
	n.Status.Phase = v1alpha1.PhaseInService // dropped on create: status has its own endpoint
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatalf("creating GPUNode: %v", err)
	}
	if n.Status.Phase != "" {
		t.Fatalf("phase after create = %q, want empty: a create must not set status", n.Status.Phase)
	}

	want := gpuNodeStatus()
	n.Status = want
	if err := c.Status().Update(t.Context(), n); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	var got v1alpha1.GPUNode
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(n), &got); err != nil {
		t.Fatalf("reading GPUNode back: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Status, want) {
		t.Errorf("status read back differs:\n got %+v\nwant %+v", got.Status, want)
	}

	// A write to the main resource leaves status alone.
	got.Status.Phase = v1alpha1.PhaseQuarantined
	got.Spec.AcceptanceGeneration = 2
	if err := c.Update(t.Context(), &got); err != nil {
		t.Fatalf("updating spec: %v", err)
	}
	if got.Status.Phase != v1alpha1.PhaseAccepting || got.Spec.AcceptanceGeneration != 2 {
		t.Errorf("after a main-resource update: phase %q, acceptanceGeneration %d; want Accepting, 2",
			got.Status.Phase, got.Spec.AcceptanceGeneration)
	}
}

func TestAnAcceptanceRecordsSpecCannotChangeAfterCreation(t *testing.T) {
	_, c := testenv.Start(t)
	r := acceptanceRecord("node-a-immutable")
	if err := c.Create(t.Context(), r); err != nil {
		t.Fatalf("creating AcceptanceRecord: %v", err)
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.AcceptanceRecord)
	}{
		{"a passed run cannot be turned into a failed one", func(r *v1alpha1.AcceptanceRecord) {
			r.Spec.Result = v1alpha1.AcceptanceFailed
			r.Spec.Summary.Fail = 1
		}},
		{"a check's evidence cannot be edited", func(r *v1alpha1.AcceptanceRecord) {
			r.Spec.Checks[0].Evidence = append(r.Spec.Checks[0].Evidence, "added later")
		}},
		{"the policy hash cannot be replaced", func(r *v1alpha1.AcceptanceRecord) {
			r.Spec.Policy.SHA256 = strings.Repeat("f", 64)
		}},
		{"the finish time cannot move", func(r *v1alpha1.AcceptanceRecord) {
			r.Spec.FinishedAt = metav1.NewTime(r.Spec.FinishedAt.Add(time.Hour))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := r.DeepCopy()
			tt.change(changed)
			err := c.Update(t.Context(), changed)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
				t.Fatalf("update error = %v, want Invalid: immutable", err)
			}
		})
	}

	t.Run("its labels can still change", func(t *testing.T) {
		labelled := r.DeepCopy()
		labelled.Labels = map[string]string{"gpunode.dev/node": "node-a"}
		if err := c.Update(t.Context(), labelled); err != nil {
			t.Fatalf("updating labels: %v", err)
		}
	})
}

func TestAGPUNodePolicyWithEveryFieldSetIsStoredAsWritten(t *testing.T) {
	_, c := testenv.Start(t)
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	yes := true
	p := &v1alpha1.GPUNodePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "h100-fleet"},
		Spec: v1alpha1.GPUNodePolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.present": "true"}},
			Priority:     10,
			Classes: []v1alpha1.ClassExpectation{{
				Class: "h100-sxm-80gb", GPUs: 8, Model: "NVIDIA H100 80GB HBM3", MinMemoryMiB: 80000,
				NVLinksPerGPU: 18, ECC: &yes, PersistenceMode: &yes, MIG: "disabled", Fabric: "required",
				PCIeGen: 5, PCIeWidth: 16,
			}},
			Versions: v1alpha1.VersionMatrix{Driver: []string{">=580.95,<590"}, CUDA: []string{"13.x"}, Kernel: []string{">=6.8"}},
			Acceptance: v1alpha1.AcceptanceSettings{
				Layers: []v1alpha1.Layer{"host", "hardware"},
				Thresholds: v1alpha1.Thresholds{
					MaxTemperatureC: i32(0), MaxPCIeReplays: i64(0), MaxCorrectedECC: i64(500), MaxRetiredPages: i32(60),
					MaxCorrectableRemappedRows: i32(512), MaxPowerPercent: i32(95), IgnoreXIDs: []int32{13, 31, 43},
				},
				Host: v1alpha1.HostPolicy{IOMMU: "passthrough", CgroupVersion: i32(2), SecureBoot: "any", SMT: "any",
					MinShmMiB: i64(1024), MinFreePercent: i32(15), CacheDirs: []string{"/var/cache/models"}, TimeSync: &yes,
					NVIDIARuntime: "required", KubeletReservations: "warn", GPUNUMALocal: &yes},
			},
			Remediation: v1alpha1.RemediationPolicy{
				Steps: []v1alpha1.StepPolicy{{Step: v1alpha1.StepResetGPU, MaxAttempts: 2,
					Window: &metav1.Duration{Duration: time.Hour}, Timeout: &metav1.Duration{Duration: 5 * time.Minute},
					Backoff: &metav1.Duration{Duration: time.Minute}},
					{Step: v1alpha1.StepPowerCycle, Disabled: true}},
				Budget:            &v1alpha1.BudgetPolicy{MaxUnavailable: ptr.To(intstr.FromString("10%")), FailureDomainKey: "topology.kubernetes.io/zone"},
				Breaker:           &v1alpha1.BreakerPolicy{Threshold: ptr.To(intstr.FromInt32(5)), Window: &metav1.Duration{Duration: 10 * time.Minute}},
				DrainTimeout:      &metav1.Duration{Duration: 10 * time.Minute},
				DriverPodSelector: &v1alpha1.PodSelector{Namespace: "gpu-operator", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "nvidia-driver-daemonset"}}},
			},
		},
	}
	want := p.Spec.DeepCopy()
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("creating GPUNodePolicy: %v", err)
	}
	var got v1alpha1.GPUNodePolicy
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
		t.Fatalf("reading GPUNodePolicy back: %v", err)
	}
	// Zero thresholds are kept: they mean "none allowed", not "default".
	if !equality.Semantic.DeepEqual(got.Spec, *want) {
		t.Errorf("spec read back differs:\n got %+v\nwant %+v", got.Spec, *want)
	}
}

func TestARemediationRequestIDOnlyGoesUp(t *testing.T) {
	_, c := testenv.Start(t)
	n := gpuNode("node-remediation-id")
	n.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 2, Step: v1alpha1.StepCaptureEvidence}
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatalf("creating GPUNode: %v", err)
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.GPUNode)
		want   string // empty: accepted
	}{
		{"a request with a higher ID is accepted", func(n *v1alpha1.GPUNode) {
			n.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 3, Step: v1alpha1.StepResetGPU, GPUs: []string{"GPU-a"}}
		}, ""},
		{"a request with a lower ID is refused", func(n *v1alpha1.GPUNode) { n.Spec.Remediation.ID = 1 }, "never goes down"},
		{"removing the request is refused", func(n *v1alpha1.GPUNode) { n.Spec.Remediation = nil }, "never removed"},
		{"a step the agent does not carry out is refused", func(n *v1alpha1.GPUNode) {
			n.Spec.Remediation = &v1alpha1.RemediationRequest{ID: 9, Step: v1alpha1.StepRestartApp}
		}, "the agent carries out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cur v1alpha1.GPUNode
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(n), &cur); err != nil {
				t.Fatalf("reading GPUNode: %v", err)
			}
			tt.change(&cur)
			err := c.Update(t.Context(), &cur)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("update error = %v, want none", err)
			case tt.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("update error = %v, want Invalid: %s", err, tt.want)
			}
		})
	}
}
