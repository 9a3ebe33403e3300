package stack

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

func TestImageAddsTheVersionAsTagAndMovesToTheRegistry(t *testing.T) {
	tests := []struct {
		name                                   string
		image, prefix, version, registry, want string
	}{
		{"a full reference is kept", driverImage, "", driverWanted, "", driverImage},
		{"a repository gets the version as tag", "nvcr.io/nvidia/driver", "", driverWanted, "", "nvcr.io/nvidia/driver:580.95.05"},
		{"a toolkit repository gets the vendor's v-prefixed tag", toolkitImage, "v", toolkitWanted, "", toolkitImage + ":v1.18.0"},
		{"a registry replaces the host and path and keeps name and tag", driverImage, "", driverWanted, "registry.example:5000/mirror",
			"registry.example:5000/mirror/driver:580.95.05-ubuntu24.04"},
		{"a digest is kept through a registry", "nvcr.io/nvidia/driver@sha256:abc", "", driverWanted, "mirror.local/",
			"mirror.local/driver@sha256:abc"},
		{"a registry with a port and a repository without a tag", "localhost:5000/driver", "", driverWanted, "",
			"localhost:5000/driver:580.95.05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Image(tt.image, tt.prefix, tt.version, tt.registry); got != tt.want {
				t.Errorf("Image = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderGivesOneOnDeleteDaemonSetPerContainerOperand(t *testing.T) {
	preDriver := containerPool("a")
	preDriver.Spec.Driver = v1alpha1.DriverOperand{Source: v1alpha1.SourcePreinstalled, Version: driverWanted}
	tests := []struct {
		name     string
		pool     *v1alpha1.StackPool
		operator GPUOperator
		excluded []string
		want     []string
		root     string // the toolkit's NVIDIA_DRIVER_ROOT
	}{
		{"both operands as containers render two DaemonSets", containerPool("a"), GPUOperator{}, nil,
			[]string{"gpunode-a-driver", "gpunode-a-toolkit"}, ContainerDriverRoot},
		{"a preinstalled pool renders none", preinstalledPool("a"), GPUOperator{}, nil, nil, ""},
		{"a preinstalled driver leaves the toolkit on the host's driver root", preDriver, GPUOperator{}, nil,
			[]string{"gpunode-a-toolkit"}, "/"},
		{"a ClusterPolicy that deploys the driver and toolkit leaves nothing to render", containerPool("a"),
			GPUOperator{ClusterPolicy: "cluster-policy", Driver: true, Toolkit: true}, nil, nil, ""},
		{"a ClusterPolicy with driver.enabled=false leaves the driver to gpunode", containerPool("a"),
			GPUOperator{ClusterPolicy: "cluster-policy", Driver: false, Toolkit: true}, nil, []string{"gpunode-a-driver"}, ""},
		{"NVIDIADrivers with node selectors keep the driver DaemonSet, off their nodes", containerPool("a"),
			GPUOperator{ClusterPolicy: "cluster-policy", Driver: true, DriverCRD: true, NVIDIADrivers: []NVIDIADriver{{Name: "h100", NodeSelector: map[string]string{"x": "y"}}}},
			[]string{"node-3"}, []string{"gpunode-a-driver", "gpunode-a-toolkit"}, ContainerDriverRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dss := Render(tt.pool, "gpunode-system", tt.operator, tt.excluded, nil)
			var names []string
			for _, ds := range dss {
				names = append(names, ds.Name)
				checkFrame(t, tt.pool, ds)
				if ds.Labels[LabelComponent] == ComponentToolkit {
					if got := env(ds, "NVIDIA_DRIVER_ROOT"); got != tt.root {
						t.Errorf("%s NVIDIA_DRIVER_ROOT = %q, want %q", ds.Name, got, tt.root)
					}
				}
				if ds.Labels[LabelComponent] == ComponentDriver {
					aff := ds.Spec.Template.Spec.Affinity
					if len(tt.excluded) == 0 && aff != nil {
						t.Errorf("%s has an affinity %+v, want none", ds.Name, aff)
					}
					if len(tt.excluded) > 0 && (aff == nil || !slices.Equal(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values, tt.excluded)) {
						t.Errorf("%s affinity = %+v, want metadata.name NotIn %v", ds.Name, aff, tt.excluded)
					}
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("rendered %v, want %v", names, tt.want)
			}
		})
	}
}

// checkFrame checks what every operand DaemonSet has: OnDelete, the pool's selector and
// labels, its owner, and gpunode's hold taints tolerated.
func TestRenderGivesAnAgentDaemonSetOnlyToAContainerAgentWithTheChartsTemplate(t *testing.T) {
	tmpl := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/instance": "gpunode"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:  []corev1.Toleration{{Key: v1alpha1.TaintNotAccepted, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:   []corev1.Container{{Name: AgentContainer, Image: "ghcr.io/gpunode/gpunode:0.1.0"}, {Name: "sidecar", Image: "example.invalid/sidecar"}},
		},
	}}}
	tests := []struct {
		name string
		pool *v1alpha1.StackPool
		tmpl *appsv1.DaemonSet
		want []string
	}{
		{"a pool whose agent is a container gets an agent DaemonSet", agentPool("a"), tmpl,
			[]string{"gpunode-a-driver", "gpunode-a-toolkit", "gpunode-a-agent"}},
		{"a pool whose agent is the chart's gets none", containerPool("a"), tmpl, []string{"gpunode-a-driver", "gpunode-a-toolkit"}},
		{"without the chart's agent DaemonSet no agent DaemonSet is rendered", agentPool("a"), nil,
			[]string{"gpunode-a-driver", "gpunode-a-toolkit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, ds := range Render(tt.pool, "gpunode-system", GPUOperator{}, nil, tt.tmpl) {
				names = append(names, ds.Name)
				checkFrame(t, tt.pool, ds)
				if ds.Labels[LabelComponent] != ComponentAgent {
					continue
				}
				cs := ds.Spec.Template.Spec.Containers
				if cs[0].Image != agentImage+":"+agentWanted || cs[1].Image != "example.invalid/sidecar" {
					t.Errorf("images %s, %s: want the agent's replaced by the pool's and the others kept", cs[0].Image, cs[1].Image)
				}
				if ds.Spec.Template.Labels["app.kubernetes.io/instance"] != "gpunode" {
					t.Errorf("the chart's pod labels are lost: %v", ds.Spec.Template.Labels)
				}
				if len(ds.Spec.Template.Spec.Tolerations) != 3 {
					t.Errorf("tolerations %+v: want the chart's and the operands', each once", ds.Spec.Template.Spec.Tolerations)
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("rendered %v, want %v", names, tt.want)
			}
			if tmpl.Spec.Template.Spec.Containers[0].Image != "ghcr.io/gpunode/gpunode:0.1.0" || tmpl.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
				t.Errorf("rendering changed the chart's DaemonSet: %+v", tmpl.Spec.Template.Spec)
			}
		})
	}
}

func checkFrame(t *testing.T, p *v1alpha1.StackPool, ds *appsv1.DaemonSet) {
	t.Helper()
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("%s update strategy = %s, want OnDelete", ds.Name, ds.Spec.UpdateStrategy.Type)
	}
	nodeLabel := v1alpha1.LabelStackPool
	if ds.Labels[LabelComponent] == ComponentAgent {
		nodeLabel = v1alpha1.LabelStackAgent // the agent's hand-over label
	}
	if got := ds.Spec.Template.Spec.NodeSelector[nodeLabel]; got != p.Name || len(ds.Spec.Template.Spec.NodeSelector) != 1 {
		t.Errorf("%s node selector = %v, want %s=%s alone", ds.Name, ds.Spec.Template.Spec.NodeSelector, nodeLabel, p.Name)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("%s selector %s=%s does not match its pod template's labels %v", ds.Name, k, v, ds.Spec.Template.Labels)
		}
	}
	if _, versioned := ds.Spec.Selector.MatchLabels[v1alpha1.LabelOperandVersion]; versioned {
		t.Errorf("%s selects by version: a version change would orphan its pods", ds.Name)
	}
	if len(ds.OwnerReferences) != 1 || ds.OwnerReferences[0].Name != p.Name || ds.OwnerReferences[0].UID != p.UID {
		t.Errorf("%s owners = %+v, want StackPool %s", ds.Name, ds.OwnerReferences, p.Name)
	}
	for _, taint := range []string{v1alpha1.TaintNotAccepted, v1alpha1.TaintUnschedulable} {
		if !slices.ContainsFunc(ds.Spec.Template.Spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == taint && tol.Operator == corev1.TolerationOpExists
		}) {
			t.Errorf("%s does not tolerate %s: its operand could not run on a held node", ds.Name, taint)
		}
	}
}

func env(ds *appsv1.DaemonSet, name string) string {
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestTheDriverOwnerIsTheGPUOperatorObjectThatDeploysIt(t *testing.T) {
	h100 := map[string]string{"class": "h100"}
	tests := []struct {
		name   string
		g      GPUOperator
		labels map[string]string
		want   string
	}{
		{"no GPU Operator owns nothing", GPUOperator{}, h100, ""},
		{"a ClusterPolicy with the driver enabled owns it everywhere", GPUOperator{ClusterPolicy: "cp", Driver: true}, h100, "ClusterPolicy cp"},
		{"a ClusterPolicy with the driver disabled owns no driver", GPUOperator{ClusterPolicy: "cp", Toolkit: true}, h100, ""},
		{"an NVIDIADriver whose selector matches owns the node's driver", GPUOperator{ClusterPolicy: "cp", Driver: true, DriverCRD: true,
			NVIDIADrivers: []NVIDIADriver{{Name: "h100", NodeSelector: h100}}}, h100, "NVIDIADriver h100"},
		{"an NVIDIADriver whose selector does not match owns nothing", GPUOperator{ClusterPolicy: "cp", Driver: true, DriverCRD: true,
			NVIDIADrivers: []NVIDIADriver{{Name: "a100", NodeSelector: map[string]string{"class": "a100"}}}}, h100, ""},
		{"the default NVIDIADriver owns the nodes no other selects", GPUOperator{ClusterPolicy: "cp", Driver: true, DriverCRD: true,
			NVIDIADrivers: []NVIDIADriver{{Name: "a100", NodeSelector: map[string]string{"class": "a100"}}, {Name: "default"}}}, h100, "NVIDIADriver default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := tt.g.DriverOwner(tt.labels); got != tt.want {
				t.Errorf("DriverOwner = %q, want %q", got, tt.want)
			}
		})
	}
}
