package chart_test

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/testenv"
)

// fieldOwner is the field manager of the test's applies (Helm's own is "helm").
const fieldOwner = client.FieldOwner("gpunode-chart-test")

// Every install mode's manifests are accepted by a real kube-apiserver: server-side apply
// with dryRun=All runs defaulting, validation (strict field validation included) and
// admission without persisting anything. The CRDs come first, as Helm installs crds/ first.
func TestEveryInstallModeIsAcceptedByTheAPIServerOnServerSideDryRun(t *testing.T) {
	_, c := testenv.Start(t)
	ensureNamespace(t, c)
	for _, name := range crdFiles(t, filepath.Join(chartDir, "crds")) {
		crd := readObject(t, filepath.Join(chartDir, "crds", name))
		if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(crd), fieldOwner, client.ForceOwnership, client.DryRunAll); err != nil {
			t.Fatalf("applying the chart's CRD %s (dry run): %v", name, err)
		}
	}
	for _, mode := range installModes {
		t.Run(mode.name, func(t *testing.T) {
			ms := render(t, mode.values)
			for _, m := range ms {
				obj := m.u.DeepCopy()
				if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj), fieldOwner, client.ForceOwnership, client.DryRunAll); err != nil {
					t.Errorf("the API server refuses %s %s/%s from %s: %v", obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), m.source, err)
				}
			}
			// Nothing was persisted: dry run means dry run.
			for _, m := range ms {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(m.u.GroupVersionKind())
				err := c.Get(t.Context(), client.ObjectKeyFromObject(m.u), got)
				if m.u.GetKind() != "Namespace" && !apierrors.IsNotFound(err) {
					t.Errorf("%s/%s exists after a dry run (err %v)", m.u.GetKind(), m.u.GetName(), err)
				}
			}
		})
	}
}

func ensureNamespace(t *testing.T, c client.Client) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return u
}
