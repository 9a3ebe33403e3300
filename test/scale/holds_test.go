package scale

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/testenv"
)

// holdWatch follows the Nodes and records when remediation's hold first appears on each
// node a fault was injected into.
type holdWatch struct {
	mu      sync.Mutex
	seen    int                  // Node events so far
	held    map[string]time.Time // node -> when remediation's hold was first seen
	armed   map[string]time.Time // node -> when its fault was written
	latency []time.Duration
}

// watchHolds follows every Node until the test ends, and returns once the watch has
// delivered the n Nodes that exist.
func watchHolds(t *testing.T, cfg *rest.Config, n int) *holdWatch {
	t.Helper()
	s, err := testenv.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("creating the Node watch's client: %v", err)
	}
	hw := &holdWatch{held: map[string]time.Time{}, armed: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &corev1.NodeList{})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if nd, ok := ev.Object.(*corev1.Node); ok {
					hw.observe(nd, time.Now())
				}
			}
			w.Stop()
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for hw.events() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the Node watch delivered %d of %d Nodes in 2 minutes", hw.events(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return hw
}

func (hw *holdWatch) events() int {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.seen
}

func (hw *holdWatch) observe(nd *corev1.Node, at time.Time) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.seen++
	hs, err := nodeops.ParseHolds(nd.Name, nd.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return
	}
	if _, ok := hs.Find(v1alpha1.HoldOwnerRemediation); !ok {
		return
	}
	if _, ok := hw.held[nd.Name]; ok {
		return
	}
	hw.held[nd.Name] = at
	if inj, ok := hw.armed[nd.Name]; ok {
		hw.latency = append(hw.latency, at.Sub(inj))
	}
}

// arm records that node's fault was written at at; its hold seen next completes it.
func (hw *holdWatch) arm(node string, at time.Time) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.armed[node] = at
}

// result returns the injection-to-hold latencies, the armed nodes not held yet and the
// nodes held that were never armed.
func (hw *holdWatch) result() (latency []time.Duration, missing, unexpected []string) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for node := range hw.armed {
		if _, ok := hw.held[node]; !ok {
			missing = append(missing, node)
		}
	}
	for node := range hw.held {
		if _, ok := hw.armed[node]; !ok {
			unexpected = append(unexpected, node)
		}
	}
	return append([]time.Duration(nil), hw.latency...), missing, unexpected
}
