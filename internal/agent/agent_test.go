package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/buildinfo"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestAFirstStartCreatesTheGPUNodeAndHoldsTheNode(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	cfg, _ := simConfig(t, c, name)
	start(t, cfg)

	eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
	gn, _ := getGPUNode(c, name)
	if gn.Spec.NodeName != name || gn.Spec.AcceptanceGeneration != 0 {
		t.Errorf("GPUNode spec = %+v, want nodeName %s and no acceptance asked", gn.Spec, name)
	}
	holds, err := nodeops.Ops{Client: c}.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 1 || holds[0].Owner != v1alpha1.HoldOwnerAcceptance || holds[0].Reason != "not-accepted" {
		t.Errorf("holds = %+v, want one acceptance hold for not-accepted", holds)
	}
	if n := getNode(t, c, name); !hasTaint(n, v1alpha1.TaintNotAccepted) || !hasTaint(n, v1alpha1.TaintUnschedulable) {
		t.Errorf("node taints = %+v, want %s and %s", n.Spec.Taints, v1alpha1.TaintNotAccepted, v1alpha1.TaintUnschedulable)
	}
}

func TestTheStatusCarriesInventoryVersionsAndHealthAndLeavesThePhaseAlone(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, nil)
	// A condition the kubelet owns must survive the agent's own conditions.
	kubelet := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, kubelet); err != nil {
		t.Fatal(err)
	}
	kubelet.Status.Conditions = append(kubelet.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"})
	if err := c.Status().Update(context.Background(), kubelet); err != nil {
		t.Fatal(err)
	}
	// An earlier agent's Node condition, applied as that agent did: this agent's first
	// write removes it.
	old := corev1ac.Node(name).WithStatus(corev1ac.NodeStatus().WithConditions(corev1ac.NodeCondition().
		WithType(v1alpha1.RetiredConditionGPUNodeAccepted).WithStatus(corev1.ConditionUnknown).WithReason("NotRun")))
	if err := c.Status().Apply(context.Background(), old, client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	cfg, _ := simConfig(t, c, name)
	start(t, cfg)
	eventually(t, "the Node carries GPUHealthy=True beside the kubelet's Ready, and no GPUNodeAccepted", func() error {
		var nd corev1.Node
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &nd); err != nil {
			return err
		}
		got := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for _, cd := range nd.Status.Conditions {
			got[cd.Type] = cd.Status
		}
		_, retired := got[v1alpha1.RetiredConditionGPUNodeAccepted]
		if got[v1alpha1.ConditionGPUHealthy] != corev1.ConditionTrue || retired || got[corev1.NodeReady] != corev1.ConditionTrue {
			return fmt.Errorf("node conditions %v", got)
		}
		return nil
	})
	eventually(t, "the status lists 8 GPUs", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if len(gn.Status.Inventory.GPUs) != 8 || len(gn.Status.GPUHealth) != 8 {
			return fmt.Errorf("inventory %d GPUs, health %d GPUs", len(gn.Status.Inventory.GPUs), len(gn.Status.GPUHealth))
		}
		return nil
	})
	// The controller sets the phase with its own field manager; the agent's later
	// publishing must leave it.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GPUNode",
		"metadata": map[string]any{"name": name}, "status": map[string]any{"phase": "Accepting"},
	}}
	if err := c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManagerAcceptance)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Backend.(*failingBackend).Inject(sim.Fault{GPU: 3, Type: sim.FaultXID, XID: 79}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GPU 3 is published unhealthy", func() error {
		gn, err := getGPUNode(c, name)
		if err != nil {
			return err
		}
		if h := gn.Status.GPUHealth; gn.Status.Health != v1alpha1.HealthUnhealthy || len(h) != 8 || h[3].Health != v1alpha1.HealthUnhealthy {
			return fmt.Errorf("health %q, GPUs %+v", gn.Status.Health, h)
		}
		return nil
	})
	gn, _ := getGPUNode(c, name)
	st := gn.Status
	checks := []struct {
		what string
		ok   bool
	}{
		{"the phase set by the controller is kept", st.Phase == v1alpha1.PhaseAccepting},
		{"the GPU count is 8", st.GPUCount == 8},
		{"the class is the platform label's", st.AcceleratorClass != "" && st.AcceleratorClass == getNode(t, c, name).Labels[labels.KeyAcceleratorClass]},
		{"GPU 0 has a UUID, model and memory", st.Inventory.GPUs[0].UUID != "" && st.Inventory.GPUs[0].Model == "NVIDIA H100 80GB HBM3" && st.Inventory.GPUs[0].MemoryMiB > 0},
		{"GPU 0 reports its NVLinks", st.Inventory.GPUs[0].NVLinks != nil && st.Inventory.GPUs[0].NVLinks.Total > 0},
		{"driver, CUDA, kernel and containerd versions are set", st.Versions.Driver != "" && st.Versions.CUDA != "" && st.Versions.Kernel != "" && st.Versions.Containerd != ""},
		{"the agent reports its own version", st.Versions.Agent != "" && st.Versions.Agent == buildinfo.Get().Version},
		{"GPU 3 needs an action", st.GPUHealth[3].Action != "none" && len(st.GPUHealth[3].Causes) > 0},
		{"GPUHealthy is False", conditionStatus(st.Conditions, v1alpha1.ConditionGPUHealthy) == metav1.ConditionFalse},
		{"the agent wrote no holds", len(st.Holds) == 0},
	}
	for _, ch := range checks {
		if !ch.ok {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Errorf("%s: not so in\n%s", ch.what, b)
		}
	}
}

func conditionStatus(cs []metav1.Condition, typ string) metav1.ConditionStatus {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func TestNodeLabelsAreAppliedWithoutTouchingForeignOnesAndDroppedLabelsDisappear(t *testing.T) {
	_, c := testenv.Start(t)
	name := newNode(t, c, map[string]string{"team": "ml"})
	cfg, backend := simConfig(t, c, name)
	start(t, cfg)
	eventually(t, "the GFD and platform labels are on the node", func() error {
		l := getNode(t, c, name).Labels
		if l[labels.KeyGPUProduct] != "NVIDIA-H100-80GB-HBM3" || l[labels.KeyGPUCount] != "8" || l[labels.KeyAcceleratorClass] == "" {
			return fmt.Errorf("labels %v", l)
		}
		return nil
	})
	if l := getNode(t, c, name).Labels; l["team"] != "ml" {
		t.Errorf("the foreign label team=ml was touched: labels %v", l)
	}
	backend.down.Store(true) // the driver went away: the agent publishes no GPU labels
	eventually(t, "the agent's labels are removed", func() error {
		l := getNode(t, c, name).Labels
		if k := append(labelsWithPrefix(l, labels.PrefixNVIDIA), labelsWithPrefix(l, labels.PrefixPlatform)...); len(k) > 0 {
			return fmt.Errorf("still labelled %v", k)
		}
		return nil
	})
	if l := getNode(t, c, name).Labels; l["team"] != "ml" {
		t.Errorf("the foreign label team=ml did not survive the agent dropping its labels: %v", l)
	}
}

func TestARaisedAcceptanceGenerationPublishesARecordJudgedByTheNodesPolicy(t *testing.T) {
	_, c := testenv.Start(t)
	cases := []struct {
		name       string
		expectGPUs int32 // 0: no policy selects the node
		wantPolicy string
		wantResult v1alpha1.AcceptanceResult
	}{
		{"a node no policy selects is judged by the built-in policy and passes", 0, "default", v1alpha1.AcceptancePassed},
		{"a node whose policy expects its 8 GPUs passes under that policy", 8, "expects-8", v1alpha1.AcceptancePassed},
		{"a node whose policy expects 16 GPUs fails under that policy", 16, "expects-16", v1alpha1.AcceptanceFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := fmt.Sprintf("pool-%d", nodeSeq.Add(1))
			name := newNode(t, c, map[string]string{"pool": pool})
			if tc.expectGPUs > 0 {
				createPolicy(t, c, tc.wantPolicy+"-"+pool, pool, tc.expectGPUs)
				tc.wantPolicy += "-" + pool
			}
			cfg, _ := simConfig(t, c, name)
			start(t, cfg)
			eventually(t, "the GPUNode exists", func() error { _, err := getGPUNode(c, name); return err })
			askForAcceptance(t, c, name, 1)
			last := acceptedAt(t, c, name, 1)
			rec := &v1alpha1.AcceptanceRecord{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: last.RecordName}, rec); err != nil {
				t.Fatalf("the record %q named by lastAcceptance: %v", last.RecordName, err)
			}
			s := rec.Spec
			if s.Node != name || s.AcceptanceGeneration != 1 || s.Result != tc.wantResult || s.Policy.Name != tc.wantPolicy || s.Backend != "sim" {
				t.Errorf("record node %s generation %d result %s policy %s backend %s; want %s 1 %s %s sim",
					s.Node, s.AcceptanceGeneration, s.Result, s.Policy.Name, s.Backend, name, tc.wantResult, tc.wantPolicy)
			}
			if last.Result != s.Result || last.Summary != s.Summary || len(s.Checks) == 0 {
				t.Errorf("lastAcceptance %+v does not summarise the record (%s, %+v, %d checks)", last, s.Result, s.Summary, len(s.Checks))
			}
		})
	}
}

// createPolicy makes a policy for nodes labelled pool whose class must have gpus GPUs.
func createPolicy(t *testing.T, c client.Client, name, pool string, gpus int32) {
	t.Helper()
	p := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GPUNodePolicySpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		Classes:      []v1alpha1.ClassExpectation{{Class: h100Class(t), GPUs: gpus}},
	}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// h100Class is the accelerator class of the simulated H100s.
func h100Class(t *testing.T) string {
	t.Helper()
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return labels.Mapping{}.Class(&snap.Devices[0])
}
