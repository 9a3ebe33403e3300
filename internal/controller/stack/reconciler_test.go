package stack

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// waitDaemonSet waits until the DaemonSet exists and satisfies ok.
func waitDaemonSet(t *testing.T, c client.Client, name, what string, ok func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	eventually(t, "DaemonSet "+name+" "+what, func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: name}, ds); err != nil {
			return false, err.Error()
		}
		return ok(ds), fmt.Sprintf("labels %v, template labels %v", ds.Labels, ds.Spec.Template.Labels)
	})
	return ds
}

// daemonSetsOf lists pool's DaemonSets by name.
func daemonSetsOf(t *testing.T, c client.Client, pool string) []string {
	t.Helper()
	var list appsv1.DaemonSetList
	if err := c.List(t.Context(), &list, client.InNamespace(testNamespace), client.MatchingLabels{v1alpha1.LabelStackPool: pool}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ds := range list.Items {
		names = append(names, ds.Name)
	}
	return names
}

func TestAPoolRendersOnDeleteDaemonSetsAndAVersionChangeLeavesThePodsAlone(t *testing.T) {
	c := startController(t)
	pool := containerPool("render")
	create(t, c, pool)
	create(t, c, node("render-1", map[string]string{"pool": "render"}))

	drv := waitDaemonSet(t, c, "gpunode-render-driver", "at the pool's version", func(ds *appsv1.DaemonSet) bool {
		return ds.Spec.Template.Labels[v1alpha1.LabelOperandVersion] == driverWanted
	})
	checkFrame(t, pool, drv)
	if got := drv.Spec.Template.Spec.Containers[0].Image; got != driverImage {
		t.Errorf("driver image = %s, want %s", got, driverImage)
	}
	tk := waitDaemonSet(t, c, "gpunode-render-toolkit", "at the pool's version", func(ds *appsv1.DaemonSet) bool { return true })
	checkFrame(t, pool, tk)
	if got := tk.Spec.Template.Spec.Containers[0].Image; got != toolkitImage+":v"+toolkitWanted {
		t.Errorf("toolkit image = %s, want %s:v%s", got, toolkitImage, toolkitWanted)
	}
	waitNode(t, c, "render-1", "render", v1alpha1.HoldReasonStackNotReady)

	// The pod the DaemonSet controller started on the node, at the first version.
	old := startPod(t, c, "render", ComponentDriver, "render-1", driverWanted)

	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.Driver.Image, pool.Spec.Driver.Version = "nvcr.io/nvidia/driver:590.44.01-ubuntu24.04", "590.44.01"
	if err := c.Update(t.Context(), pool); err != nil {
		t.Fatalf("moving the pool to driver 590.44.01: %v", err)
	}
	waitDaemonSet(t, c, "gpunode-render-driver", "at the new version", func(ds *appsv1.DaemonSet) bool {
		return ds.Spec.Template.Labels[v1alpha1.LabelOperandVersion] == "590.44.01" &&
			env(ds, "GPUNODE_DRIVER_VERSION") == "590.44.01" && ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	})
	waitPool(t, c, "render", "the new generation judged", func(p *v1alpha1.StackPool) bool { return p.Status.Driver.Wanted == "590.44.01" })
	got := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil || got.UID != old.UID || got.DeletionTimestamp != nil {
		t.Fatalf("the old driver pod after the version change: %v (deleting %v): the controller must not touch it (OnDelete)", err, got.DeletionTimestamp)
	}
	waitNode(t, c, "render-1", "render", v1alpha1.HoldReasonStackNotReady, "runs version 580.95.05, pool wants 590.44.01")

	// The toolkit moves to the node image: its DaemonSet goes, the driver's stays.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.Toolkit = v1alpha1.ToolkitOperand{Source: v1alpha1.SourcePreinstalled}
	if err := c.Update(t.Context(), pool); err != nil {
		t.Fatalf("moving the toolkit to Preinstalled: %v", err)
	}
	eventually(t, "the toolkit DaemonSet deleted", func() (bool, string) {
		names := daemonSetsOf(t, c, "render")
		return len(names) == 1 && names[0] == "gpunode-render-driver", fmt.Sprint(names)
	})

	// The pool goes: its node leaves it and is no longer held by the stack.
	if err := c.Delete(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	waitNode(t, c, "render-1", "", "")
}

func TestANodeTwoPoolsSelectIsHeldNamingBothAndLosesItsLabel(t *testing.T) {
	c := startController(t)
	a := containerPool("conflict-a")
	b := preinstalledPool("conflict-b")
	b.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"zone": "conflict"}}
	create(t, c, a)
	create(t, c, b)
	n := node("conflict-1", map[string]string{"pool": "conflict-a"})
	create(t, c, n)
	waitNode(t, c, "conflict-1", "conflict-a", v1alpha1.HoldReasonStackNotReady)

	err := retryOnConflict(t.Context(), func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		n.Labels["zone"] = "conflict"
		return c.Update(t.Context(), n)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitNode(t, c, "conflict-1", "", v1alpha1.HoldReasonPoolConflict, "conflict-a", "conflict-b")
	waitEvent(t, c, "conflict-1", "StackPoolConflict")
	waitEvent(t, c, "conflict-a", v1alpha1.ReasonConflict)
	for _, name := range []string{"conflict-a", "conflict-b"} {
		p := waitPool(t, c, name, "the conflict counted", func(p *v1alpha1.StackPool) bool {
			return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionNodesConflicting)
		})
		if p.Status.Nodes != 0 || p.Status.ConflictingNodes != 1 {
			t.Errorf("StackPool %s counts %d nodes and %d conflicting, want 0 and 1", name, p.Status.Nodes, p.Status.ConflictingNodes)
		}
	}

	// The second pool gives the node up: it is the first pool's again.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Spec.NodeSelector.MatchLabels["zone"] = "elsewhere"
	if err := c.Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	waitNode(t, c, "conflict-1", "conflict-a", v1alpha1.HoldReasonStackNotReady)
}

func TestAMemberIsHeldUntilItsDriverAndToolkitAreReadyThenReleased(t *testing.T) {
	c := startController(t)
	create(t, c, containerPool("ready"))
	create(t, c, node("ready-1", map[string]string{"pool": "ready"}))
	waitNode(t, c, "ready-1", "ready", v1alpha1.HoldReasonStackNotReady, "no pod of DaemonSet gpunode-ready-driver")

	startPod(t, c, "ready", ComponentDriver, "ready-1", driverWanted)
	startPod(t, c, "ready", ComponentToolkit, "ready-1", toolkitWanted)
	waitNode(t, c, "ready-1", "ready", v1alpha1.HoldReasonStackNotReady, "the node's GPUNode does not exist yet")

	publish(t, c, "ready-1", "570.172.08", false)
	waitNode(t, c, "ready-1", "ready", v1alpha1.HoldReasonStackNotReady,
		"driver: NVML reports 570.172.08, pool wants 580.95.05", "toolkit: the agent's runtime config and CDI checks fail")
	waitPool(t, c, "ready", "one member, not ready", func(p *v1alpha1.StackPool) bool {
		return p.Status.Nodes == 1 && p.Status.ReadyNodes == 0 && p.Status.Driver.Summary == "570.172.08×1" &&
			len(p.Status.NodeStatus) == 1 && !p.Status.NodeStatus[0].Driver.Ready
	})

	publish(t, c, "ready-1", driverWanted, true)
	waitNode(t, c, "ready-1", "ready", "")
	waitEvent(t, c, "ready-1", "StackReady")
	p := waitPool(t, c, "ready", "its member ready", func(p *v1alpha1.StackPool) bool {
		return p.Status.ReadyNodes == 1 && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionStackReady)
	})
	want := v1alpha1.StackNodeStatus{Name: "ready-1",
		Driver:  v1alpha1.NodeOperandStatus{Wanted: driverWanted, Running: driverWanted, Ready: true},
		Toolkit: v1alpha1.NodeOperandStatus{Wanted: toolkitWanted, Running: toolkitWanted, Ready: true},
		Agent:   v1alpha1.NodeOperandStatus{Ready: true}} // the chart's agent: not judged
	if p.Status.Nodes != 1 || p.Status.Driver.Summary != "580.95.05×1" || p.Status.Toolkit.Summary != "1.18.0×1" || len(p.Status.NodeStatus) != 1 || p.Status.NodeStatus[0] != want {
		t.Errorf("status = %+v, want 1 node ready at 580.95.05 and 1.18.0 (%+v)", p.Status, want)
	}
}

func TestAPreinstalledPoolRendersNoDaemonSetAndJudgesNVMLsVersion(t *testing.T) {
	c := startController(t)
	create(t, c, preinstalledPool("pre"))
	create(t, c, node("pre-1", map[string]string{"pool": "pre"}))
	publish(t, c, "pre-1", "570.172.08", true)
	waitNode(t, c, "pre-1", "pre", v1alpha1.HoldReasonStackNotReady, "driver: NVML reports 570.172.08, pool wants 580.95.05")
	waitPool(t, c, "pre", "one member judged", func(p *v1alpha1.StackPool) bool { return p.Status.Nodes == 1 })
	if names := daemonSetsOf(t, c, "pre"); len(names) != 0 {
		t.Errorf("a preinstalled pool has DaemonSets %v, want none", names)
	}
	publish(t, c, "pre-1", driverWanted, true)
	waitNode(t, c, "pre-1", "pre", "")
	waitPool(t, c, "pre", "its member ready", func(p *v1alpha1.StackPool) bool { return p.Status.ReadyNodes == 1 })
}

func TestAClusterPolicyThatDeploysTheDriverLeavesNoDriverDaemonSet(t *testing.T) {
	c := startControllerAfterGPUOperatorCRDs(t)
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(ClusterPolicyKind)
	cp.SetName("cluster-policy")
	if err := unstructured.SetNestedField(cp.Object, false, "spec", "toolkit", "enabled"); err != nil {
		t.Fatal(err)
	}
	create(t, c, cp)
	create(t, c, containerPool("operator"))
	create(t, c, node("operator-1", map[string]string{"pool": "operator"}))

	p := waitPool(t, c, "operator", "owned by the GPU Operator", func(p *v1alpha1.StackPool) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionOwnedByGPUOperator) && p.Status.Nodes == 1
	})
	cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionOwnedByGPUOperator)
	if cond.Reason != v1alpha1.ReasonClusterPolicy || !strings.Contains(cond.Message, "ClusterPolicy cluster-policy") {
		t.Errorf("OwnedByGPUOperator = %+v, want reason ClusterPolicy naming cluster-policy", cond)
	}
	waitEvent(t, c, "operator", v1alpha1.ReasonClusterPolicy)
	if p.Status.Driver.Source != v1alpha1.SourceGPUOperator {
		t.Errorf("status.driver.source = %q, want GPUOperator", p.Status.Driver.Source)
	}
	waitDaemonSet(t, c, "gpunode-operator-toolkit", "rendered (toolkit.enabled=false)", func(*appsv1.DaemonSet) bool { return true })
	if names := daemonSetsOf(t, c, "operator"); len(names) != 1 {
		t.Errorf("DaemonSets %v, want the toolkit's alone", names)
	}
	// The GPU Operator's driver: ready once NVML answers at the wanted version.
	startPod(t, c, "operator", ComponentToolkit, "operator-1", toolkitWanted)
	publish(t, c, "operator-1", driverWanted, true)
	waitNode(t, c, "operator-1", "operator", "")

	// The GPU Operator gives the driver back: gpunode deploys it.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cp), cp); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cp.Object, false, "spec", "driver", "enabled"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, c, "gpunode-operator-driver", "rendered once driver.enabled=false", func(*appsv1.DaemonSet) bool { return true })
	waitPool(t, c, "operator", "no longer the GPU Operator's", func(p *v1alpha1.StackPool) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionOwnedByGPUOperator)
	})
}

// startControllerAfterGPUOperatorCRDs installs the GPU Operator's CRDs, then starts the
// controller, which watches them because they are there at its start.
func startControllerAfterGPUOperatorCRDs(t *testing.T) client.Client {
	t.Helper()
	_, c := testenv.Start(t)
	installGPUOperatorCRDs(t, c)
	return startController(t)
}

func TestAnNVIDIADriverKeepsThePoolsDriverOffTheNodesItSelects(t *testing.T) {
	c := startControllerAfterGPUOperatorCRDs(t)
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(ClusterPolicyKind)
	cp.SetName("cluster-policy-crd")
	for path, v := range map[string]bool{"driver.useNvidiaDriverCRD": true, "toolkit.enabled": false} {
		if err := unstructured.SetNestedField(cp.Object, v, append([]string{"spec"}, strings.Split(path, ".")...)...); err != nil {
			t.Fatal(err)
		}
	}
	create(t, c, cp)
	nd := &unstructured.Unstructured{}
	nd.SetGroupVersionKind(NVIDIADriverKind)
	nd.SetName("h100-open")
	if err := unstructured.SetNestedStringMap(nd.Object, map[string]string{"driver": "nvidia-open"}, "spec", "nodeSelector"); err != nil {
		t.Fatal(err)
	}
	create(t, c, nd)
	create(t, c, containerPool("nvd"))
	create(t, c, node("nvd-1", map[string]string{"pool": "nvd"}))
	create(t, c, node("nvd-2", map[string]string{"pool": "nvd", "driver": "nvidia-open"}))

	waitDaemonSet(t, c, "gpunode-nvd-driver", "kept off nvd-2", func(ds *appsv1.DaemonSet) bool {
		aff := ds.Spec.Template.Spec.Affinity
		if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return false
		}
		f := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
		return f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpNotIn && len(f.Values) == 1 && f.Values[0] == "nvd-2"
	})
	p := waitPool(t, c, "nvd", "the NVIDIADriver named", func(p *v1alpha1.StackPool) bool {
		return p.Status.Nodes == 2 && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionOwnedByGPUOperator)
	})
	if cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionOwnedByGPUOperator); cond.Reason != v1alpha1.ReasonNVIDIADriver ||
		!strings.Contains(cond.Message, "NVIDIADriver h100-open") {
		t.Errorf("OwnedByGPUOperator = %+v, want reason NVIDIADriver naming h100-open", cond)
	}
	// nvd-2's driver is the GPU Operator's: no gpunode driver pod is waited for there.
	startPod(t, c, "nvd", ComponentToolkit, "nvd-2", toolkitWanted)
	publish(t, c, "nvd-2", driverWanted, true)
	waitNode(t, c, "nvd-2", "nvd", "")
	waitNode(t, c, "nvd-1", "nvd", v1alpha1.HoldReasonStackNotReady, "no pod of DaemonSet gpunode-nvd-driver")
}
