package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// populateWorkers is how many nodes are created at once.
const populateWorkers = 32

// populate creates nodes 1..n-1 as clones of the template (node 0), n-1 workers' worth at a
// time: each a Node (with its status), an AcceptanceRecord and a GPUNode with its status.
func populate(ctx context.Context, c client.Client, tp *template, n int) error {
	idx := make(chan int)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range populateWorkers {
		wg.Go(func() {
			for i := range idx {
				if failed.Load() != nil {
					continue
				}
				if err := createClone(ctx, c, tp, i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for i := 1; i < n; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}

// createClone creates node i: the template's objects with node 0's name replaced by its
// own everywhere (the record's name and node, the GPUNode's nodeName and basis).
func createClone(ctx context.Context, c client.Client, tp *template, i int) error {
	from, to := nodeName(0), nodeName(i)
	node, err := clone(tp.node, from, to)
	if err != nil {
		return err
	}
	status := node.Status
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating Node %s: %w", to, err)
	}
	if !equality.Semantic.DeepEqual(status, corev1.NodeStatus{}) && !equality.Semantic.DeepEqual(status, node.Status) {
		node.Status = status
		if err := c.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("writing the status of Node %s: %w", to, err)
		}
	}
	rec, err := clone(tp.record, from, to)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, rec); err != nil {
		return fmt.Errorf("creating AcceptanceRecord %s: %w", rec.Name, err)
	}
	gn, err := clone(tp.gn, from, to)
	if err != nil {
		return err
	}
	gstatus := gn.Status
	if err := c.Create(ctx, gn); err != nil {
		return fmt.Errorf("creating GPUNode %s: %w", to, err)
	}
	// The clone's generation starts at 1; what the controllers observed of the template's
	// spec they have observed of the clone's.
	gstatus.ObservedGeneration = gn.Generation
	for j := range gstatus.Conditions {
		gstatus.Conditions[j].ObservedGeneration = gn.Generation
	}
	gn.Status = gstatus
	if err := c.Status().Update(ctx, gn); err != nil {
		return fmt.Errorf("writing the status of GPUNode %s: %w", to, err)
	}
	return nil
}

// clone copies o by its JSON with every from replaced by to, without what the API server
// sets (resourceVersion, uid, creation time, generation, managed fields).
func clone[T client.Object](o T, from, to string) (T, error) {
	var zero T
	b, err := json.Marshal(o)
	if err != nil {
		return zero, fmt.Errorf("cloning %s as %s: %w", o.GetName(), to, err)
	}
	out := o.DeepCopyObject().(T)
	// Unmarshal into a zeroed copy: DeepCopyObject gives the concrete type.
	if err := zeroInto(out); err != nil {
		return zero, err
	}
	if err := json.Unmarshal(bytes.ReplaceAll(b, []byte(from), []byte(to)), out); err != nil {
		return zero, fmt.Errorf("cloning %s as %s: %w", o.GetName(), to, err)
	}
	out.SetResourceVersion("")
	out.SetUID("")
	out.SetCreationTimestamp(metav1.Time{})
	out.SetGeneration(0)
	out.SetManagedFields(nil)
	return out, nil
}

// zeroInto resets the kinds the benchmark clones to their zero value.
func zeroInto(o client.Object) error {
	switch v := o.(type) {
	case *corev1.Node:
		*v = corev1.Node{}
	case *v1alpha1.GPUNode:
		*v = v1alpha1.GPUNode{}
	case *v1alpha1.AcceptanceRecord:
		*v = v1alpha1.AcceptanceRecord{}
	default:
		return errors.New("cloning: unexpected kind " + fmt.Sprintf("%T", o))
	}
	return nil
}
