package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/testenv"
)

func TestExplainNodeListsTheDeviceTaintRulesItsHoldsOwn(t *testing.T) {
	cfg, c := testenv.Start(t)
	kc := kubeconfigFor(t, cfg)
	putInMaintenance(t, c, joinNode(t, c, "explain-dra", "explain-dra", true), time.Now().Add(-time.Minute))
	joinNode(t, c, "explain-dra-other", "explain-dra", true)
	// The rule remediation writes for GPU 3 on NVIDIA's driver, and one of another node.
	published := resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "explain-dra-gpu"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To("explain-dra"),
			Pool: resourcev1.ResourcePool{Name: "explain-dra", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-3", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"uuid": {StringValue: ptr.To(gpuUUID(3))}}}}},
	}
	for _, node := range []string{"explain-dra", "explain-dra-other"} {
		published.Spec.NodeName, published.Spec.Pool.Name = ptr.To(node), node
		plan := ctrlremediation.PlanDeviceTaintRules(node, &ctrlremediation.HoldScope{Hold: "remediation", GPUs: []string{gpuUUID(3)}}, []string{gpuUUID(3)}, []resourcev1.ResourceSlice{published})
		if len(plan.Rules) != 1 {
			t.Fatalf("plan %+v", plan)
		}
		if err := c.Create(t.Context(), &plan.Rules[0]); err != nil {
			t.Fatal(err)
		}
	}

	r := execute(t, "explain", "node", "explain-dra", "--kubeconfig", kc)
	r.check(t, ExitOK, []string{"device taint rule: gpunode-explain-dra-remediation (hold remediation) taints gpu.nvidia.com/explain-dra/gpu-3 gpunode.dev/remediation=remediation:NoSchedule since "}, nil)
	if strings.Contains(r.stdout, "explain-dra-other") {
		t.Errorf("another node's rule is listed:\n%s", r.stdout)
	}

	r = execute(t, "explain", "node", "explain-dra", "--kubeconfig", kc, "--json")
	r.check(t, ExitOK, nil, nil)
	var got struct {
		Rules []deviceTaintExplanation `json:"deviceTaintRules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if len(got.Rules) != 1 || got.Rules[0].Name != "gpunode-explain-dra-remediation" || got.Rules[0].Devices != "gpu.nvidia.com/explain-dra/gpu-3" ||
		got.Rules[0].Effect != "NoSchedule" || got.Rules[0].Hold != "remediation" || got.Rules[0].Since.IsZero() {
		t.Errorf("device taint rules %+v\n%s", got.Rules, r.stdout)
	}

	r = execute(t, "explain", "node", "explain-dra", "--kubeconfig", kc, "-o", "yaml")
	r.check(t, ExitOK, []string{"deviceTaintRules:\n- devices: gpu.nvidia.com/explain-dra/gpu-3\n  effect: NoSchedule\n  hold: remediation\n  name: gpunode-explain-dra-remediation\n"}, nil)
	execute(t, "explain", "node", "explain-dra", "--kubeconfig", kc, "-o", "xml").check(t, ExitUsage, nil, []string{`-o/--output "xml": must be text, table, json or yaml`})

	r = execute(t, "explain", "node", "explain-dra-other", "--kubeconfig", kc)
	r.check(t, ExitOK, []string{"device taint rule: gpunode-explain-dra-other-remediation"}, nil)
}
