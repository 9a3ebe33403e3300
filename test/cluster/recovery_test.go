package cluster_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// agentInterval is the chart's agent.interval: the health monitor's polling interval.
const agentInterval = 30 * time.Second

// agentMetrics is the agent pod's /metrics, through the API server's pod proxy.
func agentMetrics(t *testing.T, pod string) (string, error) {
	t.Helper()
	return inCluster(t.Context(), "kubectl", "get", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+pod+":9400/proxy/metrics")
}

// healthSeries is the value of gpunode_gpu_health{gpu=index,state=state} in a scrape, -1
// when absent.
func healthSeries(metrics string, index int, state string) int {
	re := regexp.MustCompile(`(?m)^gpunode_gpu_health\{UUID="[^"]+",gpu="` + strconv.Itoa(index) + `",state="` + state + `"\} (\d+)$`)
	m := re.FindStringSubmatch(metrics)
	if m == nil {
		return -1
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// restarts is the agent pod's name and its containers' restart count.
func restarts(t *testing.T) (string, int32) {
	t.Helper()
	p := agentPod(t)
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return p.Name, n
}

// freeGPU is the index of a GPU no pod holds (a reset waits for none and drains none).
func freeGPU(t *testing.T) int {
	t.Helper()
	gn := gpuNode(t)
	for i := len(gn.Status.GPUHealth) - 1; i >= 0; i-- {
		if g := gn.Status.GPUHealth[i]; len(g.Pods) == 0 {
			return int(g.Index)
		}
	}
	t.Fatalf("every GPU holds a pod: %v", podsOf(gn))
	return -1
}

// gpuResetClearsTheUnhealthySeries injects an XID the catalog calls for a GPU reset (48, a
// double-bit ECC error) into a simulated GPU while the pool's remediation is off, sees the
// GPU unhealthy on the agent's /metrics, turns remediation on, and lets the ladder reset the
// GPU: the unhealthy series clears within one polling interval of the reset, and the agent's
// pod is the same one, never restarted (the metrics come from the agent's one engine).
func gpuResetClearsTheUnhealthySeries(t *testing.T) {
	podBefore, restartsBefore := restarts(t)
	gpu := freeGPU(t)
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", `{"spec":{"remediation":{"disabled":true}}}`)
	kubectl(t, "exec", "-n", namespace, podBefore, "-c", "agent", "--",
		"gpunode", "sim", "inject", nodeName, "--socket", "/var/lib/gpunode/sim.sock", "--gpu", strconv.Itoa(gpu), "--xid", "48")
	waitFor(t, fmt.Sprintf("GPU %d unhealthy on the agent's /metrics", gpu), settle, func() (bool, string) {
		out, err := agentMetrics(t, podBefore)
		if err != nil {
			return false, err.Error()
		}
		return healthSeries(out, gpu, "unhealthy") == 1, fmt.Sprintf("unhealthy=%d healthy=%d",
			healthSeries(out, gpu, "unhealthy"), healthSeries(out, gpu, "healthy"))
	})
	kubectl(t, "patch", "gpunodepolicy", "h100-nodes", "--type", "merge", "-p", `{"spec":{"remediation":{"disabled":false}}}`)
	var reset *v1alpha1.StepAttempt
	waitFor(t, "the ladder's reset-gpu finished", settle, func() (bool, string) {
		gn := gpuNode(t)
		if st := gn.Status.Remediation; st != nil {
			for i := len(st.History) - 1; i >= 0; i-- {
				if h := st.History[i]; h.Step == v1alpha1.StepResetGPU && h.Finished != nil {
					reset = h.DeepCopy()
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("phase %q, remediation %+v", gn.Status.Phase, gn.Status.Remediation)
	})
	if reset.Outcome != v1alpha1.OutcomeSucceeded {
		t.Fatalf("reset-gpu: %s: %s", reset.Outcome, reset.Message)
	}
	var cleared time.Time
	waitFor(t, fmt.Sprintf("GPU %d healthy on the agent's /metrics", gpu), settle, func() (bool, string) {
		out, err := agentMetrics(t, podBefore)
		if err != nil {
			return false, err.Error()
		}
		if healthSeries(out, gpu, "unhealthy") == 0 && healthSeries(out, gpu, "healthy") == 1 {
			cleared = time.Now()
			return true, ""
		}
		return false, fmt.Sprintf("unhealthy=%d healthy=%d", healthSeries(out, gpu, "unhealthy"), healthSeries(out, gpu, "healthy"))
	})
	// Seen by this test's clock, which is the node's: the cluster runs on this machine.
	if after := cleared.Sub(reset.Finished.Time); after > agentInterval {
		t.Errorf("the unhealthy series cleared %s after the reset finished, more than one polling interval (%s)", after, agentInterval)
	} else {
		t.Logf("reset of GPU %d finished %s; the unhealthy series was seen cleared %s later (%s)", gpu,
			reset.Finished.UTC().Format(time.RFC3339), after.Round(time.Second), reset.Message)
	}
	podAfter, restartsAfter := restarts(t)
	if podAfter != podBefore || restartsAfter != restartsBefore {
		t.Errorf("the agent's pod was %s with %d restarts, now %s with %d: the series must clear without a restart",
			podBefore, restartsBefore, podAfter, restartsAfter)
	}
	waitFor(t, "the node back in service after the reset's acceptance", settle, func() (bool, string) {
		gn := gpuNode(t)
		return gn.Status.Phase == v1alpha1.PhaseInService && len(gn.Status.Holds) == 0,
			fmt.Sprintf("phase %q, holds %+v", gn.Status.Phase, gn.Status.Holds)
	})
	var pods corev1.PodList
	if err := getJSON(t.Context(), &pods, "pods", "-n", "default"); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s after the reset of a GPU it did not hold", p.Name, p.Status.Phase)
		}
	}
}
