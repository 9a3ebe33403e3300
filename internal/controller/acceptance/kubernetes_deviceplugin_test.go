package acceptance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// agentPod returns gpunode's agent pod (the chart's labels) bound to node, whose agent
// container runs with args; agentReady is the agent container's state, exporterReady the
// exporter's (the pod is ready when both are).
func agentPod(node string, args []string, phase corev1.PodPhase, agentReady, exporterReady bool) corev1.Pod {
	status := func(name string, ready bool) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: name, Ready: ready}
		if ready {
			cs.State.Running = &corev1.ContainerStateRunning{}
		} else {
			cs.RestartCount = 3
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		return cs
	}
	podReadyStatus := corev1.ConditionFalse
	if phase == corev1.PodRunning && agentReady && exporterReady {
		podReadyStatus = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpunode-system", Name: "gpunode-agent-x7k2p", Labels: map[string]string{
			"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/instance": "gpunode", "app.kubernetes.io/component": "agent",
		}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "agent", Image: "ghcr.io/gpunode/gpunode:v0.4.0", Args: args},
			{Name: "exporter", Image: "ghcr.io/gpunode/gpunode:v0.4.0", Args: []string{"exporter", "--node-name=$(NODE_NAME)"}},
		}},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: podReadyStatus}},
			ContainerStatuses: []corev1.ContainerStatus{status("agent", agentReady), status("exporter", exporterReady)}},
	}
}

// chartArgs are the agent's args as the chart renders them with agent.devicePlugin.enabled.
var chartArgs = []string{"agent", "--node-name=$(NODE_NAME)", "--host-root=/host", "--interval=30s", "--kernel-log=none",
	"--device-plugin", "--device-plugin-dir=/var/lib/kubelet/device-plugins", "--cdi-spec-dir=none", "--state-dir=/var/lib/gpunode"}

// noPluginArgs are the agent's args without its device plugin.
var noPluginArgs = []string{"agent", "--node-name=$(NODE_NAME)", "--host-root=/host", "--interval=30s", "--state-dir=/var/lib/gpunode"}

func TestTheDevicePluginCheckRecognisesGpunodesOwnPlugin(t *testing.T) {
	pods := func(p ...corev1.Pod) func(*KubernetesFacts) { return func(f *KubernetesFacts) { f.Pods = p } }
	serving := agentPod("node-a", chartArgs, corev1.PodRunning, true, true)
	explicit := agentPod("node-a", []string{"agent", "--device-plugin=true"}, corev1.PodRunning, true, true)
	exporterDown := agentPod("node-a", chartArgs, corev1.PodRunning, true, false)
	crashing := agentPod("node-a", chartArgs, corev1.PodRunning, false, true)
	pending := agentPod("node-a", chartArgs, corev1.PodPending, false, false)
	pluginOff := agentPod("node-a", noPluginArgs, corev1.PodRunning, true, true)
	turnedOff := agentPod("node-a", append(append([]string{}, chartArgs...), "--device-plugin=false"), corev1.PodRunning, true, true)
	elsewhere := agentPod("node-b", chartArgs, corev1.PodRunning, true, true)
	foreign := serving
	foreign.Labels = map[string]string{"app": "someone-elses-agent"}
	viaCommand := agentPod("node-a", nil, corev1.PodRunning, true, true)
	viaCommand.Spec.Containers[0].Command = append([]string{"/gpunode"}, chartArgs...)
	nvidia := devicePluginPod("node-a", "plugin-abc", corev1.PodRunning, true)
	nvidiaCrashing := devicePluginPod("node-a", "plugin-abc", corev1.PodRunning, false)
	runL2Cases(t, CheckDevicePlugin, []l2Case{
		{"gpunode's agent serving its own plugin, as the chart deploys it, passes", pods(serving), statusPass,
			"gpunode's own device plugin (agent pod gpunode-system/gpunode-agent-x7k2p) is running"},
		{"an agent with --device-plugin=true serves its plugin too", pods(explicit), statusPass, "gpunode's own device plugin"},
		{"an agent whose command, not its args, carries --device-plugin serves its plugin", pods(viaCommand), statusPass, "gpunode's own device plugin"},
		{"gpunode's plugin serves while the agent pod's exporter is not ready: the exporter does not serve it", pods(exporterDown), statusPass,
			"gpunode's own device plugin"},
		{"an agent container that crash-loops fails with its state", pods(crashing), statusFail, "waiting=CrashLoopBackOff"},
		{"a pending agent pod with the plugin on fails", pods(pending), statusFail, "Pending"},
		{"an agent without --device-plugin is no device plugin: the node is skipped", pods(pluginOff), statusSkip, "no device-plugin pod on the node"},
		{"an agent whose last --device-plugin=false turns the plugin off is no device plugin", pods(turnedOff), statusSkip, "no device-plugin pod"},
		{"a pod with --device-plugin but not gpunode's agent labels is no device plugin", pods(foreign), statusSkip, "no device-plugin pod"},
		{"gpunode's agent bound to another node does not count", pods(elsewhere), statusSkip, "no device-plugin pod"},
		{"gpunode's plugin serving beside a crash-looping NVIDIA plugin passes, naming gpunode's", pods(nvidiaCrashing, serving), statusPass,
			"gpunode's own device plugin"},
		{"NVIDIA's plugin serving beside an agent with the plugin off passes, naming NVIDIA's", pods(pluginOff, nvidia), statusPass,
			"device plugin nvidia/plugin-abc is running and ready"},
		{"NVIDIA's plugin and gpunode's both serving warns: both register nvidia.com/gpu", pods(nvidia, serving), statusWarn,
			"two device plugins serve the node"},
	})
}

func TestTheSkippedDevicePluginCheckNamesAnAgentWithItsPluginOff(t *testing.T) {
	f := KubernetesFacts{Node: kubeNode("node-a", 8), GPUNode: gpuNode("node-a", 8),
		Pods: []corev1.Pod{agentPod("node-a", noPluginArgs, corev1.PodRunning, true, true)}}
	v := checkDevicePlugin(f)
	if v.status != statusSkip {
		t.Fatalf("status %s, want skip", v.status)
	}
	want := "gpunode agent gpunode-system/gpunode-agent-x7k2p Running ready=true restarts=0 runs without --device-plugin"
	for _, l := range v.evidence {
		if l == want {
			return
		}
	}
	t.Errorf("evidence %q lacks %q", v.evidence, want)
}

func TestBoolFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"The bare flag turns it on.", []string{"agent", "--device-plugin"}, true},
		{"An explicit true turns it on.", []string{"--device-plugin=true"}, true},
		{"A 1 turns it on, as the flag parser reads it.", []string{"--device-plugin=1"}, true},
		{"An explicit false leaves it off.", []string{"--device-plugin=false"}, false},
		{"The last one wins.", []string{"--device-plugin", "--device-plugin=false"}, false},
		{"A flag that only starts with the name is another flag.", []string{"--device-plugin-dir=/var/lib/kubelet/device-plugins"}, false},
		{"An unparsable value is not on.", []string{"--device-plugin=maybe"}, false},
		{"Nothing after -- is a flag.", []string{"agent", "--", "--device-plugin"}, false},
		{"No flag is off.", []string{"agent", "--interval=30s"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := boolFlag(tc.args, agentPluginFlag); got != tc.want {
				t.Errorf("boolFlag(%q) = %t; want %t", tc.args, got, tc.want)
			}
		})
	}
}
