package remediation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/remediation"
)

// slice is a node-local ResourceSlice of driver for node with a device per UUID,
// named gpu-<index>, plus extra devices without a GPU's UUID.
func slice(driver, node string, generation int64, uuids []string, extra ...resourcev1.Device) resourcev1.ResourceSlice {
	s := resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + strings.ReplaceAll(driver, ".", "-")},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: 1},
		},
	}
	for i, u := range uuids {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"uuid": {StringValue: ptr.To(u)}, "type": {StringValue: ptr.To("gpu")},
			},
		})
	}
	s.Spec.Devices = append(s.Spec.Devices, extra...)
	return s
}

func mig(name, parent string) resourcev1.Device {
	return resourcev1.Device{Name: name, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"uuid": {StringValue: ptr.To("MIG-" + name)}, "parentUUID": {StringValue: ptr.To(parent)}, "type": {StringValue: ptr.To("mig")},
	}}
}

// selected renders a plan's rules as "name driver/pool/device effect".
func selected(p RulePlan) []string {
	var out []string
	for _, r := range p.Rules {
		out = append(out, fmt.Sprintf("%s %s %s", r.Name, RuleDevices(r), r.Spec.Taint.Effect))
	}
	return out
}

func TestPlanDeviceTaintRules(t *testing.T) {
	gpus := []string{"GPU-a", "GPU-b"}
	nic := resourcev1.Device{Name: "nic-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": {StringValue: ptr.To("NIC-0")}}}
	nicSlice := slice("nic.example.com", "n1", 1, nil, nic)
	cases := []struct {
		name      string
		scope     *HoldScope
		slices    []resourcev1.ResourceSlice
		want      []string
		unmatched []string
	}{
		{"no hold plans no rule", nil, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus)}, nil, nil},
		{"a node hold selects gpunode's driver and the node's pool",
			&HoldScope{Hold: "remediation"}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus)},
			[]string{"gpunode-n1-remediation gpu.gpunode.dev/n1/* NoSchedule"}, nil},
		{"a node hold selects NVIDIA's driver by the GPUs' UUIDs and leaves a NIC driver alone",
			&HoldScope{Hold: "remediation"}, []resourcev1.ResourceSlice{slice("gpu.nvidia.com", "n1", 1, gpus), nicSlice},
			[]string{"gpunode-n1-remediation gpu.nvidia.com/n1/* NoSchedule"}, nil},
		{"a draining hold is NoExecute",
			&HoldScope{Hold: "remediation", Drains: true}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus)},
			[]string{"gpunode-n1-remediation gpu.gpunode.dev/n1/* NoExecute"}, nil},
		{"a per-GPU hold selects that GPU's device alone",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-b"}}, []resourcev1.ResourceSlice{slice("gpu.nvidia.com", "n1", 1, gpus), nicSlice},
			[]string{"gpunode-n1-remediation gpu.nvidia.com/n1/gpu-1 NoSchedule"}, nil},
		{"a per-GPU hold selects the GPU's MIG devices too, one rule each",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}},
			[]resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus, mig("gpu-0-mig-1-0", "GPU-a"), mig("gpu-1-mig-1-0", "GPU-b"))},
			[]string{
				"gpunode-n1-remediation-gpu-0 gpu.gpunode.dev/n1/gpu-0 NoSchedule",
				"gpunode-n1-remediation-gpu-0-mig-1-0 gpu.gpunode.dev/n1/gpu-0-mig-1-0 NoSchedule",
			}, nil},
		{"a held GPU on a node without DRA is not unmatched",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}}, []resourcev1.ResourceSlice{nicSlice}, nil, nil},
		{"a held GPU no device publishes is reported unmatched",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-a", "GPU-z"}}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus)},
			[]string{"gpunode-n1-remediation gpu.gpunode.dev/n1/gpu-0 NoSchedule"}, []string{"GPU-z"}},
		{"another node's slices are not the node's",
			&HoldScope{Hold: "remediation"}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n2", 1, gpus)}, nil, nil},
		{"an older generation of the pool is ignored",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}},
			[]resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 2, []string{"GPU-b", "GPU-a"}), func() resourcev1.ResourceSlice {
				s := slice(DriverGPUNode, "n1", 1, gpus)
				s.Name += "-old"
				return s
			}()},
			[]string{"gpunode-n1-remediation gpu.gpunode.dev/n1/gpu-1 NoSchedule"}, nil},
		{"a per-GPU hold on two GPU drivers names each rule by driver and device",
			&HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus), slice("gpu.nvidia.com", "n1", 1, gpus)},
			[]string{
				"gpunode-n1-remediation-gpu.gpunode.dev-gpu-0 gpu.gpunode.dev/n1/gpu-0 NoSchedule",
				"gpunode-n1-remediation-gpu.nvidia.com-gpu-0 gpu.nvidia.com/n1/gpu-0 NoSchedule",
			}, nil},
		{"two GPU drivers on the node get a rule each, named by driver",
			&HoldScope{Hold: "remediation"}, []resourcev1.ResourceSlice{slice(DriverGPUNode, "n1", 1, gpus), slice("gpu.nvidia.com", "n1", 1, gpus)},
			[]string{
				"gpunode-n1-remediation-gpu.gpunode.dev gpu.gpunode.dev/n1/* NoSchedule",
				"gpunode-n1-remediation-gpu.nvidia.com gpu.nvidia.com/n1/* NoSchedule",
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanDeviceTaintRules("n1", tc.scope, gpus, tc.slices)
			if got := selected(p); !slices.Equal(got, tc.want) {
				t.Errorf("rules\n got %q\nwant %q", got, tc.want)
			}
			if !slices.Equal(p.Unmatched, tc.unmatched) {
				t.Errorf("unmatched %q, want %q", p.Unmatched, tc.unmatched)
			}
			for _, r := range p.Rules {
				if r.Labels[LabelRuleNode] != "n1" || r.Labels[LabelRuleHold] != "remediation" ||
					r.Spec.Taint.Key != DeviceTaintKey || r.Spec.Taint.Value != "remediation" {
					t.Errorf("rule %s has labels %v and taint %+v", r.Name, r.Labels, r.Spec.Taint)
				}
			}
		})
	}
}

func TestARuleNameOrLabelTooLongIsCutWithAHashAndStaysDistinct(t *testing.T) {
	long := strings.Repeat("node", 70)
	a, b := RuleName("gpunode-"+long+"a-remediation"), RuleName("gpunode-"+long+"b-remediation")
	if len(a) > 253 || a == b {
		t.Errorf("names %q and %q: longer than 253 or equal", a, b)
	}
	if l := labelValue(long + "A"); len(l) > 63 || l != strings.ToLower(l) {
		t.Errorf("label value %q is not a label value", l)
	}
	if got := RuleName("gpunode-Node_1-remediation"); got != "gpunode-node-1-remediation" {
		t.Errorf("RuleName sanitised to %q", got)
	}
}

func TestTheScopeOfRemediationsHoldFollowsTheLadder(t *testing.T) {
	held := remediation.Facts{GPUs: []remediation.GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}},
		Holds: []remediation.Hold{{Owner: remediation.OwnerRemediation}}}
	free := held
	free.Holds = nil
	cases := []struct {
		name string
		f    remediation.Facts
		d    remediation.Decision
		want *HoldScope
	}{
		{"a node not held has no scope", free, remediation.Decision{}, nil},
		{"a hold released has no scope", held, remediation.Decision{Hold: remediation.HoldRelease}, nil},
		{"a reset of one GPU holds that GPU", free, remediation.Decision{Hold: remediation.HoldPlace,
			State: remediation.State{Step: remediation.StepResetGPU, GPUs: []int{1}}}, &HoldScope{Hold: "remediation", GPUs: []string{"GPU-b"}}},
		{"a reboot holds the whole node", held, remediation.Decision{
			State: remediation.State{Step: remediation.StepRebootNode, GPUs: []int{1}}}, &HoldScope{Hold: "remediation"}},
		{"a node-wide fault holds the whole node", held, remediation.Decision{
			State: remediation.State{Step: remediation.StepResetGPU, GPUs: []int{1}, NodeWide: true}}, &HoldScope{Hold: "remediation"}},
		{"maintenance holds the whole node", held, remediation.Decision{
			State: remediation.State{Phase: remediation.PhaseMaintenance, GPUs: []int{0}}}, &HoldScope{Hold: "remediation"}},
		{"evicting pods drains", held, remediation.Decision{Actions: []remediation.Action{{Kind: remediation.ActionEvictPods, GPUs: []int{0}}},
			State: remediation.State{Step: remediation.StepRestartApp, GPUs: []int{0}}}, &HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}, Drains: true}},
		{"a drain started still drains", held, remediation.Decision{
			State: remediation.State{Step: remediation.StepResetGPU, GPUs: []int{0}, DrainStarted: at}}, &HoldScope{Hold: "remediation", GPUs: []string{"GPU-a"}, Drains: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ScopeOf(tc.f, tc.d)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ScopeOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// rules lists the DeviceTaintRules of h's node.
func (h *harness) rules() []resourcev1.DeviceTaintRule {
	h.t.Helper()
	var list resourcev1.DeviceTaintRuleList
	if err := h.c.List(h.t.Context(), &list, client.MatchingLabels(RuleLabels(h.name, ""))); err != nil {
		h.t.Fatalf("listing the DeviceTaintRules of %s: %v", h.name, err)
	}
	return list.Items
}

// publish creates a ResourceSlice of driver with h's GPUs, as the driver's plugin would.
func (h *harness) publish(driver string, gpus int) {
	h.t.Helper()
	var uuids []string
	for i := range gpus {
		uuids = append(uuids, uuid(i))
	}
	s := slice(driver, h.name, 1, uuids)
	if err := h.c.Create(h.t.Context(), &s); err != nil {
		h.t.Fatalf("publishing the ResourceSlice of %s: %v", h.name, err)
	}
}

func ruleText(rs []resourcev1.DeviceTaintRule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %s=%s:%s", r.Name, RuleDevices(r), r.Spec.Taint.Key, r.Spec.Taint.Value, r.Spec.Taint.Effect))
	}
	return out
}

func TestAHeldGPUOnNVIDIAsDRADriverGetsADeviceTaintRuleThatComesBackWhenDeletedAndGoesWithTheHold(t *testing.T) {
	h := newHarness(t, "rem-dtr", 2, v1alpha1.RemediationPolicy{})
	h.publish("gpu.nvidia.com", 2)
	h.pass(time.Second)
	if rs := h.rules(); len(rs) != 0 {
		t.Fatalf("a healthy node has DeviceTaintRules %q", ruleText(rs))
	}

	h.setGPU(1, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	h.pass(time.Second)
	want := []string{fmt.Sprintf("gpunode-%s-remediation gpu.nvidia.com/%s/gpu-1 gpunode.dev/remediation=remediation:NoSchedule", h.name, h.name)}
	if got := ruleText(h.rules()); !h.held() || !slices.Equal(got, want) {
		t.Fatalf("held %t, rules %q; want held with %q", h.held(), got, want)
	}
	if !h.sawEvent("DeviceTaintRule gpunode-"+h.name+"-remediation", "gpu-1", "NoSchedule") {
		t.Error("no Event names the rule")
	}
	rs := h.rules()
	if refs := rs[0].OwnerReferences; len(refs) != 1 || refs[0].Kind != "GPUNode" || refs[0].Name != h.name {
		t.Errorf("the rule is owned by %+v, want the GPUNode", refs)
	}
	if f := rs[0].ManagedFields; len(f) == 0 || f[0].Manager != v1alpha1.FieldManagerRemediation {
		t.Errorf("the rule's managed fields %+v, want %s's", f, v1alpha1.FieldManagerRemediation)
	}

	if err := h.c.Delete(t.Context(), &rs[0]); err != nil {
		t.Fatal(err)
	}
	h.pass(time.Second)
	if got := ruleText(h.rules()); !slices.Equal(got, want) {
		t.Fatalf("the rule deleted by hand while the hold stands is %q, want it back: %q", got, want)
	}
	h.pass(time.Second) // re-entrant: nothing changes
	if got := ruleText(h.rules()); !slices.Equal(got, want) {
		t.Fatalf("another pass left %q", got)
	}

	h.setGPU(1, v1alpha1.HealthHealthy, "none")
	for range 5 {
		if !h.held() {
			break
		}
		h.pass(time.Second)
	}
	if h.held() {
		t.Fatal("the node is still held after its fault cleared before any step")
	}
	if rs := h.rules(); len(rs) != 0 {
		t.Fatalf("the hold is released but the rules %q remain", ruleText(rs))
	}
	if !h.sawEvent("DeviceTaintRemoved") {
		t.Error("no Event says the rule was removed")
	}
}

func TestANodeHoldOnGPUNodesOwnDriverSelectsThePoolOnceTheSliceIsPublished(t *testing.T) {
	h := newHarness(t, "rem-dtr-node", 1, v1alpha1.RemediationPolicy{})
	h.setGPU(0, v1alpha1.HealthUnhealthy, "reboot-node", "xid-79", "gpu-lost")
	h.pass(time.Second)
	if !h.held() {
		t.Fatal("the node is not held")
	}
	if rs := h.rules(); len(rs) != 0 {
		t.Fatalf("rules %q without a published slice", ruleText(rs))
	}
	h.publish(DriverGPUNode, 1)
	h.pass(time.Second)
	want := []string{fmt.Sprintf("gpunode-%s-remediation gpu.gpunode.dev/%s/* gpunode.dev/remediation=remediation:NoSchedule", h.name, h.name)}
	if got := ruleText(h.rules()); !slices.Equal(got, want) {
		t.Fatalf("rules %q, want %q", got, want)
	}
}

func TestThroughAManagerARuleDeletedByHandComesBackAndASlicePublishedLateGetsItsRule(t *testing.T) {
	h := newHarness(t, "rem-dtr-mgr", 2, v1alpha1.RemediationPolicy{})
	runManager(t)
	h.setGPU(0, v1alpha1.HealthUnhealthy, "reset-gpu", "xid-48")
	waitFor(t, "the faulty node is held", h.held)

	// The slice comes after the hold, with the Node as its owner (as the DRA helper
	// library publishes it): the watch brings the rule.
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := h.c.Get(t.Context(), client.ObjectKey{Name: h.name}, node); err != nil {
		t.Fatal(err)
	}
	s := slice(DriverGPUNode, h.name, 1, []string{uuid(0), uuid(1)})
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: h.name, UID: node.UID}}
	if err := h.c.Create(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
	var first resourcev1.DeviceTaintRule
	waitFor(t, "the held GPU's device gets its rule", func() bool {
		rs := h.rules()
		if len(rs) == 1 && rs[0].Spec.DeviceSelector != nil && ptr.Deref(rs[0].Spec.DeviceSelector.Device, "") == "gpu-0" {
			first = rs[0]
			return true
		}
		return false
	})
	if err := h.c.Delete(t.Context(), &first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule deleted by hand comes back", func() bool {
		rs := h.rules()
		return len(rs) == 1 && rs[0].UID != first.UID && rs[0].Name == first.Name
	})
}

func TestThroughAManagerARuleChangedByHandIsPutBack(t *testing.T) {
	h := newHarness(t, "rem-dtr-edit", 1, v1alpha1.RemediationPolicy{})
	h.publish(DriverGPUNode, 1)
	runManager(t)
	h.setGPU(0, v1alpha1.HealthUnhealthy, "reboot-node", "xid-79")
	waitFor(t, "the node's rule", func() bool { return len(h.rules()) == 1 })
	r := h.rules()[0]
	r.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNone
	if err := h.c.Update(t.Context(), &r); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule's effect put back", func() bool {
		rs := h.rules()
		return len(rs) == 1 && rs[0].Spec.Taint.Effect != resourcev1.DeviceTaintEffectNone
	})
}
