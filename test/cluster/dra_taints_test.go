package cluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
)

// healthTaint is the key of the device taints gpunode's plugin publishes from a GPU's health.
const healthTaint = "gpu.gpunode.dev/health"

// tolerateHolds lets a test pod onto the node while gpunode holds it (the remediation
// steps below do), so that only the device's own taints keep it from a GPU.
const tolerateHolds = `"tolerations":[{"key":"gpunode.dev/unschedulable","operator":"Exists"},{"key":"gpunode.dev/not-accepted","operator":"Exists"}]`

// draPolicy governs the node during the taint steps: its ladder may reset a GPU and reboot
// the node as often as the steps inject (the node's own policy backs a step off for minutes
// after it ran, and the steps before these ran it), with the whole pool as its budget.
const draPolicy = `apiVersion: gpunode.dev/v1alpha1
kind: GPUNodePolicy
metadata:
  name: dra-taints
spec:
  priority: 100
  nodeSelector:
    matchLabels:
      kubernetes.io/hostname: gpu-node-1
  remediation:
    steps:
      - {step: reset-gpu, maxAttempts: 10, window: 10s, backoff: 1s}
      - {step: reboot-node, maxAttempts: 10, window: 10s, backoff: 1s}
    budget: {maxUnavailable: "100%"}
    breaker: {threshold: "100%"}
`

// setRemediation turns the ladder of the policy off (a fault then stays until it is turned
// on again) or on.
func setRemediation(t *testing.T, policy string, on bool) {
	t.Helper()
	kubectl(t, "patch", "gpunodepolicy", policy, "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"remediation":{"disabled":%t}}}`, !on))
}

// injectXID writes an Xid line for the simulated GPU index through the agent's sim socket.
func injectXID(t *testing.T, index, xid int) {
	t.Helper()
	kubectl(t, "exec", "-n", namespace, agentPod(t).Name, "-c", "agent", "--",
		"gpunode", "sim", "inject", nodeName, "--socket", "/var/lib/gpunode/sim.sock", "--gpu", strconv.Itoa(index), "--xid", strconv.Itoa(xid))
}

// waitDeviceTaint waits for the published device's health taint to be one of values with
// effect, or (values nil) for the device to carry no health taint.
func waitDeviceTaint(t *testing.T, device string, effect resourcev1.DeviceTaintEffect, values ...string) {
	t.Helper()
	what := fmt.Sprintf("device %s tainted %s=%v:%s", device, healthTaint, values, effect)
	if values == nil {
		what = fmt.Sprintf("device %s without a %s taint", device, healthTaint)
	}
	waitFor(t, what, settle, func() (bool, string) {
		devices, err := draDevices(t)
		if err != nil {
			return false, err.Error()
		}
		d, ok := devices[device]
		if !ok {
			return false, "no device " + device + " in the slice"
		}
		i := slices.IndexFunc(d.Taints, func(x resourcev1.DeviceTaint) bool { return x.Key == healthTaint })
		if values == nil {
			return i < 0, fmt.Sprintf("taints %+v", d.Taints)
		}
		return i >= 0 && d.Taints[i].Effect == effect && slices.Contains(values, d.Taints[i].Value), fmt.Sprintf("taints %+v", d.Taints)
	})
}

// claimedDevices is every device of gpunode's driver an allocated claim holds.
func claimedDevices(t *testing.T) []string {
	t.Helper()
	var l resourcev1.ResourceClaimList
	if err := getJSON(t.Context(), &l, "resourceclaims", "-A"); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range l.Items {
		if a := c.Status.Allocation; a != nil {
			for _, r := range a.Devices.Results {
				if r.Driver == draDriver {
					out = append(out, r.Device)
				}
			}
		}
	}
	return out
}

// freeDevice is the highest-numbered GPU device no claim holds.
func freeDevice(t *testing.T) (string, int) {
	t.Helper()
	held := claimedDevices(t)
	for i := len(gpuNode(t).Status.Inventory.GPUs) - 1; i >= 0; i-- {
		if d := fmt.Sprintf("gpu-%d", i); !slices.Contains(held, d) {
			return d, i
		}
	}
	t.Fatalf("every device is claimed: %v", held)
	return "", -1
}

// draNoSchedule injects an XID the catalog calls for a GPU reset (48) into a free GPU while
// the ladder is off: its device is tainted NeedsReset:NoSchedule, and a claim that can only
// take that GPU is not allocated; once the ladder has reset the GPU and its check passed,
// the taint is lifted and the waiting pod gets the GPU.
func draNoSchedule(t *testing.T) {
	needDRA(t, true)
	apply(t, draPolicy)
	device, index := freeDevice(t)
	setRemediation(t, "dra-taints", false)
	injectXID(t, index, 48)
	waitDeviceTaint(t, device, resourcev1.DeviceTaintEffectNoSchedule, "NeedsReset")
	apply(t, gpuTemplate("pinned-gpu", fmt.Sprintf(`device.attributes["%s"].index == %d`, draDriver, index)))
	apply(t, claimPod("dra-pinned", "pinned-gpu", tolerateHolds))
	waitFor(t, "the scheduler's verdict on pod dra-pinned: unschedulable", settle, func() (bool, string) {
		p, err := podIn(t, "dra-pinned")
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "PodScheduled" {
				return c.Status == "False" && c.Reason == "Unschedulable", fmt.Sprintf("PodScheduled %s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no PodScheduled condition yet"
	})
	if held := claimedDevices(t); slices.Contains(held, device) {
		t.Fatalf("device %s, tainted NoSchedule, was allocated (claimed devices %v)", device, held)
	}
	setRemediation(t, "dra-taints", true)
	waitDeviceTaint(t, device, "")
	waitAllocated(t, "dra-pinned", device)
	waitRunning(t, "dra-pinned")
	checkInjected(t, "dra-pinned", device)
	kubectl(t, "delete", "pod", "-n", "default", "dra-pinned", "--wait=true", "--timeout", settle.String())
	waitInService(t)
}

// draNoExecute runs a pod on a GPU, then injects XID 79 (fallen off the bus) into that GPU
// while the ladder is off, with the governing policy asking for NoExecute
// (spec.dra.unhealthyEffect): the device is tainted NoExecute, the device-taint-eviction
// controller evicts the pod, the kubelet has the agent unprepare its claim (the claim's CDI
// spec goes); the ladder's recovery lifts the taint.
func draNoExecute(t *testing.T) {
	needDRA(t, true)
	kubectl(t, "patch", "gpunodepolicy", "dra-taints", "--type", "merge", "-p", `{"spec":{"dra":{"unhealthyEffect":"NoExecute"}}}`)
	setRemediation(t, "dra-taints", false)
	apply(t, claimPod("dra-evicted", "one-gpu", tolerateHolds))
	claim := waitAllocated(t, "dra-evicted", "")
	device := claim.Status.Allocation.Devices.Results[0].Device
	waitRunning(t, "dra-evicted")
	index, err := strconv.Atoi(strings.TrimPrefix(device, "gpu-"))
	if err != nil {
		t.Fatalf("device %s is not gpu-<index>", device)
	}
	injectXID(t, index, 79)
	waitDeviceTaint(t, device, resourcev1.DeviceTaintEffectNoExecute, "Lost", "NeedsReboot")
	waitEvicted(t, "dra-evicted")
	waitFor(t, "pod dra-evicted gone and its claim's CDI spec removed", settle, func() (bool, string) {
		if _, err := podIn(t, "dra-evicted"); err == nil || !strings.Contains(err.Error(), "NotFound") {
			return false, fmt.Sprintf("the pod is still there (%v)", err)
		}
		out, err := inCluster(t.Context(), "ls", "/var/run/cdi")
		if err != nil {
			return false, err.Error()
		}
		return !strings.Contains(out, string(claim.UID)), "CDI specs: " + strings.Join(trimLines(out), " ")
	})
	setRemediation(t, "dra-taints", true)
	waitDeviceTaint(t, device, "")
	waitInService(t)
	// The node's own policy governs it again.
	kubectl(t, "delete", "gpunodepolicy", "dra-taints")
	waitInService(t)
}

// draAgentRestart deletes the agent's pod while the kubelet prepares the claims of three new
// pods: they run once the new agent serves, each with its own GPU; the new agent unprepares
// them when they go (it knows them from the checkpoint: their CDI specs are removed); and
// nothing is left prepared: pods for every GPU of the node all run afterwards.
func draAgentRestart(t *testing.T) {
	needDRA(t, true)
	kubectl(t, "delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout", settle.String())
	old := agentPod(t)
	names := []string{"dra-restart-0", "dra-restart-1", "dra-restart-2"}
	for _, n := range names {
		apply(t, claimPod(n, "one-gpu", tolerateHolds))
	}
	for _, n := range names {
		waitAllocated(t, n, "")
	}
	kubectl(t, "-n", namespace, "delete", "pod", old.Name, "--wait=false")
	waitFor(t, "a new agent pod Running and Ready", settle, func() (bool, string) {
		if ok, why := agentReady(); !ok {
			return false, why
		}
		return agentPod(t).UID != old.UID, "the old pod still answers"
	})
	claims := runOnDistinctGPUs(t, names)
	for _, n := range names {
		kubectl(t, "delete", "pod", "-n", "default", n, "--wait=true", "--timeout", settle.String())
	}
	waitFor(t, "the CDI specs of the deleted pods' claims removed", settle, func() (bool, string) {
		out, err := inCluster(t.Context(), "ls", "/var/run/cdi")
		if err != nil {
			return false, err.Error()
		}
		for _, uid := range claims {
			if strings.Contains(out, uid) {
				return false, "CDI specs: " + strings.Join(trimLines(out), " ")
			}
		}
		return true, ""
	})
	// A claim left prepared would keep its device from a new claim: every GPU, once each.
	var all []string
	for i := range gpuNode(t).Status.Inventory.GPUs {
		all = append(all, fmt.Sprintf("dra-all-%d", i))
		apply(t, claimPod(all[i], "one-gpu", tolerateHolds))
	}
	runOnDistinctGPUs(t, all)
	kubectl(t, "delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout", settle.String())
}

// runOnDistinctGPUs waits for the pods to run and checks that each sees the one GPU its
// claim was allocated and that no two claims share a device; it returns the claims' UIDs.
func runOnDistinctGPUs(t *testing.T, pods []string) []string {
	t.Helper()
	seen := map[string]string{}
	var uids []string
	for _, n := range pods {
		claim := waitAllocated(t, n, "")
		waitRunning(t, n)
		d := claim.Status.Allocation.Devices.Results[0].Device
		if other, dup := seen[d]; dup {
			t.Fatalf("device %s is allocated to the claims of %s and %s", d, other, n)
		}
		seen[d] = n
		uids = append(uids, string(claim.UID))
		checkInjected(t, n, d)
	}
	return uids
}
