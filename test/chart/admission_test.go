package chart_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// nodeNameClaim is the user-info extra the API server fills from a pod-bound token's
// node claim (Kubernetes 1.32+). envtest cannot mint such a token, so the test impersonates
// the service account with the extra set, which reaches admission the same way.
const nodeNameClaim = "authentication.kubernetes.io/node-name"

// Done when : the agent's service account is refused when it patches another node.
// The chart's admission policy, binding and RBAC are installed for real; the agent acting
// for node-a may change node-a and GPUNode node-a, nothing of node-b; the controller may.
func TestTheAgentMayChangeOnlyItsOwnNodeAndTheControllerIsNotRestricted(t *testing.T) {
	cfg, admin := testenv.Start(t)
	ensureNamespace(t, admin)
	for _, m := range render(t, "") {
		switch m.u.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole", "ClusterRoleBinding":
			if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(m.u.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("installing %s/%s: %v", m.u.GetKind(), m.u.GetName(), err)
			}
			// The other tests of the package see an API server without them.
			t.Cleanup(func() { deleteObject(t, admin, m.u) })
		}
	}
	for _, name := range []string{"node-a", "node-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := admin.Create(t.Context(), node); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating node %s: %v", name, err)
		}
		t.Cleanup(func() { deleteObject(t, admin, node) })
	}
	// GPUNode node-b exists (its own agent made it); node-a's is made by its agent below.
	if err := admin.Create(t.Context(), &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-b"},
		Spec: v1alpha1.GPUNodeSpec{NodeName: "node-b"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating GPUNode node-b: %v", err)
	}
	for _, name := range []string{"node-a", "node-b"} {
		t.Cleanup(func() { deleteObject(t, admin, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	}
	agentA := impersonate(t, cfg, agentUser, map[string][]string{nodeNameClaim: {"node-a"}})
	waitForPolicy(t, agentA)

	const otherNode = "may change only its own Node and GPUNode, not nodes/node-b"
	tests := []struct {
		name    string
		as      client.Client
		change  func(ctx context.Context, c client.Client) error
		refused string // "" when allowed; else a part of the refusal's message
	}{
		{"the agent labels its own node", agentA, labelNode("node-a"), ""},
		{"the agent is refused when it labels another node", agentA, labelNode("node-b"), otherNode},
		{"the agent sets a condition on its own node", agentA, nodeCondition("node-a"), ""},
		{"the agent is refused when it sets a condition on another node", agentA, nodeCondition("node-b"),
			"may change only its own Node and GPUNode, not nodes/node-b"},
		{"the agent creates its own GPUNode", agentA, createGPUNode("node-a", "node-a"), ""},
		{"the agent is refused when it creates another node's GPUNode", agentA, createGPUNode("node-b", "node-b"),
			"not gpunodes/node-b"},
		{"the agent updates its own GPUNode's status", agentA, gpuNodeHealth("node-a"), ""},
		{"the agent is refused when it updates another node's GPUNode status", agentA, gpuNodeHealth("node-b"),
			"not gpunodes/node-b"},
		{"the agent's service account without a node claim (a token not bound to a pod) is refused",
			impersonate(t, cfg, agentUser, nil), labelNode("node-a"), "carries no node-name claim"},
		{"the controller labels any node", impersonate(t, cfg, controlUser, nil), labelNode("node-b"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.change(t.Context(), tt.as)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != "" && err == nil:
				t.Fatal("allowed, want refused")
			case tt.refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("refused with %v, want Forbidden by the policy with %q", err, tt.refused)
			}
		})
	}
}

func deleteObject(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

func impersonate(t *testing.T, cfg *rest.Config, user string, extra map[string][]string) client.Client {
	t.Helper()
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user, Extra: extra}
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(as, client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("a client acting as %s: %v", user, err)
	}
	return c
}

// waitForPolicy waits until the API server enforces the new policy (it loads policies
// asynchronously): until the agent of node-a is refused a change to node-b.
func waitForPolicy(t *testing.T, agentA client.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := labelNode("node-b")(t.Context(), agentA)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "gpunode-agent-own-node-only") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission policy was not enforced within 30s: the agent's last change to node-b gave %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func labelNode(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"gpunode.dev/phase":"accepting-%d"}}}`, time.Now().UnixNano())
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", patch))
	}
}

func nodeCondition(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		patch := []byte(`{"status":{"conditions":[{"type":"` + v1alpha1.ConditionGPUHealthy + `","status":"True","reason":"AllGPUsHealthy"}]}}`)
		return c.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/strategic-merge-patch+json", patch))
	}
}

func gpuNodeHealth(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		patch := []byte(`{"status":{"health":"` + string(v1alpha1.HealthHealthy) + `"}}`)
		return c.Status().Patch(ctx, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", patch))
	}
}

func createGPUNode(name, nodeName string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.Create(ctx, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodeSpec{NodeName: nodeName}})
	}
}
