package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
