package chart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestTheAgentRunsOnHeldGPUNodesWithReadOnlyHostMountsExceptItsState(t *testing.T) {
	ds := agentDaemonSet(t, render(t, ""))
	pod := ds.Spec.Template.Spec
	if pod.HostPID || pod.HostNetwork || pod.HostIPC {
		t.Errorf("hostPID/hostNetwork/hostIPC = %v/%v/%v, want all false", pod.HostPID, pod.HostNetwork, pod.HostIPC)
	}
	for _, taint := range []string{"gpunode.dev/not-accepted", "gpunode.dev/unschedulable"} {
		if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == taint && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule
		}) {
			t.Errorf("the agent does not tolerate gpunode's own taint %s: %+v", taint, pod.Tolerations)
		}
	}
	var gpuLabels []string
	for _, term := range pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		gpuLabels = append(gpuLabels, term.MatchExpressions[0].Key+"="+strings.Join(term.MatchExpressions[0].Values, ","))
	}
	if want := []string{"nvidia.com/gpu.present=true", "feature.node.kubernetes.io/pci-10de.present=true"}; !slices.Equal(gpuLabels, want) {
		t.Errorf("the agent's GPU node terms (ORed) = %v, want %v", gpuLabels, want)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			path, isHost := hostPaths[m.Name]
			writable := c.Name == "agent" && m.Name == "state"
			if isHost && m.ReadOnly == writable {
				t.Errorf("container %s mounts host %s read-only=%v; only the agent's state folder is writable", c.Name, path, m.ReadOnly)
			}
		}
		if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("container %s: the root filesystem is not read-only", c.Name)
		}
	}
	if want := map[string]string{"host-root": "/", "sys": "/sys", "kmsg": "/dev/kmsg", "device-plugins": "/var/lib/kubelet/device-plugins",
		"pod-resources": "/var/lib/kubelet/pod-resources", "state": "/var/lib/gpunode"}; !mapsEqual(hostPaths, want) {
		t.Errorf("host paths = %v, want %v", hostPaths, want)
	}
	agent := container(ds, "agent")
	for _, arg := range []string{"agent", "--node-name=$(NODE_NAME)", "--host-root=/host", "--state-dir=/var/lib/gpunode",
		"--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"} {
		if !slices.Contains(agent.Args, arg) {
			t.Errorf("agent args %v lack %s", agent.Args, arg)
		}
	}
	nodeName := agent.Env[slices.IndexFunc(agent.Env, func(e corev1.EnvVar) bool { return e.Name == "NODE_NAME" })]
	if nodeName.ValueFrom == nil || nodeName.ValueFrom.FieldRef == nil || nodeName.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME should come from the downward API (spec.nodeName): %+v", nodeName)
	}
	req := agent.Resources.Requests
	if !req.Cpu().Equal(resource.MustParse("50m")) || !req.Memory().Equal(resource.MustParse("64Mi")) {
		t.Errorf("agent requests = %v, want 50m CPU and 64Mi memory", req)
	}
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" {
		t.Errorf("runtimeClassName = %v, want nvidia (NVML through the NVIDIA container runtime)", pod.RuntimeClassName)
	}
}

func TestTheControllerRunsTwoNonRootReplicasWithLeaderElectionAndProbes(t *testing.T) {
	d := find[*appsv1.Deployment](render(t, ""), "Deployment", "gpunode-controller")
	if d == nil {
		t.Fatal("no Deployment gpunode-controller")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("the controller may run as root")
	}
	c := pod.Containers[0]
	for _, arg := range []string{"controller", "--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("controller args %v lack %s", c.Args, arg)
		}
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe.HTTPGet.Port.String() != "health" {
		t.Errorf("probes = %+v / %+v, want both on the health port", c.LivenessProbe, c.ReadinessProbe)
	}
	if i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "health" }); i < 0 || c.Ports[i].ContainerPort != 8081 {
		t.Errorf("ports = %+v, want health on 8081", c.Ports)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("controller security context = %+v, want a read-only root, no escalation, ALL dropped", sc)
	}
}

func TestTheValuesSchemaRefusesValuesThatWouldInstallSomethingBroken(t *testing.T) {
	c := loadChart(t)
	tests := []struct{ name, values, want string }{
		{"a port that is not a number is refused", "exporter: {port: nine}", "port"},
		{"resources of the exporter container, which is gone (the agent serves the metrics), are refused", "exporter: {resources: {limits: {memory: 1Gi}}}", "resources"},
		{"a driver mode that is not a boolean is refused", "driver: {managed: \"yes\"}", "managed"},
		{"a misspelt value is refused rather than ignored", "agent: {privilegd: false}", "privilegd"},
		{"a pull policy Kubernetes does not know is refused", "image: {pullPolicy: Sometimes}", "pullPolicy"},
		{"zero controller replicas are refused", "controller: {replicas: 0}", "replicas"},
		{"a reset command that does not name the GPU is refused", "agent: {remediation: {resetCommand: [nvidia-smi, --gpu-reset]}}", "at '/agent/remediation/resetCommand'"},
		{"a command argument with a comma is refused (the flag is comma-separated)", "agent: {remediation: {rebootCommand: [sh, -c, \"sync, reboot\"]}}", "at '/agent/remediation/rebootCommand/2'"},
		{"a command given as one string is refused", "agent: {remediation: {powerCycleCommand: \"ipmitool chassis power cycle\"}}", "at '/agent/remediation/powerCycleCommand'"},
		{"hostPID that is not a boolean is refused", "agent: {remediation: {hostPID: \"yes\"}}", "at '/agent/remediation/hostPID'"},
		{"hostPID for an unprivileged agent is refused", "agent: {privileged: false, remediation: {hostPID: true}}", "agent.remediation.hostPID needs agent.privileged"},
		{"a preset the simulator does not have is refused", "agent: {sim: h100x9}", "at '/agent/sim'"},
		{"a preset and a scenario at once are refused", "agent: {sim: h100x8, simScenario: \"preset: h100x8\"}", "agent.sim and agent.simScenario: set one, not both"},
		{"a simulated host that is neither simulated nor real is refused", "agent: {sim: h100x8, simHost: fake}", "at '/agent/simHost'"},
		{"extra arguments given as one string are refused", "controller: {extraArgs: \"--remediation=false\"}", "at '/controller/extraArgs'"},
		{"an extra environment variable without a name is refused", "agent: {extraEnv: [{value: \"1\"}]}", "at '/agent/extraEnv/0'"},
		{"a default policy whose spec is not an object is refused", "defaultPolicy: {enabled: true, spec: [priority]}", "at '/defaultPolicy/spec'"},
		{"a default policy without a name is refused", "defaultPolicy: {enabled: true, name: \"\"}", "at '/defaultPolicy/name'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(c, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("rendering with %q: error %v, want one naming %s", tt.values, err, tt.want)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
