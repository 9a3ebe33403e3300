package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// helm lint --strict passes the chart with no warning (an [INFO] is a suggestion: the chart
// has no icon, which would be a link outside the repository).
func TestHelmLintPassesTheChartStrictly(t *testing.T) {
	out, errOut, err := runHelm(t, "lint", "--strict", chartDir, "--kube-version", strings.TrimPrefix(kubeVersion, "v"))
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
		t.Errorf("helm lint did not lint the chart:\n%s", out)
	}
	for _, bad := range []string{"[WARNING]", "[ERROR]"} {
		if strings.Contains(out, bad) {
			t.Errorf("helm lint reports %s:\n%s", bad, out)
		}
	}
}

// helm package makes the archive users install, and it holds the whole chart: it renders
// what the folder renders, and its README and values are the repository's.
func TestHelmPackageMakesAnArchiveThatRendersAsTheFolderDoes(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := runHelm(t, "package", chartDir, "--destination", dir)
	if err != nil {
		t.Fatalf("helm package: %v\n%s", err, errOut)
	}
	archive := filepath.Join(dir, "gpunode-0.1.0.tgz")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("helm package said %q but made no %s: %v", out, archive, err)
	}
	for _, f := range []struct{ what, file string }{{"readme", "README.md"}, {"values", "values.yaml"}} {
		shown, errOut, err := runHelm(t, "show", f.what, archive)
		if err != nil {
			t.Fatalf("helm show %s: %v\n%s", f.what, err, errOut)
		}
		want, err := os.ReadFile(filepath.Join(chartDir, f.file))
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(shown) != strings.TrimSpace(string(want)) {
			t.Errorf("the archive's %s is not the chart's %s", f.what, f.file)
		}
	}
	args := []string{"--set", "exporter.serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true", "--set", "grafanaDashboard.enabled=true"}
	fromDir, _, err := runHelm(t, templateArgs(args...)...)
	if err != nil {
		t.Fatal(err)
	}
	fromArchive, errOut, err := runHelm(t, append([]string{"template", releaseName, archive, "--namespace", namespace,
		"--kube-version", strings.TrimPrefix(kubeVersion, "v")}, args...)...)
	if err != nil {
		t.Fatalf("helm template of the archive: %v\n%s", err, errOut)
	}
	if fromArchive != fromDir || !strings.Contains(fromArchive, "kind: PrometheusRule") {
		t.Error("the packaged chart renders otherwise than its folder (a file left out of the archive?)")
	}
}
