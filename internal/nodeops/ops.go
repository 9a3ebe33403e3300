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
// Every write first puts back what someone else stripped (RestoreHolds): the holds of Due
// the node lacks, with their recorded reason and since, and the taints the node's holds
// call for; Restored hears of it. So a hold stripped just before an owner's write is
// restored with its since and said, never silently re-placed as a new hold.
//
// Client should read from the API server, not from a lagging cache: a stale read only
// costs conflicts, but enough of them exhaust the retries.
type Ops struct {
	// Client reads and patches Nodes.
	Client client.Client
	// Clock gives the Since of new holds; nil means time.Now.
	Clock func() time.Time
	// Due are the holds the caller's own records say the node must carry (nil: none).
	Due Holds
	// Restored, when set, is told what each write put back (RestoreHolds), after the write.
	Restored func(Restored)
}

// Hold takes (or re-takes) owner's hold on node nodeName. Re-taking keeps the original
// Since and updates the reason.
func (o Ops) Hold(ctx context.Context, nodeName, owner, reason string) error {
	if owner == "" {
		return fmt.Errorf("hold node %q: empty owner", nodeName)
	}
	_, _, err := o.write(ctx, nodeName, func(holds Holds) Holds {
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
	_, _, err := o.write(ctx, nodeName, func(holds Holds) Holds {
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

// write reads the node, puts back what RestoreHolds says was stripped, applies decide to
// the holds and writes the result if it differs from what the node shows. It returns the
// holds the node carries after it and what it put back (told to o.Restored as well).
func (o Ops) write(ctx context.Context, nodeName string, decide func(Holds) Holds) (Holds, Restored, error) {
	var (
		out      Holds
		restored Restored
	)
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		node := &corev1.Node{}
		if err := o.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		annotated, err := ParseHolds(node.Name, node.Annotations[v1alpha1.AnnotationHolds])
		if err != nil {
			return err // malformed: refuse to act, write nothing
		}
		shown, _ := AdoptRegistrationTaint(node.Spec.Taints, annotated, node.CreationTimestamp.Time)
		due, put := RestoreHolds(annotated, node.Spec.Taints, node.CreationTimestamp.Time, o.Due)
		next := decide(due)
		taints := DesiredTaints(node.Spec.Taints, next)
		out, restored = next, put.written(next, taints)
		if next.Equal(shown) && TaintsEqual(taints, node.Spec.Taints) {
			restored = Restored{} // nothing written: what an adopted hold shows was not stripped
			return nil
		}
		patched := node.DeepCopy()
		if !next.Equal(shown) {
			setHoldsAnnotation(patched, next)
		}
		patched.Spec.Taints = taints
		patch := client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})
		return o.Client.Patch(ctx, patched, patch)
	})
	if err != nil {
		return nil, Restored{}, err
	}
	if restored.Any() && o.Restored != nil {
		o.Restored(restored)
	}
	return out, restored, nil
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
