package chart_test

import (
	"slices"
	"strings"
	"testing"
)

// mixedPluginConfig is a values file whose device plugin configuration asks for mixed.
const mixedPluginConfig = "agent:\n  devicePlugin:\n    config: |\n      version: v1\n      flags:\n        migStrategy: mixed\n"

// mig.strategy, as GPU Operator users type it, reaches the agent as --mig-strategy in both
// device-plugin modes (NVIDIA's plugin and the agent's own).
func TestTheMIGStrategyReachesTheAgentInEveryDevicePluginMode(t *testing.T) {
	pluginConfig := valuesFile(t, mixedPluginConfig)
	cases := []struct {
		name string
		args []string
		want string // the agent's --mig-strategy argument; "" for none
	}{
		{"by default the agent takes no MIG strategy and labels none", nil, ""},
		{"beside NVIDIA's device plugin the strategy reaches the agent's labels",
			[]string{"--set", "mig.strategy=mixed"}, "--mig-strategy=mixed"},
		{"with the agent's own device plugin the strategy reaches the plugin",
			[]string{"--set", "mig.strategy=single", "--set", "devicePlugin.enabled=false", "--set", "agent.devicePlugin.enabled=true"}, "--mig-strategy=single"},
		{"a device plugin configuration that agrees with the strategy is accepted",
			[]string{"--set", "mig.strategy=mixed", "--set", "agent.devicePlugin.enabled=true", "-f", pluginConfig}, "--mig-strategy=mixed"},
		{"with simulated GPUs the strategy reaches the agent too",
			[]string{"--set", "mig.strategy=none", "--set", "agent.sim=h100x8"}, "--mig-strategy=none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := container(agentDaemonSet(t, helmTemplate(t, tc.args...)), "agent").Args
			got := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--mig-strategy") })
			switch {
			case tc.want == "" && got >= 0:
				t.Errorf("the agent gets %s; want no --mig-strategy", args[got])
			case tc.want != "" && !slices.Contains(args, tc.want):
				t.Errorf("the agent's args %v lack %s", args, tc.want)
			}
		})
	}
}

func TestAMIGStrategyTheChartCannotServeIsRefusedNamingIt(t *testing.T) {
	pluginConfig := valuesFile(t, mixedPluginConfig)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"an unknown strategy is refused by the schema", []string{"--set", "mig.strategy=split"},
			[]string{"values don't meet the specifications of the schema", "'/mig/strategy'"}},
		{"a strategy that the device plugin configuration contradicts is refused",
			[]string{"--set", "mig.strategy=single", "--set", "agent.devicePlugin.enabled=true", "-f", pluginConfig},
			[]string{"mig.strategy single and agent.devicePlugin.config's flags.migStrategy mixed disagree"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := helmTemplateFails(t, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("helm's refusal does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
