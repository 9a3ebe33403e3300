package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// h100Class is the class of docs/install.md's first policy, h100-nodes; classesWith gives it
// gpus GPUs, as a merge patch of the policy's spec.
func classesWith(gpus int) string {
	return fmt.Sprintf(`{"spec":{"classes":[{"class":"h100-80g","gpus":%d,"model":"NVIDIA H100 80GB HBM3"}]}}`, gpus)
}

// strippedHoldComesBack makes the node fail acceptance (its policy now expects nine GPUs of
// the eight it has), then removes the hold with kubectl as a user who may patch Nodes would:
// the holds annotation and both gpunode taints. The acceptance controller puts them back
// from its own state, with a HoldRestored Event. The node stays held for the next step.
func strippedHoldComesBack(t *testing.T) {
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", classesWith(9))
	waitFor(t, "the node held by its failed acceptance", settle, func() (bool, string) {
		gn := gpuNode(t)
		held := slices.ContainsFunc(gn.Status.Holds, func(h v1alpha1.Hold) bool { return h.Owner == v1alpha1.HoldOwnerAcceptance })
		accepted := ""
		for _, c := range gn.Status.Conditions {
			if c.Type == v1alpha1.ConditionAccepted {
				accepted = string(c.Status) + " " + c.Message
			}
		}
		return held && strings.HasPrefix(accepted, "False") && nodeTainted(t, v1alpha1.TaintNotAccepted),
			fmt.Sprintf("holds %+v, Accepted %s", gn.Status.Holds, accepted)
	})
	kubectl(t, "annotate", "node", nodeName, v1alpha1.AnnotationHolds+"-")
	kubectl(t, "taint", "node", nodeName, v1alpha1.TaintNotAccepted+":NoSchedule-", v1alpha1.TaintUnschedulable+":NoSchedule-")
	stripped := time.Now()
	waitFor(t, "the acceptance hold and both taints back on the node", settle, func() (bool, string) {
		holds, taints := nodeHolds(t)
		_, ok := holds.Find(v1alpha1.HoldOwnerAcceptance)
		return ok && slices.Contains(taints, v1alpha1.TaintNotAccepted) && slices.Contains(taints, v1alpha1.TaintUnschedulable),
			fmt.Sprintf("holds %v, gpunode taints %v", holds, taints)
	})
	t.Logf("the stripped hold was back within %s of kubectl's removal of the taints (polled every second)", time.Since(stripped).Round(time.Second))
	waitFor(t, "a HoldRestored Event naming what was put back", settle, func() (bool, string) {
		var evs corev1.EventList
		if err := getJSON(t.Context(), &evs, "events", "-A", "--field-selector", "reason=HoldRestored"); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == nodeName && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "the acceptance hold") {
				t.Logf("Event %s/%s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d HoldRestored Events, none about %s's acceptance hold", len(evs.Items), nodeName)
	})
}

// agentTokenCannotRelease takes a token of the agent's service account bound to its pod, as
// the kubelet gives the agent (it carries the node-name claim), and tries with kubectl what a
// compromised agent would to let its held node out: the release annotation on its GPUNode,
// the holds annotation and the taints of its Node. Each is refused by the admission policy;
// a write the agent does make (a label on its own Node) is allowed with the same token. Then
// the policy is put right and the node is accepted and released again.
func agentTokenCannotRelease(t *testing.T) {
	pod := agentPod(t)
	token := strings.TrimSpace(kubectl(t, "-n", namespace, "create", "token", "gpunode-agent",
		"--bound-object-kind", "Pod", "--bound-object-name", pod.Name, "--bound-object-uid", string(pod.UID)))
	server := strings.TrimSpace(kubectl(t, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
	// asAgent runs kubectl with the agent's token alone; the token is kept out of the errors.
	asAgent := func(args ...string) (string, error) {
		out, err := inCluster(t.Context(), "kubectl", append([]string{"--kubeconfig", "/dev/null", "--server", server,
			"--insecure-skip-tls-verify", "--token", token}, args...)...)
		if err != nil {
			err = errors.New(strings.ReplaceAll(err.Error(), token, "$AGENT_TOKEN"))
		}
		return out, err
	}
	if out, err := asAgent("label", "node", nodeName, "gpunode.dev/test-agent-token=works", "--overwrite"); err != nil {
		t.Fatalf("the agent's token was refused a label on its own node (the token or its node claim does not work): %v\n%s", err, out)
	}
	stamp := time.Now().UTC().Format(time.RFC3339)
	tries := []struct {
		what    string
		args    []string
		refusal string
	}{
		{"gpunode.dev/release on its GPUNode", []string{"annotate", "gpunode", nodeName, v1alpha1.AnnotationRelease + "=" + stamp},
			"may not add, change or remove " + v1alpha1.AnnotationRelease},
		{"the removal of its Node's holds", []string{"annotate", "node", nodeName, v1alpha1.AnnotationHolds + "-"},
			"only a hold's owner releases it"},
		{"the removal of its Node's taints", []string{"taint", "node", nodeName, v1alpha1.TaintNotAccepted + ":NoSchedule-", v1alpha1.TaintUnschedulable + ":NoSchedule-"},
			"may not remove the gpunode taints"},
	}
	for _, try := range tries {
		out, err := asAgent(try.args...)
		if err == nil || !strings.Contains(err.Error(), try.refusal) {
			t.Errorf("the agent's token tried %s: %v\n%s\nwant a refusal saying %q", try.what, err, out, try.refusal)
			continue
		}
		t.Logf("refused %s: %s", try.what, err)
	}
	if !nodeTainted(t, v1alpha1.TaintNotAccepted) || gpuNode(t).Annotations[v1alpha1.AnnotationRelease] == stamp {
		t.Fatal("the node lost its hold or took the agent's release")
	}
	kubectl(t, "label", "node", nodeName, "gpunode.dev/test-agent-token-")
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", classesWith(8))
	waitFor(t, "the node accepted and released under the policy put right", settle, func() (bool, string) {
		gn := gpuNode(t)
		return gn.Status.Phase == v1alpha1.PhaseInService && len(gn.Status.Holds) == 0 && !nodeTainted(t, v1alpha1.TaintNotAccepted),
			fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
}

// nodeHolds is the node's holds annotation, parsed, and the keys of its gpunode taints.
func nodeHolds(t *testing.T) (nodeops.Holds, []string) {
	t.Helper()
	var n corev1.Node
	if err := getJSON(t.Context(), &n, "node", nodeName); err != nil {
		t.Fatal(err)
	}
	holds, err := nodeops.ParseHolds(nodeName, n.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		b, _ := json.Marshal(n.Annotations)
		t.Fatalf("%v (annotations %s)", err, b)
	}
	var keys []string
	for _, tt := range nodeops.OwnedTaints(n.Spec.Taints) {
		keys = append(keys, tt.Key)
	}
	return holds, keys
}
