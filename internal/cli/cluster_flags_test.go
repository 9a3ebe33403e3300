package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAClusterCommandWithoutAClusterSaysWhatItLookedFor(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	for _, args := range [][]string{
		{"explain", "node", "gpu-1"},
		{"release", "gpu-1"},
		{"resume", "pool-a"},
	} {
		t.Run(args[0], func(t *testing.T) {
			execute(t, args...).check(t, ExitUsage, nil, []string{"no cluster to talk to: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not running in a pod"})
		})
	}
}

func TestTheContextFlagPicksAContextAsKubectlDoes(t *testing.T) {
	dir := t.TempDir()
	kc := writeFile(t, dir, "config", `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1"}
- name: b
  cluster: {server: "https://127.0.0.1:2"}
users:
- name: u
  user: {token: t}
contexts:
- name: first
  context: {cluster: a, user: u}
- name: second
  context: {cluster: b, user: u}
current-context: first
`)
	cases := []struct {
		name    string
		flags   clusterFlags
		want    string
		wantErr string
	}{
		{"no --context uses the current context", clusterFlags{kubeconfig: kc}, "https://127.0.0.1:1", ""},
		{"--context picks another", clusterFlags{kubeconfig: kc, context: "second"}, "https://127.0.0.1:2", ""},
		{"an unknown context is refused naming it", clusterFlags{kubeconfig: kc, context: "third"}, "", `"third"`},
		{"a missing file is refused naming it", clusterFlags{kubeconfig: filepath.Join(dir, "missing")}, "", "--kubeconfig " + filepath.Join(dir, "missing")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := c.flags.restConfig()
			if c.wantErr != "" {
				if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v (exit %d), want a usage error naming %s", err, exitCode(err), c.wantErr)
				}
				return
			}
			if err != nil || cfg.Host != c.want {
				t.Fatalf("host %v, err %v; want %s", cfg, err, c.want)
			}
		})
	}
}
