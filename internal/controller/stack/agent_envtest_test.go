package stack

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// chartAgentSelector is the chart's agent DaemonSet's selector (gpunode.agentSelector).
var chartAgentSelector = map[string]string{"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/instance": "gpunode", "app.kubernetes.io/component": "agent"}

// createChartAgent creates the chart's agent DaemonSet: a pod template as the chart's,
// the agent container at 0.1.0, off the nodes labelled chart-agent=off.
func createChartAgent(t *testing.T, c client.Client) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: chartAgent, Namespace: testNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: chartAgentSelector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: chartAgentSelector},
				Spec: corev1.PodSpec{
					ServiceAccountName: "gpunode-agent",
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: v1alpha1.LabelChartAgent, Operator: corev1.NodeSelectorOpNotIn, Values: []string{v1alpha1.ChartAgentOff}},
						}}},
					}}},
					Containers: []corev1.Container{{Name: AgentContainer, Image: "ghcr.io/gpunode/gpunode:0.1.0", Args: []string{"agent", "--node-name=$(NODE_NAME)"}}},
				},
			},
		},
	}
	create(t, c, ds)
	return ds
}

// startChartAgentPod plays the chart's DaemonSet: its agent pod on node.
func startChartAgentPod(t *testing.T, c client.Client, nodeName string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpunode-agent-" + nodeName, Namespace: testNamespace, Labels: chartAgentSelector},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: AgentContainer, Image: "ghcr.io/gpunode/gpunode:0.1.0"}}},
	}
	create(t, c, pod)
	return pod
}

// removePod plays the DaemonSet controller and the kubelet removing pod.
func removePod(t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	if err := c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s: %v", pod.Name, err)
	}
}

// reportAgent plays the agent reporting its version.
func reportAgent(t *testing.T, c client.Client, name, version string) {
	t.Helper()
	ctx := t.Context()
	err := retryOnConflict(ctx, func() error {
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Status.Versions.Agent = version
		return c.Status().Update(ctx, gn)
	})
	if err != nil {
		t.Fatalf("reporting the agent's version on GPUNode %s: %v", name, err)
	}
}

// waitAgentLabels waits until Node name's hand-over labels are chart-agent=off (or none)
// and stack-agent=stackAgent (or none).
func waitAgentLabels(t *testing.T, c client.Client, name string, chartOff bool, stackAgent string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Node %s with chart-agent off %v and stack-agent %q", name, chartOff, stackAgent), func() (bool, string) {
		n := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
			return false, err.Error()
		}
		off := n.Labels[v1alpha1.LabelChartAgent] == v1alpha1.ChartAgentOff
		agent, has := n.Labels[v1alpha1.LabelStackAgent]
		return off == chartOff && agent == stackAgent && (has == (stackAgent != "")), fmt.Sprintf("labels %v", n.Labels)
	})
}

func TestAPoolsAgentTakesTheNodeFromTheChartsAgentOnlyAfterItsPodLeft(t *testing.T) {
	c := startController(t)
	createChartAgent(t, c)
	chartPod := startChartAgentPod(t, c, "ag-1")
	create(t, c, node("ag-1", map[string]string{"pool": "ag"}))
	create(t, c, agentPool("ag"))

	waitAgentLabels(t, c, "ag-1", true, "")
	waitNode(t, c, "ag-1", "ag", v1alpha1.HoldReasonStackNotReady, "agent: no pod of DaemonSet gpunode-ag-agent on the node yet")
	ds := waitDaemonSet(t, c, "gpunode-ag-agent", "rendered from the chart's agent", func(*appsv1.DaemonSet) bool { return true })
	spec := ds.Spec.Template.Spec
	if img := spec.Containers[0].Image; img != agentImage+":"+agentWanted {
		t.Errorf("the pool's agent image is %s, want %s:%s", img, agentImage, agentWanted)
	}
	if spec.NodeSelector[v1alpha1.LabelStackAgent] != "ag" || spec.Affinity != nil || ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("the pool's agent DaemonSet selects %v with affinity %+v, strategy %s; want stack-agent=ag, no affinity, OnDelete",
			spec.NodeSelector, spec.Affinity, ds.Spec.UpdateStrategy.Type)
	}
	if spec.ServiceAccountName != "gpunode-agent" || len(spec.Containers[0].Args) != 2 {
		t.Errorf("the pool's agent pod does not keep the chart's pod spec: %+v", spec)
	}

	removePod(t, c, chartPod) // the DaemonSet controller obeys the chart's node affinity
	waitAgentLabels(t, c, "ag-1", true, "ag")
	startPod(t, c, "ag", ComponentDriver, "ag-1", driverWanted)
	startPod(t, c, "ag", ComponentToolkit, "ag-1", toolkitWanted)
	startPod(t, c, "ag", ComponentAgent, "ag-1", agentWanted)
	publish(t, c, "ag-1", driverWanted, true)
	reportAgent(t, c, "ag-1", "0.1.0")
	waitNode(t, c, "ag-1", "ag", v1alpha1.HoldReasonStackNotReady, "agent: the agent reports version 0.1.0, pool wants 0.2.0")
	reportAgent(t, c, "ag-1", agentWanted)
	waitNode(t, c, "ag-1", "ag", "")
	p := waitPool(t, c, "ag", "its member ready with the pool's agent", func(p *v1alpha1.StackPool) bool {
		return p.Status.ReadyNodes == 1 && p.Status.Agent.Summary == agentWanted+"×1"
	})
	if p.Status.Agent.Wanted != agentWanted || p.Status.Agent.Source != v1alpha1.SourceContainer {
		t.Errorf("status.agent = %+v, want %s wanted from a Container", p.Status.Agent, agentWanted)
	}
}

func TestANodeMovingToAnotherPoolIsHeldUntilTheOldPoolsPodsLeftAndTheNewPoolsAreReady(t *testing.T) {
	c := startController(t)
	create(t, c, agentPool("mv-a"))
	create(t, c, agentPool("mv-b"))
	n := node("mv-1", map[string]string{"pool": "mv-a"})
	create(t, c, n)
	var old []*corev1.Pod
	for _, o := range []struct{ component, version string }{{ComponentDriver, driverWanted}, {ComponentToolkit, toolkitWanted}, {ComponentAgent, agentWanted}} {
		waitAgentLabels(t, c, "mv-1", true, "mv-a")
		old = append(old, startPod(t, c, "mv-a", o.component, "mv-1", o.version))
	}
	publish(t, c, "mv-1", driverWanted, true)
	reportAgent(t, c, "mv-1", agentWanted)
	waitNode(t, c, "mv-1", "mv-a", "")

	err := retryOnConflict(t.Context(), func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		n.Labels["pool"] = "mv-b"
		return c.Update(t.Context(), n)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitNode(t, c, "mv-1", "mv-b", v1alpha1.HoldReasonStackNotReady,
		`driver: pod gpunode-mv-a-driver-mv-1 of StackPool "mv-a" is still on the node`,
		`toolkit: pod gpunode-mv-a-toolkit-mv-1 of StackPool "mv-a" is still on the node`,
		`agent: pod gpunode-mv-a-agent-mv-1 of StackPool "mv-a" is still on the node`)
	waitAgentLabels(t, c, "mv-1", true, "") // mv-a's agent is told to leave; mv-b's waits for it
	waitPool(t, c, "mv-a", "no member left", func(p *v1alpha1.StackPool) bool { return p.Status.ReadyNodes == 0 && p.Status.Nodes == 0 })
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("StackPool"))
	if err := c.Get(t.Context(), client.ObjectKey{Name: "mv-a"}, u); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"nodes", "readyNodes"} {
		if v, found, _ := unstructured.NestedInt64(u.Object, "status", field); !found || v != 0 {
			t.Errorf("the emptied pool's status.%s is %d (present %v), want 0 written: kubectl shows an empty column otherwise", field, v, found)
		}
	}

	for _, pod := range old {
		removePod(t, c, pod) // mv-a's DaemonSets select the node no more
	}
	waitAgentLabels(t, c, "mv-1", true, "mv-b")
	waitNode(t, c, "mv-1", "mv-b", v1alpha1.HoldReasonStackNotReady, "driver: no pod of DaemonSet gpunode-mv-b-driver on the node yet")
	startPod(t, c, "mv-b", ComponentDriver, "mv-1", driverWanted)
	startPod(t, c, "mv-b", ComponentToolkit, "mv-1", toolkitWanted)
	startPod(t, c, "mv-b", ComponentAgent, "mv-1", agentWanted)
	waitNode(t, c, "mv-1", "mv-b", "")
	waitPool(t, c, "mv-b", "the moved node ready", func(p *v1alpha1.StackPool) bool { return p.Status.Nodes == 1 && p.Status.ReadyNodes == 1 })
}
