package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// result is what one gpunode invocation did.
type result struct {
	code           int
	stdout, stderr string
}

// execute runs gpunode with args, as the binary would, with stdout and stderr captured
// (both pipes, not terminals).
func execute(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// writeFile writes content into dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return path
}

// check compares a result with the wanted exit code and the texts stdout and stderr must hold.
func (r result) check(t *testing.T, code int, inStdout, inStderr []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range inStdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	for _, s := range inStderr {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

// Scenario files with a fault on GPU 2 of an h100x8 from the start (at 0s).
const (
	scenarioXID79 = `apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - at: 0s
    gpu: 2
    type: xid
    xid: 79
`
	scenarioRowRemap = `apiVersion: gpunode.dev/sim/v1
preset: h100x8
faults:
  - gpu: 2
    type: row-remap-pending
`
)
