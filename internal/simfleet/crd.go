package simfleet

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// crdFiles are copies of config/crd (a test keeps them identical), so that the binary
// installs its CRDs wherever it runs.
//
//go:embed crd/*.yaml
var crdFiles embed.FS

// CRDs decodes the embedded CustomResourceDefinitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crdFiles, "crd/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing the embedded CRDs: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		b, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading the embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(crd); err != nil {
			return nil, fmt.Errorf("decoding the embedded CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs embedded under crd/")
	}
	return out, nil
}
