package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/gpu/sim"
)

// simScenarioPath is where the chart mounts agent.simScenario (the ConfigMap gpunode-agent-sim).
const simScenarioPath = "/etc/gpunode/sim/scenario.yaml"

// The scenario of the install mode below: examples/scenarios/h100x8-xid79.yaml, indented
// under agent.simScenario.
var simScenarioValues = func() string {
	b, err := os.ReadFile("../../examples/scenarios/h100x8-xid79.yaml")
	if err != nil {
		panic(err) // the example is part of the repository
	}
	return "agent:\n  simScenario: |\n    " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n    ") + "\n"
}()

// simModes run the agent on simulated GPUs (--sim), on a cluster that may
// have neither GPUs nor the NVIDIA container runtime.
var simModes = []installMode{
	{"simulated GPUs from a preset need neither the NVIDIA runtime nor the host's kernel log",
		"agent: {sim: h100x8}",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			checkSimulated(t, ds, "h100x8")
			if slices.Contains(container(ds, "agent").Args, "--host-root=/host") || hasMount(container(ds, "agent"), "host-root") {
				t.Errorf("a simulated host should not read the real one: args %v", container(ds, "agent").Args)
			}
			if find[*corev1.ConfigMap](ms, "ConfigMap", "gpunode-agent-sim") != nil {
				t.Error("a preset needs no scenario ConfigMap")
			}
		}},
	{"simulated GPUs on an unprivileged agent still follow the simulated kernel log",
		"agent: {privileged: false, sim: h200x1}",
		func(t *testing.T, ms []manifest) { checkSimulated(t, agentDaemonSet(t, ms), "h200x1") }},
	{"simulated GPUs on the real host read the host's facts through the host root",
		"agent: {sim: b200x8, simHost: real}",
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			checkSimulated(t, ds, "b200x8")
			if c := container(ds, "agent"); !slices.Contains(c.Args, "--host-root=/host") || !mountReadOnly(c, "host-root") {
				t.Errorf("args %v, mounts %+v: want the real host's root read-only at /host", c.Args, c.VolumeMounts)
			}
		}},
	{"simulated GPUs from a scenario read it from a ConfigMap mounted into the agent",
		simScenarioValues,
		func(t *testing.T, ms []manifest) {
			ds := agentDaemonSet(t, ms)
			checkSimulated(t, ds, simScenarioPath)
			cm := find[*corev1.ConfigMap](ms, "ConfigMap", "gpunode-agent-sim")
			if cm == nil {
				t.Fatalf("no ConfigMap gpunode-agent-sim among %v", kinds(ms))
			}
			if _, err := sim.Parse("scenario.yaml", []byte(cm.Data["scenario.yaml"])); err != nil {
				t.Errorf("the simulator refuses the rendered scenario: %v\n%s", err, cm.Data["scenario.yaml"])
			}
			for _, name := range []string{"agent"} {
				c := container(ds, name)
				if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == "sim-scenario" && m.ReadOnly && m.MountPath == filepath.Dir(simScenarioPath)
				}) {
					t.Errorf("container %s: mounts %+v, want the scenario read-only at %s", name, c.VolumeMounts, filepath.Dir(simScenarioPath))
				}
			}
			if ds.Spec.Template.Annotations["checksum/sim-scenario"] == "" {
				t.Error("a changed scenario should roll the pods (checksum/sim-scenario)")
			}
		}},
}

// checkSimulated checks that the agent (the pod's one container) runs on the simulated GPUs of
// presetOrFile, with the simulator's own kernel log, without the NVIDIA runtime.
func checkSimulated(t *testing.T, ds *appsv1.DaemonSet, presetOrFile string) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	if pod.RuntimeClassName != nil {
		t.Errorf("runtimeClassName = %q: simulated GPUs need no NVIDIA runtime", *pod.RuntimeClassName)
	}
	if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "kmsg" }) {
		t.Error("the host's /dev/kmsg is mounted for simulated GPUs")
	}
	if names := containerNames(ds); len(names) != 1 {
		t.Errorf("containers %v: want the agent alone", names)
	}
	for _, name := range []string{"agent"} {
		c := container(ds, name)
		if c == nil {
			t.Fatalf("no %s container among %v", name, containerNames(ds))
		}
		if got := flagValue(t, c, "sim"); got != presetOrFile {
			t.Errorf("container %s: --sim %q, want %q (args %v)", name, got, presetOrFile, c.Args)
		}
		// The agent follows the simulator's kernel log only while
		// --kernel-log keeps its default (/dev/kmsg); "none" would turn it off.
		if got, def := flagValue(t, c, "kernel-log"), flagDefault(t, c, "kernel-log"); got != def {
			t.Errorf("container %s: --kernel-log=%s, want the default %s (the simulated kernel log)", name, got, def)
		}
		if hasMount(c, "kmsg") || hasEnv(c, "NVIDIA_VISIBLE_DEVICES") || hasEnv(c, "NVIDIA_DRIVER_CAPABILITIES") {
			t.Errorf("container %s: mounts %+v env %+v: simulated GPUs need neither /dev/kmsg nor the NVIDIA runtime's variables",
				name, c.VolumeMounts, c.Env)
		}
	}
}

func TestRealGPUsAreTheDefault(t *testing.T) {
	ds := agentDaemonSet(t, render(t, ""))
	for _, name := range []string{"agent"} {
		c := container(ds, name)
		if got := flagValue(t, c, "sim"); got != "" {
			t.Errorf("container %s runs on simulated GPUs (--sim %s) by default", name, got)
		}
		if got := flagValue(t, c, "kernel-log"); got != "/dev/kmsg" {
			t.Errorf("container %s: --kernel-log=%s, want /dev/kmsg", name, got)
		}
		if envValue(c, "NVIDIA_VISIBLE_DEVICES") != "all" {
			t.Errorf("container %s: NVIDIA_VISIBLE_DEVICES should be all for the NVIDIA runtime: %+v", name, c.Env)
		}
	}
	if c := container(ds, "agent"); !slices.Contains(c.Args, "--host-root=/host") {
		t.Errorf("agent args %v lack --host-root=/host", c.Args)
	}
}

// The schema's list of presets is the simulator's: a preset added to internal/gpu/sim is
// accepted by the chart, and a misspelt one is refused at install, not in a crash loop.
func TestTheSchemaAcceptsExactlyTheSimulatorsPresets(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Agent struct {
				Properties struct {
					Sim struct {
						Enum []string `json:"enum"`
					} `json:"sim"`
				} `json:"properties"`
			} `json:"agent"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("parsing values.schema.json: %v", err)
	}
	got := schema.Properties.Agent.Properties.Sim.Enum
	if want := append([]string{""}, sim.Presets()...); !slices.Equal(got, want) {
		t.Errorf("agent.sim enum = %q, want %q (\"\" and internal/gpu/sim's presets)", got, want)
	}
}

// flagValue is the value container c's gpunode command gives flag name, after its args.
func flagValue(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	return parsedFlag(t, c, name, false)
}

func flagDefault(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	return parsedFlag(t, c, name, true)
}

func parsedFlag(t *testing.T, c *corev1.Container, name string, defValue bool) string {
	t.Helper()
	cmd, rest, err := cli.NewRootCommand().Find(c.Args)
	if err != nil {
		t.Fatalf("container %s: %v names no gpunode command: %v", c.Name, c.Args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("container %s: gpunode %s refuses %v: %v", c.Name, cmd.Name(), rest, err)
	}
	f := cmd.Flags().Lookup(name)
	if f == nil {
		t.Fatalf("container %s: gpunode %s has no --%s", c.Name, cmd.Name(), name)
	}
	if defValue {
		return f.DefValue
	}
	return f.Value.String()
}
