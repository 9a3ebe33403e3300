package cluster_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// draPodHealth runs a pod on a GPU, then injects an XID the catalog calls for a reset (48)
// into that GPU while the ladder is off: the kubelet, told by the plugin's health stream,
// shows the device Unhealthy, with the taint's reason, in the pod's
// status.containerStatuses[].allocatedResourcesStatus (claim:gpu, the claim's CDI device
// ID). The pod is deleted and the ladder's reset lifts the taint.
func draPodHealth(t *testing.T) {
	needDRA(t, true)
	setRemediation(t, "dra-taints", false)
	apply(t, claimPod("dra-health", "one-gpu", tolerateHolds))
	claim := waitAllocated(t, "dra-health", "")
	device := claim.Status.Allocation.Devices.Results[0].Device
	waitRunning(t, "dra-health")
	index, err := strconv.Atoi(strings.TrimPrefix(device, "gpu-"))
	if err != nil {
		t.Fatalf("device %s is not gpu-<index>", device)
	}
	resource := fmt.Sprintf("%s/claim=%s-%s", draDriver, claim.UID, device)
	waitPodHealth(t, "dra-health", resource, corev1.ResourceHealthStatusHealthy, "")
	injectXID(t, index, 48)
	waitDeviceTaint(t, device, resourcev1.DeviceTaintEffectNoSchedule, "NeedsReset")
	got := waitPodHealth(t, "dra-health", resource, corev1.ResourceHealthStatusUnhealthy, "NeedsReset")
	t.Logf("pod dra-health, container cuda: allocatedResourcesStatus %s", got)
	kubectl(t, "delete", "pod", "-n", "default", "dra-health", "--wait=true", "--timeout", settle.String())
	setRemediation(t, "dra-taints", true)
	waitDeviceTaint(t, device, "")
	waitInService(t)
}

// waitPodHealth waits for the pod's container to show resource (a CDI device ID) of its
// claim "gpu" with health, its message containing message, in allocatedResourcesStatus;
// it returns that entry as JSON-ish text for the log.
func waitPodHealth(t *testing.T, pod, resource string, health corev1.ResourceHealthStatus, message string) string {
	t.Helper()
	var found string
	waitFor(t, fmt.Sprintf("pod %s showing %s %s (%q) in allocatedResourcesStatus", pod, resource, health, message), settle, func() (bool, string) {
		p, err := podIn(t, pod)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, cs := range p.Status.ContainerStatuses {
			for _, rs := range cs.AllocatedResourcesStatus {
				for _, r := range rs.Resources {
					msg := ""
					if r.Message != nil {
						msg = *r.Message
					}
					entry := fmt.Sprintf("%s: %s %s %q", rs.Name, r.ResourceID, r.Health, msg)
					seen = append(seen, entry)
					if rs.Name == "claim:gpu" && string(r.ResourceID) == resource && r.Health == health && strings.Contains(msg, message) {
						found = entry
						return true, ""
					}
				}
			}
		}
		return false, fmt.Sprintf("allocatedResourcesStatus %v", seen)
	})
	return found
}
