// Command chart-readme writes the Helm chart's README.md from its Chart.yaml and the comments
// of its values.yaml, atomically: go run ./hack/chart-readme charts/gpunode
//
// Every value the chart takes gets an entry: its path, its default and the comment above it
// in values.yaml. An object the chart's values.schema.json lists the properties of is
// described key by key; any other object (resources, labels, a policy spec) is one value.
// Comment lines indented past the comment's own (an example) become a code block.
package main

//go:generate go run . ../../charts/gpunode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/atomicfile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chart-readme CHART_DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	out, err := readme(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-readme:", err)
		os.Exit(1)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "README.md"), out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "chart-readme:", err)
		os.Exit(1)
	}
}

// chartMeta is what the README takes from Chart.yaml.
type chartMeta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Version     string `yaml:"version"`
	AppVersion  string `yaml:"appVersion"`
	KubeVersion string `yaml:"kubeVersion"`
}

// readme renders the README of the chart in dir.
func readme(dir string) ([]byte, error) {
	var meta chartMeta
	if err := readYAML(filepath.Join(dir, "Chart.yaml"), &meta); err != nil {
		return nil, err
	}
	var values yaml.Node
	if err := readYAML(filepath.Join(dir, "values.yaml"), &values); err != nil {
		return nil, err
	}
	if values.Kind != yaml.DocumentNode || len(values.Content) != 1 || values.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping of values", filepath.Join(dir, "values.yaml"))
	}
	schemaText, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the chart's schema: %w", err)
	}
	var s schema
	if err := json.Unmarshal(schemaText, &s); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, "values.schema.json"), err)
	}
	var b bytes.Buffer
	writeHeader(&b, meta)
	if err := writeValues(&b, values.Content[0], &s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func readYAML(path string, into any) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the chart: %w", err)
	}
	if err := yaml.Unmarshal(text, into); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	return nil
}

func writeHeader(b *bytes.Buffer, meta chartMeta) {
	fmt.Fprintf(b, "# The %s Helm chart\n\n", meta.Name)
	b.WriteString("<!-- Generated from values.yaml by hack/chart-readme: edit the comments there, then run\n")
	b.WriteString("     go generate ./hack/chart-readme/ (a test fails while this file is stale). -->\n\n")
	fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(meta.Description))
	fmt.Fprintf(b, "Chart version %s, gpunode %s, Kubernetes %s.\n", meta.Version, meta.AppVersion, meta.KubeVersion)
	b.WriteString("Install modes, prerequisites and what each part may do: [docs/install.md](../../docs/install.md);\n")
	b.WriteString("the ServiceMonitor, alert rules and dashboard: [docs/monitoring.md](../../docs/monitoring.md).\n\n")
	b.WriteString("```sh\n")
	b.WriteString("helm install gpunode ./charts/gpunode --namespace gpunode-system --create-namespace \\\n")
	b.WriteString("  --set image.registry=registry.example.com --set mig.strategy=mixed\n")
	b.WriteString("```\n\n")
	b.WriteString("## Values\n\n")
	b.WriteString("Each value with its default; `values.schema.json` refuses a misspelt or mistyped one.\n")
}
