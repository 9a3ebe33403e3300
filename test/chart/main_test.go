// Package chart_test tests the Helm chart in charts/gpunode: it renders the chart with Helm's
// own Go packages for each install mode, decodes every manifest strictly, applies them with
// server-side dry-run to a real kube-apiserver, and proves the admission policy that keeps
// the agent to its own node.
package chart_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/testenv"
)

// One API server for the package's integration tests, stopped after the last test.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

const (
	chartDir    = "../../charts/gpunode"
	releaseName = "gpunode"
	namespace   = "gpunode-system"
	// kubeVersion is the version of the test API server (hack/k8s-test-assets.sh).
	kubeVersion = "v1.37.2"
	agentUser   = "system:serviceaccount:gpunode-system:gpunode-agent"
	controlUser = "system:serviceaccount:gpunode-system:gpunode-controller"
)

// manifest is one rendered object: as the API server gets it, and decoded strictly into
// its Go type (an unknown or misplaced field fails the decode).
type manifest struct {
	source string
	u      *unstructured.Unstructured
	typed  runtime.Object
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart from %s: %v", chartDir, err)
	}
	return c
}

// render renders the chart's templates with values (YAML, over the chart's defaults) as
// `helm install gpunode -n gpunode-system` would, and decodes every manifest.
func render(t *testing.T, values string) []manifest {
	t.Helper()
	ms, err := renderChart(loadChart(t), values)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func renderChart(c *chart.Chart, values string) ([]manifest, error) {
	var overrides map[string]any
	if err := yaml.Unmarshal([]byte(values), &overrides); err != nil {
		return nil, fmt.Errorf("parsing the test's values %q: %w", values, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: kubeVersion, Major: "1", Minor: "37"}
	vals, err := chartutil.ToRenderValues(c, overrides,
		chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, fmt.Errorf("values %q: %w", values, err)
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart with values %q: %w", values, err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []manifest
	for _, name := range names {
		ms, err := decodeManifests(name, files[name])
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// strict decodes into the built-in Go types and gpunode's (a GPUNodePolicy the chart
// renders) and refuses unknown and duplicate fields.
var strict = sync.OnceValues(func() (runtime.Decoder, error) {
	s, err := testenv.Scheme()
	if err != nil {
		return nil, err
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer(), nil
})

func decodeManifests(source, text string) ([]manifest, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var out []manifest
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", source, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("parsing %s: %w\n%s", source, err, doc)
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion, kind or name:\n%s", source, doc)
		}
		if u.GroupVersionKind().Group == monitoringGroup {
			// The Prometheus Operator's kinds are not in the scheme: monitoring_test.go checks them.
			out = append(out, manifest{source: source, u: u})
			continue
		}
		decoder, err := strict()
		if err != nil {
			return nil, err
		}
		typed, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s %s/%s strictly: %w", source, u.GetKind(), u.GetName(), err)
		}
		out = append(out, manifest{source: source, u: u, typed: typed})
	}
}

func stripComments(doc []byte) []byte {
	var keep [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			keep = append(keep, line)
		}
	}
	return bytes.Join(keep, []byte("\n"))
}

// find returns the rendered object of kind and name, decoded into T, or nil.
func find[T runtime.Object](ms []manifest, kind, name string) T {
	var zero T
	for _, m := range ms {
		if m.u.GetKind() == kind && m.u.GetName() == name {
			if typed, ok := m.typed.(T); ok {
				return typed
			}
		}
	}
	return zero
}

func kinds(ms []manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.u.GetKind()+"/"+m.u.GetName())
	}
	return out
}

// crdFiles lists the CRD files in dir, by name.
func crdFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}
