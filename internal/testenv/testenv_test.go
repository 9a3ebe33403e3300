package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTheCRDDirectoryIsFoundFromAPackageFolderAndHoldsEveryKind(t *testing.T) {
	dir, err := crdDirectory()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != "crd" || filepath.Base(filepath.Dir(dir)) != "config" {
		t.Fatalf("crdDirectory() = %s, want .../config/crd", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"gpunode.dev_gpunodes.yaml", "gpunode.dev_gpunodepolicies.yaml", "gpunode.dev_acceptancerecords.yaml"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s holds %v, want %s among them", dir, names, want)
		}
	}
}

func TestTheTestSchemeKnowsGPUNodesAndCRDs(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"GPUNode", "GPUNodePolicy", "AcceptanceRecord"} {
		if !s.Recognizes(schemaGVK("gpunode.dev", "v1alpha1", kind)) {
			t.Errorf("the scheme does not know gpunode.dev/v1alpha1 %s", kind)
		}
	}
	if !s.Recognizes(schemaGVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")) {
		t.Error("the scheme does not know CustomResourceDefinition (needed to read CRDs back)")
	}
}

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}
