package chart_test

import (
	"slices"
	"testing"

	"github.com/gpunode/gpunode/internal/cli"
)

// The remediation commands in the values reach the agent as the same argument lists: the
// chart joins them into one flag and the agent's real flag parser splits them again.
func TestTheRemediationCommandsReachTheAgentArgumentForArgument(t *testing.T) {
	reboot := []string{"nsenter", "--target=1", "--mount", "--uts", "--ipc", "--net", "--pid", "--", "systemctl", "reboot"}
	reset := []string{"/usr/bin/nvidia-smi", "--gpu-reset", "--id={gpu}"}
	tests := []struct {
		name   string
		values string
		want   map[string][]string
	}{
		{"the defaults pass no command: resets use nvidia-smi, reboots and power cycles are refused", ``,
			map[string][]string{"reset-command": {}, "reboot-command": {}, "power-cycle-command": {}}},
		{"configured commands arrive unchanged",
			"agent:\n  remediation:\n    resetCommand: [/usr/bin/nvidia-smi, --gpu-reset, \"--id={gpu}\"]\n" +
				"    rebootCommand: [nsenter, --target=1, --mount, --uts, --ipc, --net, --pid, --, systemctl, reboot]\n    hostPID: true\n",
			map[string][]string{"reset-command": reset, "reboot-command": reboot, "power-cycle-command": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := container(agentDaemonSet(t, render(t, tt.values)), "agent")
			cmd, rest, err := cli.NewRootCommand().Find(c.Args)
			if err != nil {
				t.Fatalf("agent args %v: %v", c.Args, err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("gpunode agent refuses %v: %v", rest, err)
			}
			for flag, want := range tt.want {
				got, err := cmd.Flags().GetStringSlice(flag)
				if err != nil {
					t.Fatalf("--%s: %v", flag, err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
			if got, _ := cmd.Flags().GetString("state-dir"); got != "/var/lib/gpunode" {
				t.Errorf("--state-dir = %q, want the mounted state folder /var/lib/gpunode", got)
			}
		})
	}
}
