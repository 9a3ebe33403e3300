package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestExplainNodeSaysWhenNoPolicySelectsTheNodeThatTheBuiltInDefaultsApply(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	gn := &v1alpha1.GPUNode{Status: v1alpha1.GPUNodeStatus{Agent: &v1alpha1.AgentStatus{HeartbeatTime: metav1.NewTime(now.Add(-10 * time.Second))}}}
	e := nodeExplanation{BuiltInDefaults: true, Agent: explainAgent(gn, nodepolicy.BuiltIn(), false, now)}
	out := e.String()
	for _, want := range []string{
		"pool: none: no GPUNodePolicy selects the Node, so the built-in defaults apply (acceptance as `gpunode accept` without --policy, remediation's defaults, agentLostAfter 2m0s)\n",
		"agent: alive, last heartbeat 2026-03-01T11:59:50Z (10s ago): the agent's heartbeat is fresh; the node is held when none comes for 2m0s (the built-in defaults (no GPUNodePolicy selects the node))\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
}

func TestExplainNodeSaysAnAgentIsLostAndTheNodeHeldByLiveness(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	gn := joinNode(t, c, "explain-lost", "explain-lost", false)
	beat := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	gn.Status.Agent = &v1alpha1.AgentStatus{HeartbeatTime: metav1.NewTime(beat)}
	if err := c.Status().Update(t.Context(), gn); err != nil {
		t.Fatal(err)
	}
	// Priority 10: above any policy of another test that selects every node.
	if err := c.Create(t.Context(), &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "explain-lost"},
		Spec: v1alpha1.GPUNodePolicySpec{Priority: 10, AgentLostAfter: &metav1.Duration{Duration: 5 * time.Minute},
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "explain-lost"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := (nodeops.Ops{Client: c}).Hold(t.Context(), "explain-lost", v1alpha1.HoldOwnerLiveness, v1alpha1.HoldReasonAgentLost); err != nil {
		t.Fatal(err)
	}
	execute(t, "explain", "node", "explain-lost", "--kubeconfig", kc).check(t, ExitOK, []string{
		"held by liveness since ",
		": agent-lost\n",
		"agent: lost, last heartbeat " + beat.Format(time.RFC3339) + " (1h0m",
		`agent-lost: no heartbeat from the agent since ` + beat.Format(time.RFC3339) + ` (GPUNodePolicy "explain-lost" allows 5m0s)`,
		"pool: explain-lost\n",
	}, nil)

	r := execute(t, "explain", "node", "explain-lost", "--kubeconfig", kc, "--json")
	r.check(t, ExitOK, nil, nil)
	var got struct {
		BuiltIn bool `json:"builtInDefaults"`
		Agent   struct {
			HeartbeatTime time.Time `json:"heartbeatTime"`
			LostAfter     string    `json:"lostAfter"`
			Lost          bool      `json:"lost"`
			Reason        string    `json:"reason"`
		} `json:"agent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if got.BuiltIn || !got.Agent.Lost || got.Agent.Reason != "AgentLost" || got.Agent.LostAfter != "5m0s" || !got.Agent.HeartbeatTime.Equal(beat) {
		t.Errorf("JSON agent %+v (built-in %v), want lost after 5m0s since %s under the node's policy", got.Agent, got.BuiltIn, beat)
	}
}
