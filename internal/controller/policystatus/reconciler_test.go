package policystatus

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

func start(t *testing.T) client.Client {
	t.Helper()
	cfg, c := testenv.Start(t)
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient(), Reader: mgr.GetCache()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager stopped with an error: %v", err)
		}
	})
	return c
}

// waitForNodes waits until policy name reports want nodes, for as long as a loaded machine needs.
func waitForNodes(t *testing.T, c client.Client, name string, want int32) {
	t.Helper()
	var got v1alpha1.GPUNodePolicy
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.Status.Nodes == want && got.Status.ObservedGeneration == got.Generation, nil
	})
	if err != nil {
		t.Fatalf("GPUNodePolicy %s: status.nodes %d (observed generation %d of %d), want %d", name, got.Status.Nodes, got.Status.ObservedGeneration, got.Generation, want)
	}
}

func TestTheNodesColumnFollowsTheNodesAPolicyGoverns(t *testing.T) {
	c := start(t)
	ctx := t.Context()
	for _, n := range []string{"ps-1", "ps-2", "ps-3"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"ps-class": "h100"}}}); err != nil {
			t.Fatal(err)
		}
		if n != "ps-3" { // ps-3 is not a GPU node: no GPUNode
			gn := gpuNode(n)
			if err := c.Create(ctx, &gn); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := policy("ps-h100", 5, map[string]string{"ps-class": "h100"})
	if err := c.Create(ctx, &p); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, c, "ps-h100", 2)

	// A label change moves a node out of the pool.
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "ps-2"}, &n); err != nil {
		t.Fatal(err)
	}
	n.Labels["ps-class"] = "a100"
	if err := c.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, c, "ps-h100", 1)

	// A policy of higher priority takes the node over; the first counts zero.
	q := policy("ps-h100-rack", 9, map[string]string{"ps-class": "h100"})
	if err := c.Create(ctx, &q); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, c, "ps-h100-rack", 1)
	waitForNodes(t, c, "ps-h100", 0)

	// A GPUNode deleted leaves the pool.
	gn := gpuNode("ps-1")
	if err := c.Delete(ctx, &gn); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, c, "ps-h100-rack", 0)
}
