package acceptance

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpunode/gpunode/internal/nodeops"
)

// devicePluginSelectors are the pod labels of NVIDIA's device plugin as it is commonly
// deployed: the GPU Operator's daemonset, NVIDIA's Helm chart, and NVIDIA's static manifest.
var devicePluginSelectors = []struct{ key, value string }{
	{"app", "nvidia-device-plugin-daemonset"},
	{"app.kubernetes.io/name", "nvidia-device-plugin"},
	{"name", "nvidia-device-plugin-ds"},
}

// agentPluginFlag is the gpunode agent's flag that serves its own device plugin
// (internal/cli, agent_deviceplugin.go); the chart passes it when
// agent.devicePlugin.enabled is true.
const agentPluginFlag = "device-plugin"

// agentSelector matches gpunode's agent pods (the chart's selector labels).
var agentSelector = labels.SelectorFromSet(nodeops.AgentLabels())

// pluginPod is a pod on the node that serves a device plugin.
type pluginPod struct {
	pod *corev1.Pod
	// gpunode: the gpunode agent's own plugin (else NVIDIA's).
	gpunode bool
	// container is the agent container that runs with --device-plugin (gpunode only).
	container string
}

// ready says whether the plugin serves: NVIDIA's pod runs and is ready; gpunode's agent
// pod runs and the container with --device-plugin runs and is ready (the pod's other
// containers, such as the exporter, do not serve the plugin).
func (p pluginPod) ready() bool {
	if !p.gpunode {
		return podReady(p.pod)
	}
	if p.pod.Status.Phase != corev1.PodRunning || p.pod.DeletionTimestamp != nil {
		return false
	}
	for _, cs := range p.pod.Status.ContainerStatuses {
		if cs.Name == p.container {
			return cs.Ready && cs.State.Running != nil
		}
	}
	return false
}

// describe says whose plugin the pod serves and its state.
func (p pluginPod) describe() string {
	if !p.gpunode {
		return "NVIDIA device plugin " + describePod(p.pod)
	}
	return fmt.Sprintf("gpunode agent %s (container %s with --%s, ready=%t)", describePod(p.pod), p.container, agentPluginFlag, p.ready())
}

// name is the plugin's pod, as the messages name it.
func (p pluginPod) name() string {
	if p.gpunode {
		return fmt.Sprintf("gpunode's own device plugin (agent pod %s/%s)", p.pod.Namespace, p.pod.Name)
	}
	return fmt.Sprintf("device plugin %s/%s", p.pod.Namespace, p.pod.Name)
}

func isDevicePlugin(p *corev1.Pod) bool {
	for _, s := range devicePluginSelectors {
		if p.Labels[s.key] == s.value {
			return true
		}
	}
	return false
}

// agentPluginContainer is the container of a gpunode agent pod that runs with
// --device-plugin on, or "" when there is none.
func agentPluginContainer(p *corev1.Pod) string {
	if !agentSelector.Matches(labels.Set(p.Labels)) {
		return ""
	}
	for _, c := range p.Spec.Containers {
		if boolFlag(append(append([]string{}, c.Command...), c.Args...), agentPluginFlag) {
			return c.Name
		}
	}
	return ""
}

// boolFlag is the value of the boolean flag --name in args as the agent's flag parser
// reads it: --name or --name=true (or 1, t, T, TRUE, True) turns it on, --name=false off,
// the last one wins, and nothing after "--" is a flag.
func boolFlag(args []string, name string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		switch {
		case a == "--"+name:
			on = true
		case strings.HasPrefix(a, "--"+name+"="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, "--"+name+"="))
			on = err == nil && v
		}
	}
	return on
}

// podReady reports whether p runs with every container ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePod says what a person needs of a pod's state: phase, readiness, the first
// waiting container's reason and restarts.
func describePod(p *corev1.Pod) string {
	var restarts int32
	waiting := ""
	for _, c := range p.Status.ContainerStatuses {
		restarts += c.RestartCount
		if c.State.Waiting != nil && waiting == "" {
			waiting = c.State.Waiting.Reason
		}
	}
	s := fmt.Sprintf("%s/%s %s ready=%t restarts=%d", p.Namespace, p.Name, p.Status.Phase, podReady(p), restarts)
	if waiting != "" {
		s += " waiting=" + waiting
	}
	if p.DeletionTimestamp != nil {
		s += " terminating"
	}
	return s
}

// pluginPods are the pods bound to the node that serve a device plugin: NVIDIA's, and
// gpunode's agent with its own plugin on. Agent pods with the plugin off come back as
// evidence (a plugin may have been expected of them).
func pluginPods(f KubernetesFacts) (found []pluginPod, agentsWithout []string) {
	for i := range f.Pods {
		p := &f.Pods[i]
		if p.Spec.NodeName != f.Node.Name {
			continue
		}
		switch c := agentPluginContainer(p); {
		case isDevicePlugin(p):
			found = append(found, pluginPod{pod: p})
		case c != "":
			found = append(found, pluginPod{pod: p, gpunode: true, container: c})
		case agentSelector.Matches(labels.Set(p.Labels)):
			agentsWithout = append(agentsWithout, fmt.Sprintf("gpunode agent %s runs without --%s", describePod(p), agentPluginFlag))
		}
	}
	return found, agentsWithout
}

// checkDevicePlugin: a device plugin serves the node's GPUs: NVIDIA's device-plugin pod
// runs and is ready, or gpunode's agent pod runs its own plugin (--device-plugin) in a
// running container. When several are on the node one must serve; one of each serving
// warns, as both register nvidia.com/gpu. None on the node skips: the GPUs may be
// advertised by a host service, and kubernetes.allocatable judges what is advertised.
func checkDevicePlugin(f KubernetesFacts) verdict {
	found, agentsWithout := pluginPods(f)
	registered := "registered on the Node (capacity): " + render(gpuResources(f.Node.Status.Capacity))
	if len(found) == 0 {
		var sel []string
		for _, s := range devicePluginSelectors {
			sel = append(sel, s.key+"="+s.value)
		}
		ev := append([]string{fmt.Sprintf("%d pods on the node", len(f.Pods)), registered}, agentsWithout...)
		return judged(statusSkip, ev,
			"no device-plugin pod on the node (NVIDIA's: labels %s; gpunode's: the agent pod with --%s); %s judges what is advertised",
			strings.Join(sel, ", "), agentPluginFlag, CheckAllocatable)
	}
	ev := make([]string, 0, len(found)+1)
	var nvidia, own *pluginPod
	for i, p := range found {
		ev = append(ev, p.describe())
		switch {
		case !p.ready():
		case p.gpunode && own == nil:
			own = &found[i]
		case !p.gpunode && nvidia == nil:
			nvidia = &found[i]
		}
	}
	ev = append(ev, registered)
	switch {
	case nvidia != nil && own != nil:
		return judged(statusWarn, ev, "two device plugins serve the node: %s and %s; both register %s, run only one", nvidia.name(), own.name(), resourceGPU)
	case own != nil:
		return judged(statusPass, ev, "%s is running", own.name())
	case nvidia != nil:
		return judged(statusPass, ev, "%s is running and ready", nvidia.name())
	}
	return judged(statusFail, ev, "no device plugin on the node is running and ready: %s", ev[0])
}
