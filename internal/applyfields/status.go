package applyfields

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
)

// ApplyStatus applies status (its fields as Of gives them) to the status of the
// cluster-scoped gpunode.dev object kind/name, as manager, taking the fields over.
func ApplyStatus(ctx context.Context, c client.Client, kind, name string, status any, manager string) error {
	fields, err := Of(status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind,
		"metadata": map[string]any{"name": name},
		"status":   fields,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the status of %s %q: %w", kind, name, err)
	}
	return nil
}
