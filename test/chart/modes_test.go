package chart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// installMode is one way to install the chart (the install modes docs/install.md lists and gpunode's own
// switches) with what its manifests must show.
type installMode struct {
	name   string
	values string
	check  func(t *testing.T, ms []manifest)
}

// installModes are every install mode the chart's tests render: these, the simulated GPUs'
// (sim_test.go) and the optional values' (extras_test.go).
var installModes = slices.Concat(coreModes, simModes, extraModes, draModes)

var coreModes = []installMode{
	{"the defaults install the agent serving the metrics, the controller and the admission policy for a pre-installed driver", ``,
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			if names := containerNames(ds); len(names) != 1 {
				t.Errorf("containers %v: want the agent alone (it serves the metrics from its own engine)", names)
			}
			c := container(ds, "agent")
			if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9400 || !slices.Contains(c.Args, "--metrics-bind-address=:9400") {
				t.Errorf("the agent should serve its metrics on 9400: ports %+v, args %v", c.Ports, c.Args)
			}
			if svc := find[*corev1.Service](ms, "Service", "gpunode-exporter"); svc == nil || len(svc.Spec.Ports) != 1 ||
				svc.Spec.Ports[0].TargetPort.String() != "metrics" || svc.Spec.Selector["app.kubernetes.io/component"] != "agent" {
				t.Errorf("the exporter Service should point at the agent pods' metrics port: %+v", svc)
			}
			if hasEnv(container(ds, "agent"), "GPUNODE_DRIVER_ROOT") {
				t.Error("a pre-installed driver needs no driver root")
			}
			if !hasMount(container(ds, "agent"), "device-plugins") {
				t.Error("with a device plugin the agent should see the kubelet's device-plugins folder")
			}
			for _, want := range []string{"ValidatingAdmissionPolicy/gpunode-agent-own-node-only",
				"ValidatingAdmissionPolicyBinding/gpunode-agent-own-node-only", "Deployment/gpunode-controller",
				"Service/gpunode-exporter", "ClusterRole/gpunode-agent", "ClusterRole/gpunode-controller"} {
				if !slices.Contains(kinds(ms), want) {
					t.Errorf("%s is missing from %v", want, kinds(ms))
				}
			}
		}},
	{"a driver managed by a driver container points the agent at the container's root under the host root",
		"driver: {managed: true}",
		func(t *testing.T, ms []manifest) {
			if got := envValue(container(agentDaemonSet(t, ms), "agent"), "GPUNODE_DRIVER_ROOT"); got != "/host/run/nvidia/driver" {
				t.Errorf("GPUNODE_DRIVER_ROOT = %q, want /host/run/nvidia/driver", got)
			}
		}},
	{"without a device plugin the kubelet's device-plugins folder is not mounted", "devicePlugin: {enabled: false}",
		func(t *testing.T, ms []manifest) {
			if hasMount(container(agentDaemonSet(t, ms), "agent"), "device-plugins") {
				t.Error("the device-plugins folder is mounted without a device plugin")
			}
		}},
	{"gpunode's own device plugin is off by default: the agent only reads the device-plugins folder", ``,
		func(t *testing.T, ms []manifest) {
			c := container(agentDaemonSet(t, ms), "agent")
			if !mountReadOnly(c, "device-plugins") || slices.Contains(c.Args, "--device-plugin") || hasMount(c, "cdi-specs") {
				t.Errorf("args %v, mounts %+v: want a read-only device-plugins mount, no --device-plugin, no CDI folder", c.Args, c.VolumeMounts)
			}
		}},
	{"gpunode's own device plugin gets a writable device-plugins folder, its flags and its configuration",
		"devicePlugin: {enabled: false}\nagent:\n  devicePlugin:\n    enabled: true\n    strategy: envvar\n    config: |\n      version: v1\n      sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}\n",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			c := container(ds, "agent")
			if !hasMount(c, "device-plugins") || mountReadOnly(c, "device-plugins") {
				t.Errorf("mounts %+v: want the device-plugins folder writable", c.VolumeMounts)
			}
			for _, want := range []string{"--device-plugin", "--device-plugin-dir=/var/lib/kubelet/device-plugins", "--device-plugin-strategy=envvar",
				"--device-plugin-config=/etc/gpunode/device-plugin/config.yaml", "--cdi-spec-dir=none"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("agent args %v lack %s", c.Args, want)
				}
			}
			cm := find[*corev1.ConfigMap](ms, "ConfigMap", "gpunode-agent-device-plugin")
			if cm == nil || !strings.Contains(cm.Data["config.yaml"], "replicas: 4") {
				t.Fatalf("the device plugin ConfigMap is missing or lacks the configuration: %+v", cm)
			}
			if !mountReadOnly(c, "device-plugin-config") || ds.Spec.Template.Annotations["checksum/device-plugin-config"] == "" {
				t.Errorf("the configuration should be mounted read-only and checksummed into the pod: mounts %+v annotations %v",
					c.VolumeMounts, ds.Spec.Template.Annotations)
			}
			if hasMount(c, "cdi-specs") {
				t.Error("the envvar strategy should not mount the CDI spec folder")
			}
		}},
	{"gpunode's own device plugin with a CDI strategy writes the CDI spec into the host's folder",
		"agent: {devicePlugin: {enabled: true, strategy: cdi-cri}}",
		func(t *testing.T, ms []manifest) {
			c := container(agentDaemonSet(t, ms), "agent")
			if !hasMount(c, "cdi-specs") || mountReadOnly(c, "cdi-specs") || !slices.Contains(c.Args, "--cdi-spec-dir=/var/run/cdi") {
				t.Errorf("args %v, mounts %+v: want /var/run/cdi writable and passed", c.Args, c.VolumeMounts)
			}
			if find[*corev1.ConfigMap](ms, "ConfigMap", "gpunode-agent-device-plugin") != nil {
				t.Error("a ConfigMap is rendered without a configuration")
			}
		}},
	{"remediation through nsenter passes the commands to the agent and shares the host's PID namespace",
		"agent:\n  remediation:\n    resetCommand: [nvidia-smi, --gpu-reset, -i, \"{gpu}\"]\n" +
			"    rebootCommand: [nsenter, --target=1, --mount, --uts, --ipc, --net, --pid, --, systemctl, reboot]\n" +
			"    powerCycleCommand: [nsenter, --target=1, --mount, --, /usr/local/sbin/bmc-power-cycle]\n    hostPID: true\n",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			if !ds.Spec.Template.Spec.HostPID {
				t.Error("hostPID should be on for a reboot through nsenter --target=1")
			}
			c := container(ds, "agent")
			for _, want := range []string{"--reset-command=nvidia-smi,--gpu-reset,-i,{gpu}",
				"--reboot-command=nsenter,--target=1,--mount,--uts,--ipc,--net,--pid,--,systemctl,reboot",
				"--power-cycle-command=nsenter,--target=1,--mount,--,/usr/local/sbin/bmc-power-cycle"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("agent args %v lack %s", c.Args, want)
				}
			}
		}},
	{"without the exporter the agent serves no metrics and has no port 9400", "exporter: {enabled: false}",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			c := container(ds, "agent")
			if len(ds.Spec.Template.Spec.Containers) != 1 || c == nil {
				t.Fatalf("containers = %v, want only the agent", containerNames(ds))
			}
			if len(c.Ports) != 0 || !slices.Contains(c.Args, "--metrics-bind-address=0") {
				t.Errorf("ports %+v, args %v: want no port and --metrics-bind-address=0", c.Ports, c.Args)
			}
			if slices.Contains(kinds(ms), "Service/gpunode-exporter") {
				t.Error("the exporter's Service is rendered without the exporter")
			}
		}},
	{"a metrics port of its own moves the flag, the container port and the Service together", "exporter: {port: 9500}",
		func(t *testing.T, ms []manifest) {
			c := container(agentDaemonSet(t, ms), "agent")
			svc := find[*corev1.Service](ms, "Service", "gpunode-exporter")
			if !slices.Contains(c.Args, "--metrics-bind-address=:9500") || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9500 ||
				svc == nil || svc.Spec.Ports[0].Port != 9500 {
				t.Errorf("args %v, ports %+v, service %+v: want 9500 everywhere", c.Args, c.Ports, svc)
			}
		}},
	{"an agent that may not be privileged drops every capability and leaves the kernel log alone", "agent: {privileged: false}",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			for _, c := range ds.Spec.Template.Spec.Containers {
				sc := c.SecurityContext
				if sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container %s: security context %+v, want unprivileged with ALL dropped", c.Name, sc)
				}
				if hasMount(&c, "kmsg") {
					t.Errorf("container %s mounts /dev/kmsg, which it cannot open unprivileged", c.Name)
				}
			}
			if !slices.Contains(container(ds, "agent").Args, "--kernel-log=none") {
				t.Errorf("the agent should not follow the kernel log: %v", container(ds, "agent").Args)
			}
		}},
	{"the controller alone renders no DaemonSet, no agent RBAC and no admission policy",
		"agent: {enabled: false}",
		func(t *testing.T, ms []manifest) {
			for _, m := range ms {
				if m.u.GetKind() == "DaemonSet" || strings.Contains(m.u.GetName(), "agent") {
					t.Errorf("%s/%s is rendered without the agent", m.u.GetKind(), m.u.GetName())
				}
			}
		}},
	{"the agent alone renders no controller", "controller: {enabled: false}",
		func(t *testing.T, ms []manifest) {
			for _, m := range ms {
				if strings.Contains(m.u.GetName(), "controller") {
					t.Errorf("%s/%s is rendered without the controller", m.u.GetKind(), m.u.GetName())
				}
			}
			agentDaemonSet(t, ms)
		}},
}

func TestEachInstallModeRendersWhatItNeedsAndNothingElse(t *testing.T) {
	for _, mode := range installModes {
		t.Run(mode.name, func(t *testing.T) {
			ms := render(t, mode.values)
			if len(ms) == 0 {
				t.Fatal("the chart rendered nothing")
			}
			mode.check(t, ms)
		})
	}
}

func agentDaemonSet(t *testing.T, ms []manifest) *appsv1.DaemonSet {
	t.Helper()
	ds := find[*appsv1.DaemonSet](ms, "DaemonSet", "gpunode-agent")
	if ds == nil {
		t.Fatalf("no DaemonSet gpunode-agent among %v", kinds(ms))
	}
	return ds
}

func container(ds *appsv1.DaemonSet, name string) *corev1.Container {
	for i, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == name {
			return &ds.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

func containerNames(ds *appsv1.DaemonSet) []string {
	var out []string
	for _, c := range ds.Spec.Template.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

func hasMount(c *corev1.Container, volume string) bool {
	return c != nil && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume })
}

func mountReadOnly(c *corev1.Container, volume string) bool {
	return c != nil && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume && m.ReadOnly })
}

func hasEnv(c *corev1.Container, name string) bool {
	return c != nil && slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func envValue(c *corev1.Container, name string) string {
	if c == nil {
		return ""
	}
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
