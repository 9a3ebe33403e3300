package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testOnly says why the package at path is test code that the shipped binary must not
// link, or "" when the binary may link it. envtest's packages, for one, create folders
// under /tmp when they are loaded: in a container with a read-only root the controller
// panicked before main.
func testOnly(path string) string {
	switch {
	case path == "testing":
		return "the standard library's test framework"
	case hasPathPrefix(path, "sigs.k8s.io/controller-runtime/pkg/envtest"):
		return "controller-runtime's test API server"
	case strings.Contains(path+"/", "/pkg/internal/testing/"):
		return "controller-runtime's internal test support (its addr package creates /tmp/kubebuilder-envtest when loaded)"
	case hasPathPrefix(path, "github.com/gpunode/gpunode/internal/testenv"):
		return "gpunode's API-server test harness"
	case hasPathPrefix(path, "sigs.k8s.io/controller-runtime/pkg/client/fake"),
		hasPathPrefix(path, "k8s.io/client-go/kubernetes/fake"):
		return "a fake client for tests"
	case hasPathPrefix(path, "github.com/onsi/ginkgo"), hasPathPrefix(path, "github.com/onsi/gomega"),
		hasPathPrefix(path, "github.com/stretchr/testify"):
		return "a test framework"
	}
	return ""
}

// hasPathPrefix says whether path is prefix or a package under it.
func hasPathPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// parseDeps reads `go list -deps -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}'`:
// each package with its direct imports, the listed package last.
func parseDeps(out []byte) (root string, imports map[string][]string) {
	imports = map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		root = f[0]
		imports[f[0]] = f[1:]
	}
	return root, imports
}

// importChain is the shortest chain of imports from root to target, both included, or
// nil when root does not import target.
func importChain(imports map[string][]string, root, target string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range imports[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// The shipped binary, as the image builds it (cgo on) and without cgo, links no test
// code: `go list -deps ./cmd/gpunode` names no test-only package.
func TestTheShippedBinaryLinksNoTestCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the binary's packages: %v", err)
	}
	for _, tc := range []struct {
		name string
		cgo  string
	}{
		{"The binary built with cgo, as the image is, links no test code.", "1"},
		{"The binary built without cgo links no test code.", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+tc.cgo)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps . (CGO_ENABLED=%s): %v\n%s", tc.cgo, err, stderr.String())
			}
			root, imports := parseDeps(out)
			if !strings.HasSuffix(root, "/cmd/gpunode") {
				t.Fatalf("go list -deps . listed %q last; want the gpunode command", root)
			}
			var bad []string
			for p := range imports {
				if testOnly(p) != "" {
					bad = append(bad, p)
				}
			}
			slices.Sort(bad)
			for _, p := range bad {
				t.Errorf("the binary links %s (%s): %s", p, testOnly(p), strings.Join(importChain(imports, root, p), " -> "))
			}
		})
	}
}

func TestTestOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		want bool
	}{
		{"envtest is test code.", "sigs.k8s.io/controller-runtime/pkg/envtest", true},
		{"A package under envtest is test code.", "sigs.k8s.io/controller-runtime/pkg/envtest/komega", true},
		{"Controller-runtime's internal testing packages are test code.", "sigs.k8s.io/controller-runtime/pkg/internal/testing/addr", true},
		{"gpunode's testenv is test code.", "github.com/gpunode/gpunode/internal/testenv", true},
		{"The standard library's testing package is test code.", "testing", true},
		{"The fake controller-runtime client is test code.", "sigs.k8s.io/controller-runtime/pkg/client/fake", true},
		{"The real controller-runtime client is not test code.", "sigs.k8s.io/controller-runtime/pkg/client", false},
		{"testing/fstest, an in-memory file system the simulated host uses, is not the test framework.", "testing/fstest", false},
		{"A package whose name only starts like envtest's is not under it.", "sigs.k8s.io/controller-runtime/pkg/envtestish", false},
		{"gpunode's own control plane runner is not test code.", "github.com/gpunode/gpunode/internal/simfleet/controlplane", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testOnly(tc.path) != ""; got != tc.want {
				t.Errorf("testOnly(%q) = %q; want test-only %v", tc.path, testOnly(tc.path), tc.want)
			}
		})
	}
}

func TestImportChain(t *testing.T) {
	imports := map[string][]string{
		"cmd":      {"cli", "fmt"},
		"cli":      {"simfleet", "agent"},
		"agent":    {"fmt"},
		"simfleet": {"envtest", "agent"},
		"envtest":  {"addr"},
	}
	for _, tc := range []struct {
		name   string
		target string
		want   []string
	}{
		{"A package imported through two others is reached through both.", "envtest", []string{"cmd", "cli", "simfleet", "envtest"}},
		{"The shortest chain is chosen when there are several.", "agent", []string{"cmd", "cli", "agent"}},
		{"A package imported directly is one step away.", "fmt", []string{"cmd", "fmt"}},
		{"A package not imported has no chain.", "testing", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importChain(imports, "cmd", tc.target); !slices.Equal(got, tc.want) {
				t.Errorf("importChain to %s = %v; want %v", tc.target, got, tc.want)
			}
		})
	}
}
