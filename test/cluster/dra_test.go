package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// The DRA steps (docs/dra.md): the cluster's own DRA machinery first (the kubelet's plugin
// folders, resource.k8s.io/v1, the scheduler's DynamicResources plugin, the
// controller-manager's resourceclaim and device-taint-eviction controllers), on a
// hand-made ResourceSlice of a driver no node runs; then gpunode's driver.

// draDriver is gpunode's DRA driver name: the slices' driver, the device class's name.
const draDriver = "gpu.gpunode.dev"

// checkDriver is the driver of the hand-made slice that checks the cluster's DRA control
// plane before any plugin runs, and checkNode the node it is on: a Node object no kubelet
// runs, so that nothing prepares its claims and no kubelet keeps state of them.
const (
	checkDriver = "cluster-check.gpunode.dev"
	checkNode   = "dra-check-node"
)

// draControlPlane checks what the DRA steps need from the cluster itself: the kubelet made
// its plugin folders in the node's /var/lib/kubelet (the agent's hostPaths), the API server
// serves resource.k8s.io/v1, the resourceclaim controller makes a pod's claim from its
// template, the scheduler allocates it from a node's slice, and the device-taint-eviction
// controller evicts the pod when a DeviceTaintRule taints its device NoExecute.
func draControlPlane(t *testing.T) {
	for _, d := range []string{"plugins", "plugins_registry"} {
		// The node's /var/lib is this folder of the state directory (hack/cluster-up.sh).
		if fi, err := os.Stat(filepath.Join(env.state, "var-lib/kubelet", d)); err != nil || !fi.IsDir() {
			t.Fatalf("the kubelet's /var/lib/kubelet/%s is not a folder on the node: %v", d, err)
		}
	}
	var served struct {
		Resources []struct{ Name string } `json:"resources"`
	}
	if err := getRaw(t, &served, "/apis/resource.k8s.io/v1"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deviceclasses", "devicetaintrules", "resourceclaims", "resourceclaimtemplates", "resourceslices"} {
		if !slices.ContainsFunc(served.Resources, func(r struct{ Name string }) bool { return r.Name == want }) {
			t.Errorf("resource.k8s.io/v1 does not serve %s (it serves %v)", want, served.Resources)
		}
	}
	t.Cleanup(func() {
		// t.Context() is done by now. Force: no kubelet runs on the check's node to finish the
		// pod's deletion.
		ctx := context.Background()
		for _, del := range [][]string{
			{"pod", "-n", "default", "dra-check", "--force", "--grace-period=0"}, {"node", checkNode},
			{"resourceclaimtemplate", "-n", "default", "dra-check"}, {"devicetaintrule", "dra-check"},
			{"resourceslice", "dra-check"}, {"deviceclass", checkDriver},
		} {
			if _, err := inCluster(ctx, "kubectl", append(append([]string{"delete"}, del...), "--ignore-not-found")...); err != nil {
				t.Errorf("cleaning up the DRA check: %v", err)
			}
		}
	})
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata: {name: %[2]s, labels: {kubernetes.io/hostname: %[2]s}}
spec:
  unschedulable: true
  taints: [{key: gpunode.dev/cluster-check, effect: NoSchedule}]
status:
  capacity: {cpu: "1", memory: 1Gi, pods: "10"}
  allocatable: {cpu: "1", memory: 1Gi, pods: "10"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: %[1]s}
spec:
  selectors: [{cel: {expression: 'device.driver == "%[1]s"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: dra-check}
spec:
  driver: %[1]s
  nodeName: %[2]s
  pool: {name: %[2]s, generation: 1, resourceSliceCount: 1}
  devices: [{name: dev-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: dra-check, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: dev, exactly: {deviceClassName: %[1]s}}]
`, checkDriver, checkNode))
	apply(t, claimPod("dra-check", "dra-check", fmt.Sprintf(`"nodeSelector":{"kubernetes.io/hostname":%q},"tolerations":[`+
		`{"key":"gpunode.dev/cluster-check","operator":"Exists"},{"key":"node.kubernetes.io/unschedulable","operator":"Exists"},`+
		`{"key":"node.kubernetes.io/not-ready","operator":"Exists"},{"key":"node.kubernetes.io/unreachable","operator":"Exists"}]`, checkNode)))
	claim := waitAllocated(t, "dra-check", "dev-0")
	if r := claim.Status.Allocation.Devices.Results[0]; r.Driver != checkDriver || r.Pool != checkNode {
		t.Fatalf("claim %s allocated %+v, want the device of %s", claim.Name, claim.Status.Allocation.Devices.Results, checkDriver)
	}
	apply(t, fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: dra-check}
spec:
  deviceSelector: {driver: %s, pool: %s, device: dev-0}
  taint: {key: gpunode.dev/cluster-check, value: evict, effect: NoExecute}
`, checkDriver, checkNode))
	waitEvicted(t, "dra-check")
}

// waitEvicted waits for the device-taint-eviction controller's Event on the pod and for the
// pod's deletion (gone, or going: a pod on a node without a kubelet stays Terminating).
func waitEvicted(t *testing.T, pod string) {
	t.Helper()
	waitFor(t, "pod "+pod+" deleted by the device-taint-eviction controller", settle, func() (bool, string) {
		var events corev1.EventList
		if err := getJSON(t.Context(), &events, "events", "-n", "default",
			"--field-selector", "involvedObject.kind=Pod,involvedObject.name="+pod+",reason=DeviceTaintManagerEviction"); err != nil {
			return false, err.Error()
		}
		if len(events.Items) == 0 {
			return false, "no DeviceTaintManagerEviction Event for the pod yet"
		}
		var p corev1.Pod
		err := getJSON(t.Context(), &p, "pod", "-n", "default", pod)
		switch {
		case err != nil && strings.Contains(err.Error(), "NotFound"):
			return true, ""
		case err != nil:
			return false, err.Error()
		}
		return p.DeletionTimestamp != nil, fmt.Sprintf("Event %q; pod %s, deletion %v", events.Items[0].Message, p.Status.Phase, p.DeletionTimestamp)
	})
}

// apply is kubectl apply -f - of manifest.
func apply(t *testing.T, manifest string) {
	t.Helper()
	if _, err := inClusterStdin(t.Context(), manifest, "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
}

// getRaw decodes kubectl get --raw PATH into v.
func getRaw(t *testing.T, v any, path string) error {
	t.Helper()
	out, err := inCluster(t.Context(), "kubectl", "get", "--raw", path)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// claimPod is a pod in default whose one claim comes from the ResourceClaimTemplate
// template; extra is more of the pod spec's JSON (after a comma), e.g. tolerations.
func claimPod(name, template, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"default"},
"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":0,
"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":%q}],
"containers":[{"name":"cuda","image":%q,"command":["sh","-c","env; ls /dev; sleep 3600"],
"resources":{"claims":[{"name":"gpu"}]}}]%s}}`, name, template, testImage, extra)
}

// podClaim is the ResourceClaim the resourceclaim controller made for the pod's claim "gpu"
// ("" while there is none).
func podClaim(t *testing.T, pod string) (string, error) {
	var p corev1.Pod
	if err := getJSON(t.Context(), &p, "pod", "-n", "default", pod); err != nil {
		return "", err
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == "gpu" && s.ResourceClaimName != nil {
			return *s.ResourceClaimName, nil
		}
	}
	return "", nil
}

// waitAllocated waits for the pod's claim to be allocated and reserved for it, and returns
// the claim; device, when not "", is the one device the allocation must name.
func waitAllocated(t *testing.T, pod, device string) resourcev1.ResourceClaim {
	t.Helper()
	var claim resourcev1.ResourceClaim
	waitFor(t, "pod "+pod+"'s claim allocated and reserved for it", settle, func() (bool, string) {
		name, err := podClaim(t, pod)
		if err != nil || name == "" {
			return false, fmt.Sprintf("no claim for the pod yet (%v)", err)
		}
		if err := getJSON(t.Context(), &claim, "resourceclaim", "-n", "default", name); err != nil {
			return false, err.Error()
		}
		a := claim.Status.Allocation
		if a == nil || len(claim.Status.ReservedFor) == 0 {
			return false, fmt.Sprintf("claim %s: allocation %+v, reserved for %+v", name, a, claim.Status.ReservedFor)
		}
		return true, ""
	})
	res := claim.Status.Allocation.Devices.Results
	if len(res) != 1 || (device != "" && res[0].Device != device) {
		t.Fatalf("claim %s allocated %+v, want one device %q", claim.Name, res, device)
	}
	if claim.Status.ReservedFor[0].Name != pod {
		t.Fatalf("claim %s reserved for %+v, want pod %s", claim.Name, claim.Status.ReservedFor, pod)
	}
	return claim
}

// needDRA skips a DRA step when the release does not run gpunode's DRA driver: the chart
// has no agent.dra.enabled (the plugin is not built in), or the step that switches the
// release to it did not run (a -run filter). Under CI=true a chart without it fails.
func needDRA(t *testing.T, released bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "charts/gpunode/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Agent struct {
			DRA struct {
				Enabled *bool `json:"enabled"`
			} `json:"dra"`
		} `json:"agent"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatalf("charts/gpunode/values.yaml: %v", err)
	}
	if chart.Agent.DRA.Enabled == nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and the chart has no agent.dra.enabled")
		}
		t.Skip("the chart has no agent.dra.enabled: the agent has no DRA driver to test")
	}
	if !released {
		return
	}
	out, err := inCluster(t.Context(), "helm", "get", "values", "gpunode", "--namespace", namespace, "--all", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &chart); err != nil {
		t.Fatalf("helm get values: %v", err)
	}
	if chart.Agent.DRA.Enabled == nil || !*chart.Agent.DRA.Enabled {
		t.Skip("the release runs without agent.dra.enabled (the step that switches it to DRA did not run)")
	}
}

// podIn is the pod in default; a pod that is gone is kubectl's NotFound error.
func podIn(t *testing.T, name string) (corev1.Pod, error) {
	var p corev1.Pod
	err := getJSON(t.Context(), &p, "pod", "-n", "default", name)
	return p, err
}

// nodeCDISpecs lists the node's /var/run/cdi, where the runtime reads generated CDI specs.
func nodeCDISpecs(t *testing.T) string {
	t.Helper()
	out, err := inCluster(t.Context(), "ls", "/var/run/cdi")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
