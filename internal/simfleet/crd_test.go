package simfleet

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The embedded CRDs are copies of the generated ones in config/crd: if controller-gen
// regenerates one, this test fails until the copy is refreshed.
func TestTheEmbeddedCRDsAreIdenticalToTheGeneratedOnes(t *testing.T) {
	const fix = "cp config/crd/*.yaml internal/simfleet/crd/"
	generated, err := filepath.Glob("../../config/crd/*.yaml")
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRDs in config/crd (%v)", err)
	}
	embedded, err := crdFiles.ReadDir("crd")
	if err != nil {
		t.Fatal(err)
	}
	var gotNames, wantNames []string
	for _, e := range embedded {
		gotNames = append(gotNames, e.Name())
	}
	for _, g := range generated {
		wantNames = append(wantNames, filepath.Base(g))
	}
	if !slices.Equal(gotNames, wantNames) {
		t.Fatalf("embedded CRD files %v, generated %v: %s", gotNames, wantNames, fix)
	}
	for _, g := range generated {
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := crdFiles.ReadFile("crd/" + filepath.Base(g))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("internal/simfleet/crd/%s differs from config/crd: %s", filepath.Base(g), fix)
		}
	}
}

func TestEveryEmbeddedCRDDecodesIntoGpunodesGroup(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range crds {
		if c.Spec.Group != "gpunode.dev" {
			t.Errorf("CRD %s has group %q", c.Name, c.Spec.Group)
		}
		kinds = append(kinds, c.Spec.Names.Kind)
	}
	slices.Sort(kinds)
	if want := []string{"AcceptanceRecord", "GPUNode", "GPUNodePolicy", "PerformanceBaseline", "StackPool"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}
