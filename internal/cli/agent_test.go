package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAgentUsageErrorsExitTwoNamingTheProblem(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	cases := []struct {
		name     string
		args     []string
		inStderr []string
	}{
		{"no node name and no NODE_NAME", []string{"agent", "--sim", "h100x8"}, []string{"no node name: give --node-name or set NODE_NAME"}},
		{"an interval that is not positive", []string{"agent", "--node-name", "n1", "--interval", "0s"}, []string{"--interval 0s: must be positive"}},
		{"a kubeconfig file that does not exist", []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--kubeconfig", filepath.Join(t.TempDir(), "missing")},
			[]string{"--kubeconfig", "no such file"}},
		{"an unknown sim preset", []string{"agent", "--node-name", "n1", "--sim", "h900x8", "--kubeconfig", unreachableKubeconfig(t)},
			[]string{`unknown sim preset "h900x8"`}},
		{"an unknown device-plugin strategy", []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--kubeconfig", unreachableKubeconfig(t),
			"--device-plugin", "--device-plugin-strategy", "bogus"}, []string{"--device-plugin", "bogus"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, ExitUsage, nil, tc.inStderr)
		})
	}
}

// With the API server unreachable the agent keeps retrying with backoff and stops cleanly
// when its context ends: an outage is not an exit.
func TestTheAgentRetriesAnUnreachableAPIServerUntilStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Execute(ctx, []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--interval", "100ms",
		"--kubeconfig", unreachableKubeconfig(t), "--metrics-bind-address", "127.0.0.1:0"}, &out, &errOut)
	r := result{code: code, stdout: out.String(), stderr: errOut.String()}
	r.check(t, ExitOK, nil, []string{"publishing failed; retrying", "node=n1", `get node \"n1\"`})
	if n := bytes.Count(errOut.Bytes(), []byte("publishing failed; retrying")); n < 2 {
		t.Errorf("the agent tried %d times in 1.5 s, want retries:\n%s", n, r.stderr)
	}
}

// unreachableKubeconfig points at a port nothing listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "kubeconfig", `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: t}
`)
}

// With --device-plugin the agent also serves the kubelet device plugin: its socket appears in
// the device-plugins folder (the kubelet is absent here, so registration is retried) and is
// removed when the agent stops.
func TestTheAgentServesTheDevicePluginWhenAsked(t *testing.T) {
	dir, err := os.MkdirTemp("", "dp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- Execute(ctx, []string{"agent", "--node-name", "n1", "--sim", "h100x8", "--interval", "100ms",
			"--kubeconfig", unreachableKubeconfig(t), "--device-plugin", "--device-plugin-dir", dir, "--metrics-bind-address", "127.0.0.1:0"}, &out, &errOut)
	}()
	sock := filepath.Join(dir, "gpunode-gpu.sock")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no plugin socket %s within 10 s; stderr:\n%s", sock, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the plugin socket is left behind after the agent stopped (%v)", err)
	}
}
