package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/testenv"
)

// Agents keep going through an API server outage (every connection reset, then refused for
// 3 s): nodes that joined just before it are accepted and released after it, and what the
// agents observed during the outage is published.
func TestAgentsKeepGoingThroughAnAPIServerOutage(t *testing.T) {
	cfg, c := testenv.Start(t)
	ctx := t.Context()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newOutageProxy(t, u.Host)
	pcfg := rest.CopyConfig(cfg)
	pcfg.Host = "https://" + proxy.Addr()
	scheme, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := client.New(pcfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var probe v1alpha1.GPUNodePolicyList
	if err := ac.List(ctx, &probe); err != nil {
		t.Fatalf("the API server through the proxy: %v", err)
	}
	pol := &v1alpha1.GPUNodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "restart"},
		Spec: v1alpha1.GPUNodePolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "restart"}},
			Priority: 10}}
	if err := c.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	startController(t)
	var names []string
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("restart-%d", i)
		names = append(names, name)
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "restart"}}}); err != nil {
			t.Fatal(err)
		}
		startAgent(t, ac, name, scenario(t, 8)) // the agents reach the API server through the proxy
	}
	// Wait until the agents have joined, then take the API server away for 3 s.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			var gn v1alpha1.GPUNode
			if c.Get(ctx, client.ObjectKey{Name: n}, &gn) != nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("agents did not join: %v", err)
	}
	heldNow := 0
	for _, n := range names {
		var nd corev1.Node
		if c.Get(ctx, client.ObjectKey{Name: n}, &nd) == nil && held(&nd) {
			heldNow++
		}
	}
	if heldNow == 0 {
		t.Fatal("every node was released before the outage: the test would prove nothing")
	}
	t.Logf("%d of %d nodes still held when the outage begins", heldNow, len(names))
	t0 := time.Now()
	proxy.Outage(3 * time.Second)
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			var nd corev1.Node
			var gn v1alpha1.GPUNode
			if c.Get(ctx, client.ObjectKey{Name: n}, &nd) != nil || held(&nd) ||
				c.Get(ctx, client.ObjectKey{Name: n}, &gn) != nil || gn.Status.Phase != v1alpha1.PhaseInService || len(gn.Status.Inventory.GPUs) != 8 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("not every node was accepted and released after the restart: %v", err)
	}
	t.Logf("all %d nodes in service %.1f s after the outage began", len(names), time.Since(t0).Seconds())
}
