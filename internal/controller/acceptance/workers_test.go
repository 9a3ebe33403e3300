package acceptance

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// overlap records the nodes whose Node read is under way, and is closed once two
// different nodes' reads are under way at once.
type overlap struct {
	mu      sync.Mutex
	watched map[string]bool
	inside  map[string]bool
	both    chan struct{}
}

// enter holds a read of node until another watched node's read is under way too (or
// waitTimeout passed, so that a controller of one worker is not stuck for ever).
func (o *overlap) enter(node string) {
	o.mu.Lock()
	if !o.watched[node] {
		o.mu.Unlock()
		return
	}
	o.inside[node] = true
	if len(o.inside) == 2 {
		select {
		case <-o.both:
		default:
			close(o.both)
		}
	}
	o.mu.Unlock()
	select {
	case <-o.both:
	case <-time.After(waitTimeout):
	}
	o.mu.Lock()
	delete(o.inside, node)
	o.mu.Unlock()
}

// gatedReads is a client whose Node reads go through o.
type gatedReads struct {
	client.Client
	o *overlap
}

func (g gatedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, isNode := obj.(*corev1.Node); isNode {
		g.o.enter(key.Name)
	}
	return g.Client.Get(ctx, key, obj, opts...)
}

// Two nodes are judged at once: a pass waiting on the API server for one node does not
// keep another node's pass waiting in the queue.
func TestThePassesOfTwoNodesOverlap(t *testing.T) {
	a, b := "overlap-a", "overlap-b"
	o := &overlap{watched: map[string]bool{a: true, b: true}, inside: map[string]bool{}, both: make(chan struct{})}
	c := startController(t, func(r *Reconciler) {
		r.Client = gatedReads{Client: r.Client, o: o}
	})
	join(t, c, a, 8, nil)
	join(t, c, b, 8, nil)
	select {
	case <-o.both:
	case <-time.After(waitTimeout):
		t.Fatalf("the passes of %s and %s never overlapped in %s: one node's pass waited for the other's", a, b, waitTimeout)
	}
}
