package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// write creates obj; for a GPUNode with a status it then writes the status, as the agent does.
func write(t *testing.T, c client.Client, obj client.Object) error {
	t.Helper()
	n, isNode := obj.(*v1alpha1.GPUNode)
	if !isNode {
		return c.Create(t.Context(), obj)
	}
	status := n.Status
	if err := c.Create(t.Context(), n); err != nil {
		return err
	}
	t.Cleanup(func() { _ = c.Delete(t.Context(), n) })
	n.Status = status
	return c.Status().Update(t.Context(), n)
}

func TestTheAPIServerRefusesInvalidObjects(t *testing.T) {
	_, c := testenv.Start(t)
	policy := func(name string, classes ...v1alpha1.ClassExpectation) *v1alpha1.GPUNodePolicy {
		return &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GPUNodePolicySpec{Classes: classes}}
	}
	tests := []struct {
		name string
		obj  func(name string) client.Object
		want string
	}{
		{"a GPUNode in a phase that is not a lifecycle phase", func(name string) client.Object {
			n := gpuNode(name)
			n.Status = gpuNodeStatus()
			n.Status.Phase = "Broken"
			return n
		}, `status.phase: Unsupported value: "Broken"`},
		{"a GPUNode named differently from its node", func(name string) client.Object {
			n := gpuNode(name)
			n.Spec.NodeName = "another-node"
			return n
		}, "metadata.name must equal spec.nodeName"},
		{"a GPUNode with two holds of the same owner", func(name string) client.Object {
			n := gpuNode(name)
			n.Status = gpuNodeStatus()
			n.Status.Holds = append(n.Status.Holds, v1alpha1.Hold{Owner: v1alpha1.HoldOwnerAcceptance, Reason: "again", Since: at})
			return n
		}, "status.holds[1]: Duplicate value"},
		{"a hold whose reason cannot be a taint value", func(name string) client.Object {
			n := gpuNode(name)
			n.Status = gpuNodeStatus()
			n.Status.Holds[0].Reason = "not accepted yet"
			return n
		}, "status.holds[0].reason: Invalid value"},
		{"a GPU with more active NVLinks than links", func(name string) client.Object {
			n := gpuNode(name)
			n.Status = gpuNodeStatus()
			n.Status.Inventory.GPUs[0].NVLinks.Active = 19
			return n
		}, "active links cannot exceed total links"},
		{"a GPU health with an unknown action", func(name string) client.Object {
			n := gpuNode(name)
			n.Status = gpuNodeStatus()
			n.Status.GPUHealth[0].Action = "pray"
			return n
		}, `status.gpuHealth[0].action: Unsupported value: "pray"`},
		{"a policy expecting a negative GPU count", func(name string) client.Object {
			return policy(name, v1alpha1.ClassExpectation{Class: "h100", GPUs: -1})
		}, "spec.classes[0].gpus: Invalid value: -1: spec.classes[0].gpus in body should be greater than or equal to 0"},
		{"a policy naming one class twice", func(name string) client.Object {
			return policy(name, v1alpha1.ClassExpectation{Class: "h100", GPUs: 8}, v1alpha1.ClassExpectation{Class: "h100", GPUs: 4})
		}, "spec.classes[1]: Duplicate value"},
		{"a policy with an unknown acceptance layer", func(name string) client.Object {
			p := policy(name)
			p.Spec.Acceptance.Layers = []v1alpha1.Layer{"vibes"}
			return p
		}, `Unsupported value: "vibes"`},
		{"a policy whose agent may be silent for a negative time", func(name string) client.Object {
			p := policy(name)
			p.Spec.AgentLostAfter = &metav1.Duration{Duration: -time.Minute}
			return p
		}, "agentLostAfter is 0s (off) or at least 1s"},
		{"a policy that calls an agent lost after a millisecond", func(name string) client.Object {
			p := policy(name)
			p.Spec.AgentLostAfter = &metav1.Duration{Duration: time.Millisecond}
			return p
		}, "agentLostAfter is 0s (off) or at least 1s"},
		{"a passed acceptance record with a failed check", func(name string) client.Object {
			r := acceptanceRecord(name)
			r.Spec.Summary.Fail = 1
			return r
		}, "a passed run has no failed check"},
		{"an acceptance record that finished before it started", func(name string) client.Object {
			r := acceptanceRecord(name)
			r.Spec.FinishedAt = metav1.NewTime(r.Spec.StartedAt.Add(-time.Second))
			return r
		}, "finishedAt cannot be before startedAt"},
		{"an acceptance record whose template line has neither a value nor a reason", func(name string) client.Object {
			r := acceptanceRecord(name)
			r.Spec.Template.NICRDMA = v1alpha1.TemplateField{}
			return r
		}, "spec.template.nicRdma: Invalid value: a template field has either a value or a notApplicable reason"},
		{"an acceptance record with more evidence lines than the cap", func(name string) client.Object {
			r := acceptanceRecord(name)
			for i := range v1alpha1.MaxEvidenceLines {
				r.Spec.Checks[0].Evidence = append(r.Spec.Checks[0].Evidence, fmt.Sprintf("line %d", i))
			}
			return r
		}, "spec.checks[0].evidence: Too many: 17: must have at most 16 items"},
		{"an acceptance record whose policy hash is not a SHA-256", func(name string) client.Object {
			r := acceptanceRecord(name)
			r.Spec.Policy.SHA256 = "abc"
			return r
		}, "spec.policy.sha256: Invalid value"},
		{"an acceptance record with a negative measurement", func(name string) client.Object {
			r := acceptanceRecord(name)
			r.Spec.Performance[0].Metrics[0].Value = -1
			return r
		}, "spec.performance[0].metrics[0].value: Invalid value: -1"},
		{"an acceptance record with more GPU models measured than the cap", func(name string) client.Object {
			r := acceptanceRecord(name)
			for len(r.Spec.Performance) <= v1alpha1.MaxPerformanceModels {
				r.Spec.Performance = append(r.Spec.Performance, r.Spec.Performance[0])
			}
			return r
		}, "spec.performance: Too many: 9: must have at most 8 items"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := write(t, c, tt.obj(fmt.Sprintf("invalid-%d", i)))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestAGPUNodesAcceptanceGenerationNeverGoesDown(t *testing.T) {
	_, c := testenv.Start(t)
	n := gpuNode("node-generation")
	n.Spec.AcceptanceGeneration = 3
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatalf("creating GPUNode: %v", err)
	}
	n.Spec.AcceptanceGeneration = 2
	err := c.Update(t.Context(), n)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "acceptanceGeneration never goes down") {
		t.Fatalf("update error = %v, want Invalid: acceptanceGeneration never goes down", err)
	}
}
