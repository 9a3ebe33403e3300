package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

const bundleSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// gpuUUID is GPU i's UUID in these tests.
func gpuUUID(i int) string { return fmt.Sprintf("GPU-0000000%d-0000-0000-0000-000000000000", i) }

// joinNode creates Node name (labelled pool=pool) and its GPUNode with 4 GPUs; unhealthy
// GPU 3 asks for a reset when faulty is set.
func joinNode(t *testing.T, c client.Client, name, pool string, faulty bool) *v1alpha1.GPUNode {
	t.Helper()
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}); err != nil {
		t.Fatal(err)
	}
	gn := &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: name}}
	if err := c.Create(ctx, gn); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	gn.Status.Phase, gn.Status.GPUCount, gn.Status.Health = v1alpha1.PhaseInService, 4, v1alpha1.HealthHealthy
	for i := range 4 {
		g := v1alpha1.GPUHealth{Index: int32(i), UUID: gpuUUID(i), Health: v1alpha1.HealthHealthy, Action: "none", Since: since}
		if faulty && i == 3 {
			g.Health, g.Action, g.Causes = v1alpha1.HealthUnhealthy, "reset-gpu", []string{"xid-95"}
			gn.Status.Health = v1alpha1.HealthUnhealthy
		}
		gn.Status.GPUHealth = append(gn.Status.GPUHealth, g)
	}
	if err := c.Status().Update(ctx, gn); err != nil {
		t.Fatal(err)
	}
	return gn
}

// putInMaintenance records on gn what the remediation controller leaves after a reset
// that did not clear the fault: the Maintenance state, its hold, the evidence bundle.
func putInMaintenance(t *testing.T, c client.Client, gn *v1alpha1.GPUNode, since time.Time) {
	t.Helper()
	ctx := t.Context()
	st := remediation.State{
		Phase: remediation.PhaseMaintenance, PhaseSince: since, FaultSince: since.Add(-2 * time.Minute),
		GPUs: []int{3}, Causes: []string{"GPU 3: xid-95"}, Reason: "reset-gpu did not clear the fault; no step left",
		LastID: 3, Evidence: remediation.EvidenceState{ID: 3, Step: remediation.StepMaintenance, RequestedAt: since, SHA256: bundleSHA, RecordedAt: since},
		Attempts: []remediation.Attempt{{Step: remediation.StepResetGPU, ID: 2, GPUs: []int{3}, Started: since.Add(-time.Minute), Ended: since, Result: remediation.AttemptNotCleared}},
	}
	v, err := ctrlremediation.RenderState(st)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Annotations = map[string]string{v1alpha1.AnnotationRemediationState: v}
	if err := c.Patch(ctx, gn, patch); err != nil {
		t.Fatal(err)
	}
	gn.Status.Phase = v1alpha1.PhaseMaintenance
	gn.Status.Remediation = &v1alpha1.RemediationStatus{Trigger: "GPU 3: xid-95", Evidence: &v1alpha1.EvidenceSummary{
		SHA256: bundleSHA, Path: "/var/lib/gpunode/evidence/bundle.tar.gz", SizeBytes: 4096, Created: metav1.NewTime(since), Trigger: "GPU 3: xid-95"}}
	if err := c.Status().Update(ctx, gn); err != nil {
		t.Fatal(err)
	}
	if err := (nodeops.Ops{Client: c}).Hold(ctx, gn.Spec.NodeName, v1alpha1.HoldOwnerRemediation, "GPU 3: xid-95"); err != nil {
		t.Fatal(err)
	}
}

func TestExplainNode(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	since := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	putInMaintenance(t, c, joinNode(t, c, "explain-maint", "explain", true), since)
	joinNode(t, c, "explain-ok", "explain", false)
	if err := c.Create(t.Context(), &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "explain"},
		Spec: v1alpha1.GPUNodePolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "explain"}}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
	}{
		{"a node in maintenance says who holds it, since when, the evidence and how to release it",
			[]string{"explain", "node", "explain-maint", "--kubeconfig", kc}, ExitOK, []string{
				"node explain-maint: phase Maintenance",
				"held by remediation since ",
				"fault since ", "GPU 3: xid-95",
				"attempt: reset-gpu on GPU 3 at " + since.Add(-time.Minute).UTC().Format(time.RFC3339) + ": not-cleared",
				"evidence: request 3 recorded " + since.UTC().Format(time.RFC3339) + " sha256 " + bundleSHA,
				"evidence bundle: /var/lib/gpunode/evidence/bundle.tar.gz (4096 bytes",
				"why: reset-gpu did not clear the fault; no step left",
				"next: stays in maintenance until a person releases it (`gpunode release explain-maint`",
				"pool: explain",
			}, nil},
		{"a healthy node says nothing holds it", []string{"explain", "node", "explain-ok", "--kubeconfig", kc}, ExitOK,
			[]string{"holds: none", "fault: none", "next: nothing: remediation has no claim on the node"}, nil},
		{"an unknown node exits one naming it", []string{"explain", "node", "no-such-node", "--kubeconfig", kc}, ExitFail,
			nil, []string{`no GPUNode "no-such-node" in the cluster`}},
		{"no node name is bad usage", []string{"explain", "node", "--kubeconfig", kc}, ExitUsage, nil, []string{"accepts 1 arg"}},
		{"an unknown flag is bad usage", []string{"explain", "node", "x", "--colour"}, ExitUsage, nil, []string{"unknown flag: --colour"}},
		{"explain without a kind is bad usage", []string{"explain"}, ExitUsage, nil, []string{"explain needs a subcommand: node"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, tc.code, tc.inStdout, tc.inStderr)
		})
	}
}

func TestExplainNodeAsJSONCarriesTheDecisionAndTheBundle(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	putInMaintenance(t, c, joinNode(t, c, "explain-json", "explain-json", true), time.Now().Add(-time.Minute))
	r := execute(t, "explain", "node", "explain-json", "--kubeconfig", kc, "--json")
	r.check(t, ExitOK, nil, nil)
	var got struct {
		Node     string `json:"node"`
		Phase    string `json:"phase"`
		GPUNode  string `json:"gpuNode"`
		Next     string `json:"next"`
		Decision struct {
			Reason string `json:"reason"`
		} `json:"decision"`
		Holds  []struct{ Owner string } `json:"holds"`
		Bundle struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"evidenceBundle"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if got.Node != "explain-json" || got.GPUNode != "explain-json" || got.Phase != "Maintenance" || got.Decision.Reason != remediation.ReasonInMaintenance ||
		len(got.Holds) != 1 || got.Holds[0].Owner != "remediation" || got.Bundle.SHA256 != bundleSHA || !strings.Contains(got.Next, "gpunode release") {
		t.Errorf("explanation %+v\n%s", got, r.stdout)
	}
}
