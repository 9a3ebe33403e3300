package chart_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/stack"
)

var update = flag.Bool("update", false, "rewrite testdata/pool-agent-daemonset.yaml from the stack controller's rendering")

// agentPool is a pool whose agent (alone) is gpunode's to deploy, from a mirror.
func agentPool() *v1alpha1.StackPool {
	return &v1alpha1.StackPool{
		ObjectMeta: metav1.ObjectMeta{Name: "h100-580", UID: "7d1c1f5e-2f7a-4d8e-9a61-0c2b9f3e4a10"},
		Spec: v1alpha1.StackPoolSpec{
			NodeSelector:     metav1.LabelSelector{MatchLabels: map[string]string{"gpunode.dev/accelerator-class": "h100-sxm-80gb"}},
			Driver:           v1alpha1.DriverOperand{Source: v1alpha1.SourcePreinstalled, Version: "580.95.05"},
			Toolkit:          v1alpha1.ToolkitOperand{Source: v1alpha1.SourcePreinstalled},
			Agent:            v1alpha1.AgentOperand{Source: v1alpha1.SourceContainer, Image: "ghcr.io/gpunode/gpunode", Version: "0.2.0"},
			Registry:         "registry.example:5000/mirror",
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mirror-pull"}},
		},
	}
}

func TestTheChartsAgentStaysOffTheNodesWhosePoolDeploysTheAgent(t *testing.T) {
	for _, values := range []string{"", "agent: {gpuNodeLabels: []}"} {
		ds := agentDaemonSet(t, render(t, values))
		terms := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			t.Errorf("values %q: the chart's agent has no node affinity term", values)
		}
		for i, term := range terms { // terms are ORed: each must keep off
			if !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
				return r.Key == v1alpha1.LabelChartAgent && r.Operator == corev1.NodeSelectorOpNotIn && slices.Equal(r.Values, []string{v1alpha1.ChartAgentOff})
			}) {
				t.Errorf("values %q: term %d %+v does not keep off %s=%s: a pool's node would run two agents", values, i, term, v1alpha1.LabelChartAgent, v1alpha1.ChartAgentOff)
			}
		}
	}
	d := find[*appsv1.Deployment](render(t, ""), "Deployment", "gpunode-controller")
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--stack-agent-template=gpunode-agent") {
		t.Errorf("the controller is not told the chart's agent DaemonSet: %v", d.Spec.Template.Spec.Containers[0].Args)
	}
}

func TestAPoolsAgentDaemonSetIsTheChartsAgentPodWithThePoolsImageAndNodes(t *testing.T) {
	chartDS := agentDaemonSet(t, render(t, ""))
	dss := stack.Render(agentPool(), namespace, stack.GPUOperator{}, nil, chartDS)
	if len(dss) != 1 || dss[0].Name != "gpunode-h100-580-agent" {
		t.Fatalf("rendered %d DaemonSets, want gpunode-h100-580-agent alone", len(dss))
	}
	ds := dss[0]
	got, want := ds.Spec.Template.Spec.DeepCopy(), chartDS.Spec.Template.Spec.DeepCopy()
	if img := container(ds, "agent").Image; img != "registry.example:5000/mirror/gpunode:0.2.0" {
		t.Errorf("the pool's agent image is %s, want registry.example:5000/mirror/gpunode:0.2.0", img)
	}
	if !equality.Semantic.DeepEqual(got.NodeSelector, map[string]string{v1alpha1.LabelStackAgent: "h100-580"}) || got.Affinity != nil {
		t.Errorf("the pool's agent selects %v with affinity %+v, want %s=h100-580 alone", got.NodeSelector, got.Affinity, v1alpha1.LabelStackAgent)
	}
	// Everything else is the chart's pod: the same mounts, privileges, probes and arguments.
	got.Containers[0].Image, got.NodeSelector, got.Affinity = want.Containers[0].Image, want.NodeSelector, want.Affinity
	got.ImagePullSecrets, got.Tolerations = want.ImagePullSecrets, want.Tolerations
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the pool's agent pod differs from the chart's beyond image, nodes, pull secrets and tolerations:\n got %+v\nwant %+v", got, want)
	}
	for k, v := range chartDS.Spec.Template.Labels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the pool's agent pods lack the chart's label %s=%s (its Service selects the agents by them)", k, v)
		}
	}

	out, err := yaml.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "pool-agent-daemonset.yaml")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantYAML, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./test/chart/ -run PoolsAgent -update writes it)", err)
	}
	if string(out) != string(wantYAML) {
		t.Errorf("the pool's agent DaemonSet differs from %s (-update rewrites it after a deliberate change):\n%s", golden, out)
	}
}
