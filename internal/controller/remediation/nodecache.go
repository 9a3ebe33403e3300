package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodeops"
)

// cacheCatchUp bounds the wait for the Node metadata cache to show a hold this controller
// placed or released.
const cacheCatchUp = 5 * time.Second

// nodeMeta reads the Nodes' metadata: from NodeMetadata (the manager's cache, fed by the
// Node metadata watch) when set, else from Client.
func (r *Reconciler) nodeMeta() client.Reader {
	if r.NodeMetadata != nil {
		return r.NodeMetadata
	}
	return r.Client
}

// listNodeMeta lists every Node's metadata.
func (r *Reconciler) listNodeMeta(ctx context.Context) (*metav1.PartialObjectMetadataList, error) {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.nodeMeta().List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return nodes, nil
}

// awaitHoldSeen waits until the Node metadata cache shows remediation's hold on node
// (held) or not (!held): the next pass counts the budget from the cache, and must count
// the hold this pass placed. Without a cache it returns at once.
func (r *Reconciler) awaitHoldSeen(ctx context.Context, node string, held bool) error {
	if r.NodeMetadata == nil {
		return nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, cacheCatchUp, true, func(ctx context.Context) (bool, error) {
		if err := r.NodeMetadata.Get(ctx, client.ObjectKey{Name: node}, m); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err) // a Node gone holds nothing
		}
		hs, err := nodeops.ParseHolds(node, m.Annotations[v1alpha1.AnnotationHolds])
		if err != nil {
			return false, nil //nolint:nilerr // a malformed annotation is the next pass's to report
		}
		_, ok := hs.Find(v1alpha1.HoldOwnerRemediation)
		return ok == held, nil
	})
	if err != nil {
		return fmt.Errorf("the Node cache did not show the hold on %s within %s: %w", node, cacheCatchUp, err)
	}
	return nil
}
