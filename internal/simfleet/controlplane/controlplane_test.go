package controlplane

import (
	"errors"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// assets is $KUBEBUILDER_ASSETS, or skips t with the reason (fails under CI=true).
func assets(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		const why = "KUBEBUILDER_ASSETS not set: run `export KUBEBUILDER_ASSETS=$(bash hack/k8s-test-assets.sh)`"
		if os.Getenv("CI") == "true" {
			t.Fatal(why + " (CI=true: the API-server tests must run, not skip)")
		}
		t.Skip(why)
	}
	return dir
}

// A control plane starts from the assets folder, answers its admin through the REST
// config and through the kubeconfig, and Stop ends it and removes its folder.
func TestAControlPlaneServesItsAdminAndStopsClean(t *testing.T) {
	dir := assets(t)
	t0 := time.Now()
	cp, err := Start(t.Context(), Config{Assets: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane started in %s", time.Since(t0).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := cp.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}
	})
	fromKubeconfig, err := clientcmd.RESTConfigFromKubeConfig(cp.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*rest.Config{"REST config": cp.RESTConfig(), "kubeconfig": fromKubeconfig} {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			t.Errorf("through the %s: the default namespace: %v", name, err)
		}
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-"}}
		if _, err := cs.CoreV1().Nodes().Create(t.Context(), nd, metav1.CreateOptions{}); err != nil {
			t.Errorf("through the %s: creating a Node as the admin: %v", name, err)
		}
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stopped = true
	if _, err := os.Stat(cp.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the control plane's folder %s is still there after Stop (%v)", cp.Dir(), err)
	}
	for _, p := range []*process{cp.apiServer, cp.etcd} {
		select {
		case <-p.done:
		default:
			t.Errorf("%s still runs after Stop", p.name)
		}
	}
}
