package cli

import (
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

// releaseAnnotation is GPUNode name's release annotation parsed ("" when absent).
func releaseAnnotation(t *testing.T, c client.Client, name string) (string, time.Time) {
	t.Helper()
	var gn v1alpha1.GPUNode
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &gn); err != nil {
		t.Fatal(err)
	}
	v := gn.Annotations[v1alpha1.AnnotationRelease]
	if v == "" {
		return "", time.Time{}
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatalf("release annotation %q is not RFC 3339: %v", v, err)
	}
	return v, at
}

func TestReleasingANodeInMaintenanceAsksForAcceptanceThroughTheAnnotation(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	// Maintenance began within the current second: the release must still be later.
	putInMaintenance(t, c, joinNode(t, c, "release-maint", "release", true), time.Now())
	before := time.Now()
	execute(t, "release", "release-maint", "--kubeconfig", kc, "--reason", "GPU 3 reseated, ticket OPS-1234").check(t, ExitOK,
		[]string{"GPUNode release-maint: release requested at ", "reason: GPU 3 reseated, ticket OPS-1234",
			"next: the remediation controller asks the agent on release-maint for an acceptance run",
			"none within 30m0s, sends it back to Maintenance", "follow it: gpunode explain node release-maint"}, nil)
	v, at := releaseAnnotation(t, c, "release-maint")
	if at.Before(before.Add(-time.Second)) || at.After(time.Now()) {
		t.Fatalf("release annotation %q, want the time of the release", v)
	}

	// The remediation controller's own mapping sees the request and acts on it.
	e, err := explainNode(t.Context(), c, "release-maint", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if e.Decision.Reason != remediation.ReasonReleased || !e.Decision.State.AfterRelease {
		t.Errorf("after the release the controller would decide %s (%s), want %s with an acceptance requested",
			e.Decision.Reason, e.Decision.Message, remediation.ReasonReleased)
	}

	var evs eventsv1.EventList
	if err := c.List(t.Context(), &evs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs.Items {
		found = found || ev.Regarding.Name == "release-maint" && ev.Reason == "ReleaseRequested" && ev.Note == "released from Maintenance by gpunode release: GPU 3 reseated, ticket OPS-1234"
	}
	if !found {
		t.Errorf("no ReleaseRequested Event with the reason among %d Events", len(evs.Items))
	}
}

func TestReleaseRefusals(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	joinNode(t, c, "release-ok", "release-refusals", false)
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
		released bool
	}{
		{"a node in service is refused saying where it is", []string{"release", "release-ok", "--kubeconfig", kc}, ExitFail, nil,
			[]string{`GPUNode "release-ok" is not in Maintenance (remediation has no claim on it; status phase "InService")`, "--force"}, false},
		{"an unknown node exits one naming it", []string{"release", "no-such-node", "--kubeconfig", kc}, ExitFail, nil,
			[]string{`no GPUNode "no-such-node"`}, false},
		{"no node is bad usage", []string{"release", "--kubeconfig", kc}, ExitUsage, nil, []string{"accepts 1 arg"}, false},
		{"--force releases a node that is not in Maintenance and says so", []string{"release", "release-ok", "--kubeconfig", kc, "--force"}, ExitOK,
			[]string{"release requested at", "forced: the node is not in Maintenance"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, tc.code, tc.inStdout, tc.inStderr)
			if v, _ := releaseAnnotation(t, c, "release-ok"); (v != "") != tc.released {
				t.Errorf("release annotation %q after the command, want set=%v", v, tc.released)
			}
		})
	}
}

func TestAMalformedRemediationStateIsNotReleasedWithoutForce(t *testing.T) {
	cfg, c := testenv.Start(t)
	gn := joinNode(t, c, "release-bad-state", "release-bad", true)
	patch := client.MergeFrom(gn.DeepCopy())
	gn.Annotations = map[string]string{ctrlremediation.AnnotationState: "{not json"}
	if err := c.Patch(t.Context(), gn, patch); err != nil {
		t.Fatal(err)
	}
	execute(t, "release", "release-bad-state", "--kubeconfig", kubeconfigFor(t, cfg)).check(t, ExitFail, nil,
		[]string{"read annotation " + ctrlremediation.AnnotationState, "--force"})
}
