package nodeops

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// conflictBackoff is how Ops retries a write that lost an optimistic-concurrency race:
// more steps than retry.DefaultRetry, since a fleet controller and a node agent may write
// the same node at once.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5}

// Ops applies holds to Nodes through the API server. Each change is read, decided by the
// pure functions of this package, and written as one merge patch of the holds annotation
// and the taints, guarded by the node's resourceVersion; a conflict is retried from a fresh
// read. Nothing is written when nothing changes. Ops never touches node.spec.unschedulable
// nor any taint or annotation it does not own.
//
// Client should read from the API server, not from a lagging cache: a stale read only
// costs conflicts, but enough of them exhaust the retries.
type Ops struct {
	// Client reads and patches Nodes.
	Client client.Client
	// Clock gives the Since of new holds; nil means time.Now.
	Clock func() time.Time
}

// Hold takes (or re-takes) owner's hold on node nodeName. Re-taking keeps the original
// Since and updates the reason.
func (o Ops) Hold(ctx context.Context, nodeName, owner, reason string) error {
	if owner == "" {
		return fmt.Errorf("hold node %q: empty owner", nodeName)
	}
	err := o.change(ctx, nodeName, func(holds Holds) Holds {
		next, _ := Add(holds, Hold{Owner: owner, Reason: reason, Since: o.now()})
		return next
	})
	if err != nil {
		return fmt.Errorf("hold node %q for %q: %w", nodeName, owner, err)
	}
	return nil
}

// Release releases owner's hold on node nodeName. Releasing a hold owner does not have is
// a no-op that writes nothing; another owner's hold is never released.
func (o Ops) Release(ctx context.Context, nodeName, owner string) error {
	if owner == "" {
		return fmt.Errorf("release node %q: empty owner", nodeName)
	}
	err := o.change(ctx, nodeName, func(holds Holds) Holds {
		next, _ := Release(holds, owner)
		return next
	})
	if err != nil {
		return fmt.Errorf("release node %q for %q: %w", nodeName, owner, err)
	}
	return nil
}

// Get returns the holds of node nodeName: the annotation's, plus an adopted acceptance
// hold when the node was registered with the not-accepted taint (see
// AdoptRegistrationTaint).
func (o Ops) Get(ctx context.Context, nodeName string) (Holds, error) {
	node := &corev1.Node{}
	if err := o.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return nil, fmt.Errorf("get holds of node %q: %w", nodeName, err)
	}
	holds, err := holdsOf(node)
	if err != nil {
		return nil, fmt.Errorf("get holds of node %q: %w", nodeName, err)
	}
	return holds, nil
}

// change reads the node, applies decide to its holds and writes the result if it differs.
func (o Ops) change(ctx context.Context, nodeName string, decide func(Holds) Holds) error {
	return retry.RetryOnConflict(conflictBackoff, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		node := &corev1.Node{}
		if err := o.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		holds, err := holdsOf(node)
		if err != nil {
			return err // malformed: refuse to act, write nothing
		}
		next := decide(holds)
		taints := DesiredTaints(node.Spec.Taints, next)
		if next.Equal(holds) && TaintsEqual(taints, node.Spec.Taints) {
			return nil
		}
		patched := node.DeepCopy()
		if !next.Equal(holds) {
			setHoldsAnnotation(patched, next)
		}
		patched.Spec.Taints = taints
		patch := client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})
		return o.Client.Patch(ctx, patched, patch)
	})
}

// holdsOf parses node's holds annotation and adopts a registration taint.
func holdsOf(node *corev1.Node) (Holds, error) {
	holds, err := ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return nil, err
	}
	holds, _ = AdoptRegistrationTaint(node.Spec.Taints, holds, node.CreationTimestamp.Time)
	return holds, nil
}

// setHoldsAnnotation records holds on node, removing the annotation when none remain.
func setHoldsAnnotation(node *corev1.Node, holds Holds) {
	if len(holds) == 0 {
		delete(node.Annotations, v1alpha1.AnnotationHolds)
		return
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[v1alpha1.AnnotationHolds] = holds.Render()
}

func (o Ops) now() time.Time {
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	// Seconds are enough for a hold and keep the annotation short and stable.
	return clock().UTC().Truncate(time.Second)
}
