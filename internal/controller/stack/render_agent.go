package stack

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// AgentContainer is the name of the agent's container in the chart's pod template: the
// container whose image a pool's agent DaemonSet replaces.
const AgentContainer = "agent"

// agentDaemonSet is pool p's agent DaemonSet: the pod template of the chart's agent
// DaemonSet (tmpl), with the pool's image in the agent container, the pool's labels, its
// pull secrets added, and the Nodes labelled gpunode.dev/stack-agent=<pool> instead of the
// chart's node affinity (the GPU node labels, and chart-agent NotIn off).
func agentDaemonSet(p *v1alpha1.StackPool, namespace string, tmpl *appsv1.DaemonSet) *appsv1.DaemonSet {
	a := p.Spec.Agent
	ds := daemonSet(p, namespace, ComponentAgent, a.Version)
	frame := ds.Spec.Template
	t := tmpl.Spec.Template.DeepCopy()
	// The chart's pod labels stay: its Service and ServiceMonitor find the agents by them.
	// The chart's DaemonSet does not adopt these pods: they have a controller already.
	podLabels := maps.Clone(t.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, frame.Labels)
	t.Labels = podLabels
	spec := &t.Spec
	spec.NodeSelector = map[string]string{v1alpha1.LabelStackAgent: p.Name}
	spec.Affinity = nil
	for _, s := range p.Spec.ImagePullSecrets {
		if !slices.Contains(spec.ImagePullSecrets, s) {
			spec.ImagePullSecrets = append(spec.ImagePullSecrets, s)
		}
	}
	for _, tol := range frame.Spec.Tolerations {
		if !slices.ContainsFunc(spec.Tolerations, func(have corev1.Toleration) bool { return have.Key == tol.Key && have.Effect == tol.Effect }) {
			spec.Tolerations = append(spec.Tolerations, tol)
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == AgentContainer {
			spec.Containers[i].Image = Image(a.Image, "", a.Version, p.Spec.Registry)
		}
	}
	ds.Spec.Template = *t
	return ds
}
