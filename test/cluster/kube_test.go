package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inCluster runs a command inside the cluster's namespaces (hack/cluster-exec.sh: kubectl,
// helm and ctr on PATH, KUBECONFIG the admin's) from the repository's root, and returns its
// standard output; the error carries its standard error.
func inCluster(ctx context.Context, name string, args ...string) (string, error) {
	return inClusterStdin(ctx, "", name, args...)
}

// inClusterStdin is inCluster with stdin (kubectl apply -f -).
func inClusterStdin(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(repoRoot, "hack/cluster-exec.sh"), name}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CLUSTER_STATE="+env.state)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// kubectl runs kubectl in the cluster and fails the test when it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := inCluster(t.Context(), "kubectl", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// getJSON decodes `kubectl get ARGS -o json` into v; kubectl's failure (not found) is the error.
func getJSON(ctx context.Context, v any, args ...string) error {
	out, err := inCluster(ctx, "kubectl", append(append([]string{"get"}, args...), "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// waitFor polls check every second until it says done, and fails the test with check's
// last word after timeout. Timeouts are generous: CI machines are busy, and what a test
// asserts is the state, not how fast it came.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		done, why := check()
		if done {
			return
		}
		if why != last {
			t.Logf("waiting for %s: %s", what, why)
			last = why
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, timeout, why)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(time.Second):
		}
	}
}

// docCommands are the shell commands of the fenced block that follows the marker
// `<!-- cluster-test: NAME -->` in docs/install.md: the commands the tests run are the
// ones the page shows.
func docCommands(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "docs/install.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	marker := "<!-- cluster-test: " + name + " -->"
	var block strings.Builder
	state := 0 // 0 looking for the marker, 1 for the fence, 2 inside
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(line) == marker:
			state = 1
		case state == 1 && strings.HasPrefix(line, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return block.String()
		case state == 2:
			block.WriteString(line + "\n")
		}
	}
	t.Fatalf("docs/install.md has no fenced block after %q", marker)
	return ""
}

// runDocs runs the commands docs/install.md shows under the marker NAME, in the cluster.
func runDocs(t *testing.T, name string) string {
	t.Helper()
	cmds := docCommands(t, name)
	t.Logf("docs/install.md (%s):\n%s", name, cmds)
	out, err := inCluster(t.Context(), "bash", "-euo", "pipefail", "-c", cmds)
	if err != nil {
		t.Fatalf("the commands of docs/install.md (%s) failed: %v\n%s", name, err, out)
	}
	return out
}
