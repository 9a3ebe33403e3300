package cluster_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// upgradeToDRA switches the node from the device plugin to DRA the way docs/dra.md tells a
// user: the GPU pods off the node first (one API per node: a device the device plugin gave
// must not be prepared for a claim too), then helm upgrade with agent.dra.enabled. The
// agent publishes the node's ResourceSlice: the 8 simulated GPUs with the contract's
// attributes, none tainted, and stops serving nvidia.com/gpu through the device plugin.
func upgradeToDRA(t *testing.T) {
	needDRA(t, false)
	kubectl(t, "delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout", settle.String())
	helmUpgrade(t, "--set", "agent.dra.enabled=true")
	gn := gpuNode(t)
	var devices map[string]resourcev1.Device
	waitFor(t, "the node's ResourceSlice with the 8 simulated GPUs", settle, func() (bool, string) {
		var err error
		if devices, err = draDevices(t); err != nil {
			return false, err.Error()
		}
		return len(devices) == len(gn.Status.Inventory.GPUs), fmt.Sprintf("%d devices: %v", len(devices), slices.Sorted(maps.Keys(devices)))
	})
	for _, g := range gn.Status.Inventory.GPUs {
		name := fmt.Sprintf("gpu-%d", g.Index)
		d, ok := devices[name]
		if !ok {
			t.Errorf("no device %s for GPU %d (%s) in the slice", name, g.Index, g.UUID)
			continue
		}
		for _, bad := range deviceMismatches(d, g, gn.Status.AcceleratorClass) {
			t.Errorf("device %s: %s", name, bad)
		}
		if len(d.Taints) != 0 {
			t.Errorf("device %s of a healthy GPU is tainted: %+v", name, d.Taints)
		}
	}
	for class, typ := range map[string]string{draDriver: "gpu", "mig.gpunode.dev": "mig"} {
		var dc resourcev1.DeviceClass
		if err := getJSON(t.Context(), &dc, "deviceclass", class); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == %q`, draDriver, draDriver, typ)
		if len(dc.Spec.Selectors) != 1 || dc.Spec.Selectors[0].CEL == nil || dc.Spec.Selectors[0].CEL.Expression != want {
			t.Errorf("DeviceClass %s selects %+v, want %s", class, dc.Spec.Selectors, want)
		}
	}
	// The device plugin stops: its socket leaves the kubelet's device-plugins folder.
	sock := filepath.Join(env.state, "var-lib/kubelet/device-plugins/gpunode-gpu.sock")
	waitFor(t, "the agent's device plugin socket gone from the node", settle, func() (bool, string) {
		_, err := os.Stat(sock)
		return os.IsNotExist(err), fmt.Sprintf("stat %s: %v", filepath.Base(sock), err)
	})
}

// helmUpgrade is helm upgrade of the release with the values it has and args.
func helmUpgrade(t *testing.T, args ...string) {
	t.Helper()
	cmd := append([]string{"upgrade", "gpunode", "./charts/gpunode", "--namespace", namespace, "--reuse-values",
		"--wait", "--timeout", "10m"}, args...)
	if out, err := inCluster(t.Context(), "helm", cmd...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	kubectl(t, "-n", namespace, "rollout", "status", "daemonset/gpunode-agent", "--timeout", settle.String())
	waitFor(t, "the agent's pod Running and Ready after the upgrade", settle, agentReady)
}

// draDevices is the devices of gpunode's ResourceSlices for the node, by name.
func draDevices(t *testing.T) (map[string]resourcev1.Device, error) {
	var l resourcev1.ResourceSliceList
	if err := getJSON(t.Context(), &l, "resourceslices", "--field-selector", "spec.driver="+draDriver+",spec.nodeName="+nodeName); err != nil {
		return nil, err
	}
	out := map[string]resourcev1.Device{}
	for _, s := range l.Items {
		if s.Spec.Pool.Name != nodeName {
			return nil, fmt.Errorf("slice %s is of pool %q, want the node's name %q", s.Name, s.Spec.Pool.Name, nodeName)
		}
		for _, d := range s.Spec.Devices {
			if _, dup := out[d.Name]; dup {
				return nil, fmt.Errorf("device %s is published twice", d.Name)
			}
			out[d.Name] = d
		}
	}
	return out, nil
}

// deviceMismatches lists how a published device differs from the GPU the GPUNode's
// inventory names (the contract's attributes; class is the node's accelerator class).
func deviceMismatches(d resourcev1.Device, g v1alpha1.GPUInfo, class string) []string {
	var bad []string
	str := func(name, want string) {
		a, ok := d.Attributes[resourcev1.QualifiedName(name)]
		switch {
		case !ok || a.StringValue == nil:
			bad = append(bad, fmt.Sprintf("attribute %s missing or not a string: %+v", name, a))
		case want != "" && *a.StringValue != want:
			bad = append(bad, fmt.Sprintf("attribute %s is %q, want %q", name, *a.StringValue, want))
		}
	}
	str("type", "gpu")
	str("uuid", g.UUID)
	str("productName", g.Model)
	str("brand", "")
	str("architecture", "")
	if g.Serial != "" {
		str("serial", g.Serial)
	}
	if class != "" {
		str("platformClass", class)
	}
	if g.PCIBusID != "" {
		// deviceattribute's form: a 4-digit domain, lower case.
		str("resource.kubernetes.io/pciBusID", strings.ToLower(g.PCIBusID[len(g.PCIBusID)-12:]))
	}
	for _, v := range []string{"cudaComputeCapability", "driverVersion", "cudaDriverVersion"} {
		if a, ok := d.Attributes[resourcev1.QualifiedName(v)]; !ok || a.VersionValue == nil {
			bad = append(bad, fmt.Sprintf("attribute %s missing or not a version: %+v", v, a))
		}
	}
	if a, ok := d.Attributes["index"]; !ok || a.IntValue == nil || *a.IntValue != int64(g.Index) {
		bad = append(bad, fmt.Sprintf("attribute index is %+v, want %d", a, g.Index))
	}
	if c, ok := d.Capacity["memory"]; !ok || c.Value.Value() != g.MemoryMiB<<20 {
		bad = append(bad, fmt.Sprintf("capacity memory is %v, want %d bytes (%d MiB)", c.Value.String(), g.MemoryMiB<<20, g.MemoryMiB))
	}
	return bad
}

// gpuTemplate is a ResourceClaimTemplate in default for one gpu.gpunode.dev device; cel,
// when not "", narrows the devices it may take.
func gpuTemplate(name, cel string) string {
	sel := ""
	if cel != "" {
		sel = fmt.Sprintf(", selectors: [{cel: {expression: '%s'}}]", cel)
	}
	return fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %s, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: %s%s}}]
`, name, draDriver, sel)
}

// draClaimPod runs a pod whose claim comes from a ResourceClaimTemplate for one
// gpu.gpunode.dev device: the scheduler allocates a device of the node's slice, the kubelet
// asks the agent to prepare it, containerd injects it through the CDI spec of the claim, and
// the pod sees that one GPU.
func draClaimPod(t *testing.T) {
	needDRA(t, true)
	apply(t, gpuTemplate("one-gpu", ""))
	apply(t, claimPod("dra-one", "one-gpu", ""))
	claim := waitAllocated(t, "dra-one", "")
	res := claim.Status.Allocation.Devices.Results[0]
	if res.Driver != draDriver || res.Pool != nodeName {
		t.Fatalf("claim %s allocated %s/%s/%s, want a device of %s in pool %s", claim.Name, res.Driver, res.Pool, res.Device, draDriver, nodeName)
	}
	waitRunning(t, "dra-one")
	checkInjected(t, "dra-one", res.Device)
	// The agent attributes the pod to the GPU of its claim (the kubelet's pod-resources API
	// lists DRA claims' devices): in the GPUNode status and on its metrics.
	index := strings.TrimPrefix(res.Device, "gpu-")
	waitFor(t, "default/dra-one on GPU "+index+" in the GPUNode status", settle, func() (bool, string) {
		gn := gpuNode(t)
		for _, g := range gn.Status.GPUHealth {
			if fmt.Sprint(g.Index) == index {
				return slices.Contains(g.Pods, "default/dra-one"), fmt.Sprintf("GPU %d pods %v", g.Index, g.Pods)
			}
		}
		return false, fmt.Sprintf("no GPU %s in gpuHealth (pods %v)", index, podsOf(gn))
	})
	waitFor(t, "the agent's DCGM series of GPU "+index+" labelled with pod dra-one", settle, func() (bool, string) {
		out, err := agentMetrics(t, agentPod(t).Name)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range trimLines(out) {
			if strings.HasPrefix(l, "DCGM_FI_DEV_GPU_TEMP{") && strings.Contains(l, `gpu="`+index+`"`) && strings.Contains(l, `pod="dra-one"`) {
				return true, ""
			}
		}
		return false, "no DCGM_FI_DEV_GPU_TEMP series of GPU " + index + " with pod=\"dra-one\""
	})
	// The claim's CDI spec, named by the claim's UID, in the runtime's CDI folder.
	out := nodeCDISpecs(t)
	if !strings.Contains(out, string(claim.UID)) {
		t.Errorf("no CDI spec named by claim %s's UID %s in /var/run/cdi:\n%s", claim.Name, claim.UID, out)
	}
}

// waitRunning waits for the pod in default to run.
func waitRunning(t *testing.T, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	waitFor(t, "pod "+name+" Running", settle, func() (bool, string) {
		if err := getJSON(t.Context(), &pod, "pod", "-n", "default", name); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodRunning, "phase " + string(pod.Status.Phase) + " " + podWhy(pod)
	})
	return pod
}

// checkInjected checks that the pod sees exactly the simulated GPU of device (gpu-<index>):
// its CDI variable GPUNODE_SIM_GPU_<index>=<uuid> and its device node /dev/nvidia<index>.
func checkInjected(t *testing.T, pod, device string) {
	t.Helper()
	out := kubectl(t, "exec", "-n", "default", pod, "--", "sh", "-c", "env; ls /dev")
	index := strings.TrimPrefix(device, "gpu-")
	var given []string
	for _, l := range trimLines(out) {
		if k, _, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "GPUNODE_SIM_GPU_") {
			given = append(given, l)
		}
	}
	var uuid string
	for _, g := range gpuNode(t).Status.Inventory.GPUs {
		if fmt.Sprint(g.Index) == index {
			uuid = g.UUID
		}
	}
	if want := "GPUNODE_SIM_GPU_" + index + "=" + uuid; len(given) != 1 || given[0] != want || uuid == "" {
		t.Errorf("pod %s was allocated %s and sees %v, want [%s]", pod, device, given, want)
	}
	if !slices.Contains(trimLines(out), "nvidia"+index) {
		t.Errorf("pod %s was allocated %s and has no /dev/nvidia%s:\n%s", pod, device, index, out)
	}
}

// draExtendedResource turns the extended-resource class on: an unchanged pod asking for
// nvidia.com/gpu: 1 gets a claim the scheduler makes for it on the gpu.gpunode.dev class,
// and sees its device, on a node whose device plugin is off.
func draExtendedResource(t *testing.T) {
	needDRA(t, true)
	helmUpgrade(t, "--set", "dra.extendedResource.enabled=true")
	var dc resourcev1.DeviceClass
	if err := getJSON(t.Context(), &dc, "deviceclass", draDriver); err != nil {
		t.Fatal(err)
	}
	if dc.Spec.ExtendedResourceName == nil || *dc.Spec.ExtendedResourceName != "nvidia.com/gpu" {
		t.Fatalf("DeviceClass %s has extendedResourceName %v, want nvidia.com/gpu", draDriver, dc.Spec.ExtendedResourceName)
	}
	// The scheduler serves an extended resource through DRA only on a node that does not
	// offer it in its allocatable (none, or 0 while the kubelet keeps the stopped device
	// plugin's resource for its grace period).
	waitFor(t, "no nvidia.com/gpu allocatable on the node", settle, func() (bool, string) {
		n, err := nodeGPUs(t.Context())
		return err == nil && (n == "none" || n == "0"), fmt.Sprintf("allocatable nvidia.com/gpu %s (%v)", n, err)
	})
	pod := gpuPod(t, "gpu-extended")
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == "" {
		t.Fatalf("pod gpu-extended runs without an extended-resource claim: %+v", st)
	}
	var claim resourcev1.ResourceClaim
	if err := getJSON(t.Context(), &claim, "resourceclaim", "-n", "default", st.ResourceClaimName); err != nil {
		t.Fatal(err)
	}
	if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != draDriver {
		t.Fatalf("claim %s of pod gpu-extended: allocation %+v, want one %s device", claim.Name, a, draDriver)
	}
	checkInjected(t, "gpu-extended", claim.Status.Allocation.Devices.Results[0].Device)
}
