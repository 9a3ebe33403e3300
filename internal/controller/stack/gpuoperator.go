package stack

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The GPU Operator's kinds the stack controller reads, when their CRDs are installed.
var (
	ClusterPolicyKind = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1", Kind: "ClusterPolicy"}
	NVIDIADriverKind  = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "NVIDIADriver"}
)

// readGPUOperator reads the GPU Operator's ClusterPolicy and NVIDIADrivers; a kind whose
// CRD is not installed reads as none.
func readGPUOperator(ctx context.Context, c client.Reader) (GPUOperator, error) {
	var g GPUOperator
	policies, err := listKind(ctx, c, ClusterPolicyKind)
	if err != nil {
		return g, err
	}
	if len(policies) > 0 {
		// The GPU Operator acts on one ClusterPolicy (the oldest; it ignores the others).
		p := policies[0]
		for _, q := range policies[1:] {
			if olderThan(q, p) {
				p = q
			}
		}
		g.ClusterPolicy = p.GetName()
		g.Driver = boolField(p, true, "spec", "driver", "enabled")
		g.Toolkit = boolField(p, true, "spec", "toolkit", "enabled")
		g.DriverCRD = boolField(p, false, "spec", "driver", "useNvidiaDriverCRD")
	}
	drivers, err := listKind(ctx, c, NVIDIADriverKind)
	if err != nil {
		return g, err
	}
	for _, d := range drivers {
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "nodeSelector")
		g.NVIDIADrivers = append(g.NVIDIADrivers, NVIDIADriver{Name: d.GetName(), NodeSelector: sel})
	}
	return g, nil
}

func listKind(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

func boolField(u unstructured.Unstructured, def bool, path ...string) bool {
	v, found, err := unstructured.NestedBool(u.Object, path...)
	if !found || err != nil {
		return def
	}
	return v
}

func olderThan(a, b unstructured.Unstructured) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
