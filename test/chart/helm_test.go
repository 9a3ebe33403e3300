package chart_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmTimeout bounds one run of the helm binary: rendering takes well under a second, and a
// busy machine many times that.
const helmTimeout = 2 * time.Minute

// helmBinary is the real helm the tests run: GPUNODE_HELM (hack/helm.sh builds it and prints
// its path), else the real-cluster tier's (GPUNODE_CLUSTER_ASSETS/bin/helm). Without either
// the test is skipped with the reason, except under CI=true, where it fails.
func helmBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("GPUNODE_HELM")
	if path == "" {
		if assets := os.Getenv("GPUNODE_CLUSTER_ASSETS"); assets != "" {
			path = filepath.Join(assets, "bin", "helm")
		}
	}
	if path == "" {
		reason := "no helm binary: export GPUNODE_HELM=$(bash hack/helm.sh)"
		if os.Getenv("CI") == "true" {
			t.Fatal(reason + " (CI=true: the helm tests must run, not skip)")
		}
		t.Skip(reason)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the helm binary %s: %v", path, err)
	}
	return path
}

// runHelm runs helm with args in the test's own Helm home (no repositories, no plugins, no
// cache of the user's) and returns its stdout and stderr.
func runHelm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := helmBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), helmTimeout)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// helmTemplate renders the chart with the real `helm template gpunode charts/gpunode -n
// gpunode-system` and the given arguments (--set ..., -f FILE), and decodes every manifest
// strictly.
func helmTemplate(t *testing.T, args ...string) []manifest {
	t.Helper()
	out, errOut, err := runHelm(t, templateArgs(args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	ms, err := decodeManifests("helm template "+strings.Join(args, " "), out)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// helmTemplateFails renders with args and returns helm's error output; it fails t when the
// render succeeds.
func helmTemplateFails(t *testing.T, args ...string) string {
	t.Helper()
	_, errOut, err := runHelm(t, templateArgs(args...)...)
	if err == nil {
		t.Fatalf("helm template %s succeeded; want it refused", strings.Join(args, " "))
	}
	return errOut
}

func templateArgs(args ...string) []string {
	return append([]string{"template", releaseName, chartDir, "--namespace", namespace,
		"--kube-version", strings.TrimPrefix(kubeVersion, "v")}, args...)
}

// valuesFile writes values (YAML) to a file for helm's -f.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
