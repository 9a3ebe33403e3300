package cluster_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// The stack pools' steps: the stand-in operand images (hack/stand-in-images.sh) in pools
// that select the only node, the agent on simulated GPUs whose driver the stand-in driver
// "loads" (agent.simDriverVersionFile).
const (
	standInDriver  = "localhost/gpunode-test/driver"
	standInToolkit = "localhost/gpunode-test/container-toolkit"
	driverVersion  = "580.95.05"
	toolkitVersion = "1.18.0"
	driverFile     = "/run/nvidia/driver-version"
	pausedLabel    = "nvidia.com/gpu.deploy.driver=paused-for-driver-upgrade"
)

// stackPool applies a StackPool selecting the node.
func stackPool(t *testing.T, name, driver, toolkit string) {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"gpunode.dev/v1alpha1","kind":"StackPool","metadata":{"name":%q},
"spec":{"nodeSelector":{"matchLabels":{"kubernetes.io/hostname":%q}},"driver":%s,"toolkit":%s}}`, name, nodeName, driver, toolkit)
	if _, err := inClusterStdin(t.Context(), manifest, "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// stackHold is the node's hold of owner stack, if any.
func stackHold(gn v1alpha1.GPUNode) *v1alpha1.Hold {
	for i := range gn.Status.Holds {
		if gn.Status.Holds[i].Owner == v1alpha1.HoldOwnerStack {
			return &gn.Status.Holds[i]
		}
	}
	return nil
}

// inService waits for the node InService with no hold.
func inService(t *testing.T, what string) {
	t.Helper()
	waitFor(t, what, settle, func() (bool, string) {
		gn := gpuNode(t)
		return gn.Status.Phase == v1alpha1.PhaseInService && len(gn.Status.Holds) == 0,
			fmt.Sprintf("phase %s, holds %+v, stack %+v", gn.Status.Phase, gn.Status.Holds, gn.Status.Stack)
	})
}

// operandPod is the Running pod of the pool's operand (driver or toolkit) on the node.
func operandPod(t *testing.T, pool, component string) (corev1.Pod, bool, string) {
	t.Helper()
	var pods corev1.PodList
	sel := v1alpha1.LabelStackPool + "=" + pool + ",app.kubernetes.io/component=" + component
	if err := getJSON(t.Context(), &pods, "pods", "-n", namespace, "-l", sel); err != nil {
		return corev1.Pod{}, false, err.Error()
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
			return p, true, ""
		}
	}
	return corev1.Pod{}, false, fmt.Sprintf("%d %s pods, none Running and Ready", len(pods.Items), component)
}

func driverReady(t *testing.T, version string) func() (bool, string) {
	return func() (bool, string) {
		st := gpuNode(t).Status.Stack
		if st == nil {
			return false, "no status.stack"
		}
		return st.Driver.Ready && st.Driver.Version == version && st.Toolkit.Ready, fmt.Sprintf("stack %+v", *st)
	}
}

// stackPoolContainer takes the order a user's cluster takes: the pool exists before the
// node loses its driver (so the node is a member waiting for its stack, never a fault),
// and the driver's image arrives after its pod was scheduled (the pod waits for it, the
// node waits for the pod).
func stackPoolContainer(t *testing.T) {
	work := t.TempDir()
	if out, err := script("hack/stand-in-images.sh", nil, work, driverVersion, toolkitVersion); err != nil {
		t.Fatalf("hack/stand-in-images.sh: %v\n%s", err, out)
	}
	importImage(t, filepath.Join(work, "toolkit.tar"))
	w := watchTaints(t, nodeName)
	defer w.close()
	stackPool(t, "standin", fmt.Sprintf(`{"source":"Container","image":%q,"version":%q}`, standInDriver, driverVersion),
		fmt.Sprintf(`{"source":"Container","image":%q,"version":%q}`, standInToolkit, toolkitVersion))
	waitFor(t, "the node a member of the pool, held by owner stack", settle, func() (bool, string) {
		gn := gpuNode(t)
		h := stackHold(gn)
		return h != nil && strings.HasPrefix(h.Reason, v1alpha1.HoldReasonStackNotReady), fmt.Sprintf("stack hold %+v", h)
	})
	waitFor(t, "the pool's toolkit pod Running and Ready", settle, func() (bool, string) {
		_, ok, why := operandPod(t, "standin", "toolkit")
		return ok, why
	})
	// The agent's simulated driver is loaded by the stand-in driver's file: without it the
	// agent waits for a driver (and says so) instead of failing.
	if _, err := inCluster(t.Context(), "helm", "upgrade", "gpunode", filepath.Join(repoRoot, "charts/gpunode"), "-n", namespace,
		"--reuse-values", "--set", "agent.simDriverVersionFile="+driverFile, "--wait", "--timeout", settle.String()); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", namespace, "rollout", "status", "daemonset/gpunode-agent", "--timeout", settle.String())
	waitFor(t, "the agent waits for a driver and says so", settle, func() (bool, string) {
		st := gpuNode(t).Status.Stack
		return st != nil && !st.Driver.Ready && strings.Contains(st.Driver.Message, "not loaded"), fmt.Sprintf("stack %+v", st)
	})
	assertWaitingNotFaulted(t)
	// The driver's image arrives; a fresh pod takes it at once rather than after the
	// kubelet's pull back-off.
	importImage(t, filepath.Join(work, "driver.tar"))
	kubectl(t, "-n", namespace, "delete", "pod", "-l", v1alpha1.LabelStackPool+"=standin,app.kubernetes.io/component=driver", "--wait=true", "--timeout", settle.String())
	waitFor(t, "the pool's driver pod Running and Ready", settle, func() (bool, string) {
		_, ok, why := operandPod(t, "standin", "driver")
		return ok, why
	})
	waitFor(t, "NVML (the simulated driver) reports the pool's version, and the toolkit is ready", settle, driverReady(t, driverVersion))
	waitFor(t, "the stack hold released", settle, func() (bool, string) {
		return w.heldThenFree(v1alpha1.TaintUnschedulable)
	})
	inService(t, "the node back in service")
	t.Logf("kubectl get stackpools:\n%s", kubectl(t, "get", "stackpools"))
	t.Logf("kubectl get pods -n %s -l %s:\n%s", namespace, v1alpha1.LabelStackPool, kubectl(t, "get", "pods", "-n", namespace, "-l", v1alpha1.LabelStackPool))
}

// importImage puts an image archive into the node's containerd, as an offline site does.
func importImage(t *testing.T, archive string) {
	t.Helper()
	if _, err := inCluster(t.Context(), "ctr", "-n", "k8s.io", "images", "import", archive); err != nil {
		t.Fatal(err)
	}
}

// assertWaitingNotFaulted fails when the node waiting for its pool's driver is treated as
// faulty: held by remediation, or asked to run acceptance.
func assertWaitingNotFaulted(t *testing.T) {
	t.Helper()
	gn := gpuNode(t)
	for _, h := range gn.Status.Holds {
		if h.Owner == v1alpha1.HoldOwnerRemediation || h.Owner == v1alpha1.HoldOwnerAcceptance {
			t.Fatalf("a node waiting for its pool's driver is held %+v; status.stack %+v", h, gn.Status.Stack)
		}
	}
}

func stackDriverPodDeleted(t *testing.T) {
	old, ok, why := operandPod(t, "standin", "driver")
	if !ok {
		t.Fatal(why)
	}
	kubectl(t, "-n", namespace, "delete", "pod", old.Name, "--wait=true", "--timeout", settle.String())
	waitFor(t, "a new driver pod on the same version", settle, func() (bool, string) {
		p, ok, why := operandPod(t, "standin", "driver")
		if !ok {
			return false, why
		}
		v := p.Labels[v1alpha1.LabelOperandVersion]
		return p.UID != old.UID && v == driverVersion, fmt.Sprintf("pod %s version %s", p.Name, v)
	})
	waitFor(t, "the driver ready again at the same version", settle, driverReady(t, driverVersion))
	inService(t, "the node in service after the driver pod came back")
}

func stackPausedByTheGPUOperator(t *testing.T) {
	key, value, _ := strings.Cut(pausedLabel, "=")
	kubectl(t, "label", "node", nodeName, "--overwrite", pausedLabel)
	waitFor(t, "status.stack.paused names the label and the driver is released", settle, func() (bool, string) {
		st := gpuNode(t).Status.Stack
		return st != nil && st.Paused == pausedLabel && !st.Driver.Ready, fmt.Sprintf("stack %+v", st)
	})
	t.Logf("paused: %s=%s; status.stack: %+v", key, value, *gpuNode(t).Status.Stack)
	kubectl(t, "label", "node", nodeName, key+"-")
	waitFor(t, "the agent resumed: not paused, the driver ready", settle, func() (bool, string) {
		st := gpuNode(t).Status.Stack
		return st != nil && st.Paused == "" && st.Driver.Ready, fmt.Sprintf("stack %+v", st)
	})
	inService(t, "the node in service after the pause")
}

func stackPoolConflict(t *testing.T) {
	stackPool(t, "preinstalled", fmt.Sprintf(`{"source":"Preinstalled","version":%q}`, driverVersion), `{"source":"Preinstalled"}`)
	waitFor(t, "the node held pool-conflict with both pools named, and no pool label", settle, func() (bool, string) {
		gn := gpuNode(t)
		h := stackHold(gn)
		if h == nil || !strings.HasPrefix(h.Reason, v1alpha1.HoldReasonPoolConflict) || !strings.Contains(h.Reason+" "+h.Message, "standin") || !strings.Contains(h.Reason+" "+h.Message, "preinstalled") {
			return false, fmt.Sprintf("stack hold %+v", h)
		}
		var n corev1.Node
		if err := getJSON(t.Context(), &n, "node", nodeName); err != nil {
			return false, err.Error()
		}
		_, labelled := n.Labels[v1alpha1.LabelStackPool]
		return !labelled, fmt.Sprintf("node labels %v", n.Labels)
	})
	t.Logf("kubectl get stackpools:\n%s", kubectl(t, "get", "stackpools"))
}

func stackPoolPreinstalled(t *testing.T) {
	kubectl(t, "delete", "stackpool", "standin", "--wait=true", "--timeout", settle.String())
	// The host's own driver, as an OS image installs it: the version file written on the node.
	if _, err := inCluster(t.Context(), "sh", "-c", fmt.Sprintf("mkdir -p %s && echo %s > %s", filepath.Dir(driverFile), driverVersion, driverFile)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node a member of the Preinstalled pool", settle, func() (bool, string) {
		var n corev1.Node
		if err := getJSON(t.Context(), &n, "node", nodeName); err != nil {
			return false, err.Error()
		}
		return n.Labels[v1alpha1.LabelStackPool] == "preinstalled", fmt.Sprintf("pool label %q", n.Labels[v1alpha1.LabelStackPool])
	})
	waitFor(t, "the host's driver ready at the pool's version", settle, driverReady(t, driverVersion))
	inService(t, "the node in service in the Preinstalled pool")
	t.Logf("kubectl get stackpools:\n%s", kubectl(t, "get", "stackpools"))
}

func stackCleanUp(t *testing.T) {
	kubectl(t, "delete", "stackpool", "preinstalled", "--wait=true", "--timeout", settle.String())
	if _, err := inCluster(t.Context(), "helm", "upgrade", "gpunode", filepath.Join(repoRoot, "charts/gpunode"), "-n", namespace,
		"--reuse-values", "--set", "agent.simDriverVersionFile=", "--wait", "--timeout", settle.String()); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", namespace, "rollout", "status", "daemonset/gpunode-agent", "--timeout", settle.String())
	if _, err := inCluster(t.Context(), "rm", "-f", driverFile); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent's pod Running and Ready", settle, agentReady)
	inService(t, "the node in service without pools")
}
