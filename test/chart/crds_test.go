package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The chart's crds/ are copies of the generated CRDs in config/crd: if controller-gen
// regenerates one, this test fails until the copy is refreshed
// (cp config/crd/*.yaml charts/gpunode/crds/).
func TestTheChartsCRDsAreIdenticalToTheGeneratedOnes(t *testing.T) {
	generatedDir, chartCRDDir := "../../config/crd", filepath.Join(chartDir, "crds")
	generated, copied := crdFiles(t, generatedDir), crdFiles(t, chartCRDDir)
	if len(generated) == 0 {
		t.Fatalf("no CRDs in %s", generatedDir)
	}
	if !slices.Equal(generated, copied) {
		t.Fatalf("the chart's CRD files %v are not the generated ones %v: cp config/crd/*.yaml charts/gpunode/crds/", copied, generated)
	}
	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join(generatedDir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartCRDDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/gpunode/crds/%s differs from config/crd/%s: cp config/crd/*.yaml charts/gpunode/crds/", name, name)
		}
	}
}

// Helm installs crds/ before the templates; the loader must see every CRD there.
func TestHelmLoadsEveryCRDOfTheChart(t *testing.T) {
	c := loadChart(t)
	var got []string
	for _, f := range c.CRDObjects() {
		got = append(got, filepath.Base(f.Filename))
	}
	slices.Sort(got)
	if want := crdFiles(t, "../../config/crd"); !slices.Equal(got, want) {
		t.Fatalf("Helm loads the CRDs %v, want %v", got, want)
	}
}

// kubectl looks a name up among resources' plural, singular and short names before it
// tries categories: a category named like a resource shadows it, and `kubectl get gpunode
// NAME` then fails with "you must specify only one resource" (the category gpunode did).
// No CRD of the chart may have a category that is any CRD's plural, singular, short name or
// kind.
func TestNoCRDCategoryShadowsAResourceName(t *testing.T) {
	dir := filepath.Join(chartDir, "crds")
	var crds []apiextensionsv1.CustomResourceDefinition
	names := map[string]string{} // resource name, lower case -> the CRD it names
	for _, file := range crdFiles(t, dir) {
		var crd apiextensionsv1.CustomResourceDefinition
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		crds = append(crds, crd)
		n := crd.Spec.Names
		for _, name := range append([]string{n.Plural, n.Singular, n.Kind}, n.ShortNames...) {
			names[strings.ToLower(name)] = crd.Name
		}
	}
	if len(crds) == 0 {
		t.Fatalf("no CRDs in %s", dir)
	}
	for _, crd := range crds {
		if len(crd.Spec.Names.Categories) == 0 {
			t.Errorf("%s has no category: `kubectl get gpu` should list it with the others", crd.Name)
		}
		for _, category := range crd.Spec.Names.Categories {
			if other, ok := names[strings.ToLower(category)]; ok {
				t.Errorf("%s's category %q is also a resource name of %s: kubectl would take it for that resource", crd.Name, category, other)
			}
		}
	}
}
