package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startSimAgent runs `gpunode agent --sim h100x8` as node n1 with its state in stateDir
// and extra flags until the test ends; the API server is unreachable, which the agent
// retries. It returns the agent's stderr and a function that stops it and returns its exit
// code.
func startSimAgent(t *testing.T, stateDir string, extra ...string) (*lockedBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errOut lockedBuffer
	args := append([]string{"agent", "--sim", "h100x8", "--node-name", "n1", "--interval", "100ms",
		"--kubeconfig", unreachableKubeconfig(t), "--state-dir", stateDir, "--pod-resources-socket", "", "--metrics-bind-address", "127.0.0.1:0"}, extra...)
	go func() { done <- Execute(ctx, args, &out, &errOut) }()
	code, stopped := 0, false
	stop := func() int {
		if !stopped {
			cancel()
			code, stopped = <-done, true
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return &errOut, stop
}

// waitForFile waits up to 10 s for path to exist.
func waitForFile(t *testing.T, path string, errOut *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s; the agent's stderr:\n%s", path, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `gpunode sim inject --socket` reaches an agent on simulated GPUs over its real unix
// socket, as `kubectl exec POD -c agent -- gpunode sim inject ...` does in a cluster.
func TestSimInjectReachesAnAgentOnSimulatedGPUsThroughItsSocket(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "sim.sock")
	errOut, stop := startSimAgent(t, dir, "--health-probe-bind-address", "")
	waitForFile(t, sock, errOut)
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
	}{
		{"an xid on one of its GPUs is injected", []string{"n1", "--socket", sock, "--gpu", "0", "--xid", "79"}, ExitOK,
			[]string{"injected xid 79 on GPU 0 of n1 at ", "watch it: gpunode explain node n1"}, nil},
		{"another node is not the agent's", []string{"n2", "--socket", sock, "--gpu", "0", "--xid", "79"}, ExitFail,
			nil, []string{`"n2" (this agent's node is n1)`}},
		{"a GPU the node does not have is bad usage", []string{"n1", "--socket", sock, "--gpu", "9", "--xid", "79"}, ExitUsage,
			nil, []string{"invalid fault"}},
		{"a socket and a fleet's state folder together are bad usage", []string{"n1", "--socket", sock, "--state-dir", dir, "--gpu", "0", "--xid", "79"}, ExitUsage,
			nil, []string{"--socket and --state-dir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, append([]string{"sim", "inject"}, tc.args...)...).check(t, tc.code, tc.inStdout, tc.inStderr)
		})
	}
	if code := stop(); code != ExitOK {
		t.Fatalf("the agent exited %d:\n%s", code, errOut.String())
	}
	for _, s := range []string{"fault injected", "node=n1", "gpu=0", "xid=79"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("the agent's log lacks %q:\n%s", s, errOut.String())
		}
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket remains after the agent stopped: %v", err)
	}
	execute(t, "sim", "inject", "n1", "--socket", sock, "--gpu", "0", "--xid", "79").
		check(t, ExitFail, nil, []string{sock, "an agent serves it only on simulated GPUs"})
}

func TestTheSimControlSocketFlag(t *testing.T) {
	dir := shortTempDir(t)
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr []string
	}{
		{"a socket without simulated GPUs is bad usage", []string{"agent", "--node-name", "n1", "--sim-control-socket", filepath.Join(dir, "x.sock")},
			ExitUsage, []string{"--sim-control-socket", "needs --sim"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, tc.code, nil, tc.inStderr)
		})
	}
	t.Run("an empty socket serves none", func(t *testing.T) {
		errOut, stop := startSimAgent(t, dir, "--sim-control-socket", "", "--health-probe-bind-address", "")
		time.Sleep(300 * time.Millisecond)
		if code := stop(); code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, errOut.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "sim.sock")); !errors.Is(err, os.ErrNotExist) || strings.Contains(errOut.String(), "fault injection served") {
			t.Errorf("a socket was served with --sim-control-socket \"\" (%v):\n%s", err, errOut.String())
		}
	})
	t.Run("a given path is served there", func(t *testing.T) {
		sock := filepath.Join(dir, "other.sock")
		errOut, _ := startSimAgent(t, dir, "--sim-control-socket", sock, "--health-probe-bind-address", "")
		waitForFile(t, sock, errOut)
	})
}
