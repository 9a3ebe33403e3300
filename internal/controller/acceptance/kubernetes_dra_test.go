package acceptance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// draSlice is the ResourceSlice driver publishes for node: a device gpu-<i> of type gpu
// per GPU of gpuInfos(gpus).
func draSlice(driver, node string, gpus int) resourcev1.ResourceSlice {
	s := resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for _, g := range gpuInfos(gpus) {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", g.Index),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type": {StringValue: ptr.To("gpu")}, "uuid": {StringValue: ptr.To(g.UUID)},
			}})
	}
	return s
}

// onDRA makes f a DRA node: labelled so, nothing allocatable, gpunode's slice published,
// every GPU healthy.
func onDRA(f *KubernetesFacts) {
	f.Node.Labels[v1alpha1.LabelGPUAPI] = v1alpha1.GPUAPIDRA
	f.Node.Status.Capacity, f.Node.Status.Allocatable = nil, nil
	f.Slices = []resourcev1.ResourceSlice{draSlice(DriverGPUNode, f.Node.Name, 8)}
	for _, g := range f.GPUNode.Status.Inventory.GPUs {
		f.GPUNode.Status.GPUHealth = append(f.GPUNode.Status.GPUHealth, v1alpha1.GPUHealth{Index: g.Index, UUID: g.UUID, Health: v1alpha1.HealthHealthy})
	}
}

func dra(change func(f *KubernetesFacts)) func(f *KubernetesFacts) {
	return func(f *KubernetesFacts) { onDRA(f); change(f) }
}

func taint(f *KubernetesFacts, device int, key string, effect resourcev1.DeviceTaintEffect) {
	d := &f.Slices[0].Spec.Devices[device]
	d.Taints = append(d.Taints, resourcev1.DeviceTaint{Key: key, Value: "NeedsReset", Effect: effect})
}

func unhealthy(f *KubernetesFacts, gpu int) {
	f.GPUNode.Status.GPUHealth[gpu].Health = v1alpha1.HealthUnhealthy
}

func TestTheDRACheck(t *testing.T) {
	runL2Cases(t, CheckDRA, []l2Case{
		{"a DRA node whose slice publishes every GPU untainted passes", dra(keep), statusPass, "8 GPUs published by gpu.gpunode.dev; device taints agree"},
		{"gpunode's slice makes an unlabelled node a DRA node", func(f *KubernetesFacts) { onDRA(f); delete(f.Node.Labels, v1alpha1.LabelGPUAPI) },
			statusPass, "8 GPUs published"},
		{"the agent's status.gpuAPI makes an unlabelled node a DRA node", func(f *KubernetesFacts) {
			onDRA(f)
			delete(f.Node.Labels, v1alpha1.LabelGPUAPI)
			f.Slices, f.GPUNode.Status.GPUAPI = nil, v1alpha1.GPUAPIDRA
		}, statusFail, "no ResourceSlice publishes the node's GPUs"},
		{"NVIDIA's driver publishing the GPUs passes", dra(func(f *KubernetesFacts) {
			f.Slices = []resourcev1.ResourceSlice{draSlice("gpu.nvidia.com", f.Node.Name, 8)}
		}), statusPass, "8 GPUs published by gpu.nvidia.com"},
		{"a DRA node without a slice fails", dra(func(f *KubernetesFacts) { f.Slices = nil }), statusFail, "no ResourceSlice publishes the node's GPUs"},
		{"another node's slice is not the node's", dra(func(f *KubernetesFacts) {
			f.Slices = []resourcev1.ResourceSlice{draSlice(DriverGPUNode, "node-b", 8)}
		}), statusFail, "no ResourceSlice publishes"},
		{"fewer devices than GPUs fails", dra(func(f *KubernetesFacts) {
			f.Slices = []resourcev1.ResourceSlice{draSlice(DriverGPUNode, f.Node.Name, 6)}
		}),
			statusFail, "6 GPUs published as devices, 8 expected"},
		{"MIG devices count as their parent GPU", dra(func(f *KubernetesFacts) {
			d := &f.Slices[0].Spec.Devices[7]
			d.Name, d.Attributes = "gpu-7-mig-1-0", map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type": {StringValue: ptr.To("mig")}, "uuid": {StringValue: ptr.To("MIG-7")}, "parentUUID": {StringValue: ptr.To("GPU-0007")}}
		}), statusPass, "8 GPUs published"},
		{"an unhealthy GPU whose device is tainted passes", dra(func(f *KubernetesFacts) {
			unhealthy(f, 2)
			taint(f, 2, HealthTaintKey, resourcev1.DeviceTaintEffectNoSchedule)
		}), statusPass, "device taints agree"},
		{"an unhealthy GPU whose device carries no taint fails", dra(func(f *KubernetesFacts) { unhealthy(f, 2) }),
			statusFail, "GPU 2 (GPU-0002) is unhealthy but device gpu-2 carries no taint"},
		{"a healthy GPU whose device is tainted fails", dra(func(f *KubernetesFacts) {
			taint(f, 3, HealthTaintKey, resourcev1.DeviceTaintEffectNoExecute)
		}), statusFail, "GPU 3 (GPU-0003) is healthy but tainted (gpu-3: gpu.gpunode.dev/health=NeedsReset:NoExecute)"},
		{"a taint of effect None keeps nothing off and is no taint", dra(func(f *KubernetesFacts) {
			taint(f, 3, HealthTaintKey, resourcev1.DeviceTaintEffectNone)
		}), statusPass, "device taints agree"},
		{"a node without GPUs skips", dra(func(f *KubernetesFacts) {
			f.GPUNode.Status.GPUCount, f.GPUNode.Status.Inventory.GPUs, f.GPUNode.Status.GPUHealth = 0, nil, nil
		}), statusSkip, "no GPU"},
	})
}

// applied lists the IDs of the checks KubernetesChecks applies to f.
func applied(f KubernetesFacts) []string {
	var out []string
	for _, c := range KubernetesChecks(f) {
		out = append(out, c.ID)
	}
	return out
}

func TestOneAPIsChecksAreAppliedToANode(t *testing.T) {
	cases := []struct {
		name   string
		change func(f *KubernetesFacts)
		want   []string
	}{
		{"a device-plugin node gets the device-plugin checks and not kubernetes.dra", keep,
			[]string{CheckNodeReady, CheckAllocatable, CheckLabels, CheckKubelet, CheckTaints, CheckDevicePlugin, CheckOperands}},
		{"a DRA node gets kubernetes.dra and not the device-plugin checks", onDRA,
			[]string{CheckNodeReady, CheckLabels, CheckKubelet, CheckTaints, CheckOperands, CheckDRA}},
		{"a node labelled for the device plugin gets its checks even with gpunode's slice", func(f *KubernetesFacts) {
			onDRA(f)
			f.Node.Labels[v1alpha1.LabelGPUAPI] = v1alpha1.GPUAPIDevicePlugin
		}, []string{CheckNodeReady, CheckAllocatable, CheckLabels, CheckKubelet, CheckTaints, CheckDevicePlugin, CheckOperands}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := KubernetesFacts{Node: kubeNode("node-a", 8), GPUNode: gpuNode("node-a", 8)}
			tc.change(&f)
			if got := applied(f); !slices.Equal(got, tc.want) {
				t.Errorf("checks applied %q, want %q", got, tc.want)
			}
		})
	}
}

func TestADRANodeIsHeldUntilItsSliceIsPublishedWhenThePolicyGatesOnKubernetes(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.KubernetesRecheck = 250 * time.Millisecond })
	p := policy("l2-dra", 10, map[string]string{"fleet": "l2-dra"}, 8)
	p.Spec.Acceptance.Layers = []v1alpha1.Layer{"host", "hardware", "kubernetes"}
	createPolicy(t, c, p)
	labels := l2Labels("l2-dra")
	labels[v1alpha1.LabelGPUAPI] = v1alpha1.GPUAPIDRA
	join(t, c, "node-l2-dra", 8, labels)
	setNodeStatus(t, c, "node-l2-dra", 0) // DRA: nothing allocatable as an extended resource
	waitGPUNode(t, c, "node-l2-dra", "acceptance to be requested", func(gn *v1alpha1.GPUNode) bool { return gn.Spec.AcceptanceGeneration == 1 })

	answer(t, c, "node-l2-dra", 1, v1alpha1.AcceptancePassed, 8)
	gn := waitGPUNode(t, c, "node-l2-dra", "Accepted=False", func(gn *v1alpha1.GPUNode) bool {
		return condition(gn, v1alpha1.ConditionAccepted).Status == metav1.ConditionFalse
	})
	const want = "kubernetes.dra: no ResourceSlice publishes the node's GPUs: the DRA driver has not published them (is the agent running with --dra?) (record node-l2-dra-1)"
	if cond := condition(gn, v1alpha1.ConditionAccepted); cond.Reason != v1alpha1.ReasonKubernetesCheckFailed || cond.Message != want {
		t.Errorf("Accepted condition = %s: %q, want %s: %q", cond.Reason, cond.Message, v1alpha1.ReasonKubernetesCheckFailed, want)
	}

	s := draSlice(DriverGPUNode, "node-l2-dra", 8)
	if err := c.Create(t.Context(), &s); err != nil {
		t.Fatalf("publishing the node's ResourceSlice: %v", err)
	}
	gn = waitGPUNode(t, c, "node-l2-dra", "InService", func(gn *v1alpha1.GPUNode) bool { return gn.Status.Phase == v1alpha1.PhaseInService })
	if l2 := condition(gn, v1alpha1.ConditionKubernetesInventory); l2.Status != metav1.ConditionTrue || l2.Reason != v1alpha1.ReasonKubernetesPassed {
		t.Errorf("KubernetesInventory condition = %s/%s %q, want True/Passed", l2.Status, l2.Reason, l2.Message)
	}
}
