package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// installAdmission installs the chart's admission policy, its binding and the RBAC for
// real, removed when t ends (the other tests of the package see an API server without them).
func installAdmission(t *testing.T, admin client.Client) {
	t.Helper()
	ensureNamespace(t, admin)
	for _, m := range render(t, "") {
		switch m.u.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole", "ClusterRoleBinding":
			if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(m.u.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("installing %s/%s: %v", m.u.GetKind(), m.u.GetName(), err)
			}
			t.Cleanup(func() { deleteObject(t, admin, m.u) })
		}
	}
}

// Done when (only a person releases): the agent, with its node's claim, is refused every
// write of what the controllers trust on its own GPUNode, Node, records and Events, and is
// allowed what it writes itself. A person and the controller are not restricted.
func TestOnlyAPersonReleasesTheAgentMayNotWriteWhatTheControllersTrust(t *testing.T) {
	cfg, admin := testenv.Start(t)
	installAdmission(t, admin)
	const own, other = "rel-a", "rel-b"
	held := nodeops.Holds{{Owner: v1alpha1.HoldOwnerRemediation, Reason: "maintenance: xid 79", Since: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}}
	for _, name := range []string{own, other} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.AnnotationHolds: held.Render()}},
			Spec: corev1.NodeSpec{Unschedulable: true, Taints: nodeops.DesiredTaints(nil, held)}}
		if err := admin.Create(t.Context(), node); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating node %s: %v", name, err)
		}
		t.Cleanup(func() { deleteObject(t, admin, node) })
		t.Cleanup(func() { deleteObject(t, admin, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	}
	agent := impersonate(t, cfg, agentUser, map[string][]string{nodeNameClaim: {own}})
	person := admin // a cluster administrator
	waitForRights(t, agent, own)

	const trusted = "on its GPUNode: gpunode.dev/ annotations and labels are the controllers' and people's"
	steps := []struct {
		name    string
		as      client.Client
		change  func(ctx context.Context, c client.Client) error
		refused string // "" when allowed; else a part of the refusal's message
	}{
		{"the agent is refused a GPUNode created with an acceptance request", agent,
			createWithSpec(own, `{"acceptanceGeneration":5}`), "may create its GPUNode with spec.nodeName alone"},
		{"the agent is refused a GPUNode created with a remediation request", agent,
			createWithSpec(own, `{"remediation":{"id":1,"step":"reset-gpu"}}`), "may create its GPUNode with spec.nodeName alone"},
		{"the agent creates its own GPUNode", agent, createGPUNode(own, own), ""},
		{"a person (cluster admin) stamps the remediation state on it, as the controller would", person,
			mergeGPUNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationRemediationState+`":"{\"phase\":\"Maintenance\"}"}},"spec":{"acceptanceGeneration":1}}`), ""},
		{"the controller asks for a remediation step", impersonate(t, cfg, controlUser, nil),
			mergeGPUNode(own, `{"spec":{"remediation":{"id":7,"step":"reset-gpu"}}}`), ""},
		{"the agent is refused gpunode.dev/release on its own GPUNode", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationRelease+`":"2026-12-02T03:00:00Z"}}}`), v1alpha1.AnnotationRelease + " " + trusted},
		{"the agent is refused a change of its remediation state", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationRemediationState+`":"{}"}}}`), v1alpha1.AnnotationRemediationState},
		{"the agent is refused the removal of its remediation state", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationRemediationState+`":null}}}`), v1alpha1.AnnotationRemediationState},
		{"the agent is refused the controller's step record", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"gpunode.dev/remediation-controller-step":"{}"}}}`), "gpunode.dev/remediation-controller-step"},
		{"the agent is refused the acceptance basis", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"gpunode.dev/acceptance-basis":"{}"}}}`), "gpunode.dev/acceptance-basis"},
		{"the agent is refused a gpunode.dev label on its GPUNode", agent,
			mergeGPUNode(own, `{"metadata":{"labels":{"gpunode.dev/node":"`+other+`"}}}`), "gpunode.dev/node " + trusted},
		{"the agent is refused a raised acceptance generation", agent,
			mergeGPUNode(own, `{"spec":{"acceptanceGeneration":2}}`), "may not change spec.acceptanceGeneration"},
		{"the agent is refused a remediation request's reason", agent,
			mergeGPUNode(own, `{"spec":{"remediation":{"reason":"forged"}}}`), "may not change spec.acceptanceGeneration, spec.acceptanceReason or spec.remediation"},
		{"the agent is refused a changed remediation request", agent,
			mergeGPUNode(own, `{"spec":{"remediation":{"id":8}}}`), "spec.remediation"},
		{"the agent sets its own annotation outside gpunode.dev", agent,
			mergeGPUNode(own, `{"metadata":{"annotations":{"example.com/note":"agent"}}}`), ""},
		{"the agent publishes its status: health, inventory and its GPUHealthy condition", agent,
			mergeStatus(own, `{"status":{"health":"healthy","gpuCount":8,"conditions":[{"type":"GPUHealthy","status":"True","reason":"AllGPUsHealthy","message":"8 of 8","lastTransitionTime":"2026-12-02T03:00:00Z"}]}}`), ""},
		{"the agent is refused phase InService", agent,
			mergeStatus(own, `{"status":{"phase":"InService"}}`), "may not change the controllers' status"},
		{"the agent is refused holds in its GPUNode's status", agent,
			mergeStatus(own, `{"status":{"holds":[{"owner":"operator","reason":"x","since":"2026-12-02T03:00:00Z"}]}}`), "may not change the controllers' status"},
		{"the agent is refused the controllers' conditions", agent,
			mergeStatus(own, `{"status":{"conditions":[{"type":"GPUHealthy","status":"True","reason":"AllGPUsHealthy","message":"8 of 8","lastTransitionTime":"2026-12-02T03:00:00Z"},{"type":"Accepted","status":"True","reason":"Passed","message":"forged","lastTransitionTime":"2026-12-02T03:00:00Z"}]}}`),
			"conditions other than GPUHealthy"},
		{"the agent is refused a remediation claim in status", agent,
			mergeStatus(own, `{"status":{"remediation":{"phase":"Accepting"}}}`), "may not change the controllers' status"},
		{"the agent adds its acceptance hold to its held Node, as at first start", agent, takeHold(own), ""},
		{"the agent is refused the removal of remediation's hold", agent, releaseHold(own, v1alpha1.HoldOwnerRemediation),
			"not remove or change one: only a hold's owner releases it"},
		{"the agent is refused the removal of the holds annotation", agent,
			mergeNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationHolds+`":null}}}`), "only a hold's owner releases it"},
		{"the agent is refused the removal of the gpunode taints", agent, stripTaints(own), "may not remove the gpunode taints"},
		{"the agent is refused an uncordon", agent, mergeNode(own, `{"spec":{"unschedulable":false}}`), "may not cordon or uncordon"},
		{"the agent labels its own node", agent, labelNode(own), ""},
		{"the agent is refused a record linked by label to another node", agent,
			createRecord(own+"-20261202t030000z-0000000a", own, other), "may not link an AcceptanceRecord to another node"},
		{"the agent creates its own record", agent, createRecord(own+"-20261202t030000z-0000000b", own, own), ""},
		{"the agent records an Event about its own GPUNode", agent, createEvent(own, "GPUNode", own, "gpunode-agent"), ""},
		{"the agent is refused an Event about another node", agent, createEvent(own, "Node", other, "gpunode-agent"),
			"may record Events about its own Node and GPUNode only"},
		{"the agent is refused an Event as gpunode's CLI (a person's release)", agent, createEvent(own, "GPUNode", own, "gpunode.dev/cli"),
			"not as gpunode's CLI"},
		{"a person releases the node", person,
			mergeGPUNode(own, `{"metadata":{"annotations":{"`+v1alpha1.AnnotationRelease+`":"2026-12-02T03:00:00Z"}}}`), ""},
		{"a person removes a hold", person, releaseHold(own, v1alpha1.HoldOwnerRemediation), ""},
	}
	for _, tt := range steps {
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

// waitForRights waits until the API server enforces the policy's new rules (it loads
// policies asynchronously): until the agent is refused a removal of its Node's holds
// annotation, tried as a dry run so that an early success changes nothing.
func waitForRights(t *testing.T, agent client.Client, node string) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+v1alpha1.AnnotationHolds+`":null}}}`))
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := agent.Patch(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, patch, client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "only a hold's owner releases it") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission policy was not enforced within 30s: the agent's removal of its holds gave %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mergeGPUNode(name, patch string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.Patch(ctx, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}
}

func mergeStatus(name, patch string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.Status().Patch(ctx, &v1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}
}

func mergeNode(name, patch string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}
}

func createWithSpec(name, spec string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		gn := &v1alpha1.GPUNode{}
		raw := fmt.Sprintf(`{"metadata":{"name":%q},"spec":%s}`, name, spec)
		if err := json.Unmarshal([]byte(raw), gn); err != nil {
			return err
		}
		gn.Spec.NodeName = name
		return c.Create(ctx, gn)
	}
}

// takeHold is the agent's first-start hold, through nodeops as the agent takes it.
func takeHold(node string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return nodeops.Ops{Client: c}.Hold(ctx, node, v1alpha1.HoldOwnerAcceptance, "not accepted")
	}
}

func releaseHold(node, owner string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return nodeops.Ops{Client: c}.Release(ctx, node, owner)
	}
}

func stripTaints(node string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		stripped := n.DeepCopy()
		stripped.Spec.Taints = nil
		for _, t := range n.Spec.Taints {
			if !nodeops.Owns(t) {
				stripped.Spec.Taints = append(stripped.Spec.Taints, t)
			}
		}
		return c.Patch(ctx, stripped, client.MergeFrom(n))
	}
}

func createRecord(name, node, label string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		at := metav1.NewTime(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
		r := &v1alpha1.AcceptanceRecord{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNode: label}},
			Spec: v1alpha1.AcceptanceRecordSpec{
				Node: node, AcceptanceGeneration: 1, Result: v1alpha1.AcceptancePassed, StartedAt: at, FinishedAt: at,
				Policy:  v1alpha1.PolicyRef{Name: "fleet", SHA256: strings.Repeat("0", 64)},
				Backend: "sim", Layers: []v1alpha1.Layer{"host"}, Summary: v1alpha1.CheckSummary{Pass: 1},
				Checks: []v1alpha1.Check{{ID: "host.kernel", Layer: "host", Status: "pass", Message: "ok"}},
			},
		}
		tv := reflect.ValueOf(&r.Spec.Template).Elem()
		for i := range tv.NumField() {
			tv.Field(i).Set(reflect.ValueOf(v1alpha1.TemplateField{Value: tv.Type().Field(i).Name}))
		}
		return c.Create(ctx, r)
	}
}

func createEvent(node, kind, name, controller string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		apiVersion := "v1"
		if kind == "GPUNode" {
			apiVersion = v1alpha1.GroupVersion.String()
		}
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{GenerateName: node + "-", Namespace: metav1.NamespaceDefault},
			EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: controller, ReportingInstance: controller + "@" + node,
			Action: "Release", Reason: "ReleaseRequested", Type: corev1.EventTypeNormal, Note: "released",
			Regarding: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name},
		}
		return c.Create(ctx, ev)
	}
}
