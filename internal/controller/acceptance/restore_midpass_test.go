package acceptance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// stripMidPass is the controller's client with one trap: armed, the pass that reads the
// AcceptanceRecord next (the evaluate phase, after the pass read the Node and restored what
// it showed missing) strips node's hold, annotation and taints, as a person would, just
// before its k-th read of the Node after the record's.
type stripMidPass struct {
	client.Client
	node  string
	k     int32
	armed atomic.Bool
	reads atomic.Int32 // the Node reads since the record's; -1 before it
	fired atomic.Bool
	err   atomic.Value // error
}

func (c *stripMidPass) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *v1alpha1.AcceptanceRecord:
		if c.armed.CompareAndSwap(true, false) {
			c.reads.Store(0)
		}
	case *corev1.Node:
		if key.Name == c.node && c.reads.Load() >= 0 && c.reads.Add(1) == c.k {
			c.reads.Store(-1)
			if err := stripNode(ctx, c.Client, c.node, true, true); err != nil {
				c.err.Store(err)
			}
			c.fired.Store(true)
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func TestAHoldStrippedInTheMiddleOfAPassComesBackWithItsSinceAndAnEvent(t *testing.T) {
	cases := []struct {
		name string
		k    int32
	}{
		{"stripped just before the pass writes the failed verdict's hold", 1},
		{"stripped just before the pass mirrors the Node's holds into status", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { stripMidPassAndWait(t, tc.k) })
	}
}

// stripMidPassAndWait fails a node's acceptance, strips its hold just before the k-th read
// of the Node after a pass read the AcceptanceRecord, and checks that the hold comes back
// with its since, in the Node and in status, and with a HoldRestored Event.
func stripMidPassAndWait(t *testing.T, k int32) {
	name := fresh("strip-midpass")
	trap := &stripMidPass{node: name, k: k}
	trap.reads.Store(-1)
	c := startController(t, func(r *Reconciler) { trap.Client = r.Client; r.Client = trap })
	failAcceptance(t, c, name)
	holds, _ := nodeHolds(t, c, name)
	before, _ := holds.Find(v1alpha1.HoldOwnerAcceptance)
	// A hold taken anew now would have another since: wait for the clock's next second.
	for !time.Now().UTC().Truncate(time.Second).After(before.Since) {
		time.Sleep(50 * time.Millisecond)
	}

	trap.armed.Store(true)
	err := retryOnConflict(t.Context(), func() error { // any change of the GPUNode makes a pass
		gn := &v1alpha1.GPUNode{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, gn); err != nil {
			return err
		}
		gn.Labels = map[string]string{"example.com/touched": "yes"}
		return c.Update(t.Context(), gn)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for !trap.fired.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("no pass read the Node %d times after the AcceptanceRecord within %s", k, waitTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err, _ := trap.err.Load().(error); err != nil {
		t.Fatalf("stripping the hold: %v", err)
	}
	e := waitEventOf(t, c, "GPUNode", name, corev1.EventTypeWarning, EventHoldRestored)
	if !strings.Contains(e.Note, "the acceptance hold") || !strings.Contains(e.Note, "Accepted False") {
		t.Errorf("HoldRestored Event %q, want it to name the acceptance hold and the failed verdict", e.Note)
	}
	holds, ts := nodeHolds(t, c, name)
	if h, ok := holds.Find(v1alpha1.HoldOwnerAcceptance); !ok || !h.Since.Equal(before.Since) || len(ts) != 2 {
		t.Errorf("holds %v, taints %v; want the acceptance hold back with its since %s, and both taints", holds, ts, before.Since)
	}
	waitGPUNode(t, c, name, "status.holds to record the original since", func(gn *v1alpha1.GPUNode) bool {
		return len(gn.Status.Holds) == 1 && gn.Status.Holds[0].Since.Time.Equal(before.Since)
	})
}
