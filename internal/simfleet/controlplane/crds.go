package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRDs creates crds (copies; the arguments are not changed) and waits, within
// timeout, until each is Established and every version it serves is in discovery, so
// that clients created afterwards find their kinds.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("installing CRDs: creating a client for %s: %w", cfg.Host, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing CRDs: creating a discovery client for %s: %w", cfg.Host, err)
	}
	for _, crd := range crds {
		if err := c.Create(ctx, crd.DeepCopy()); err != nil {
			return fmt.Errorf("creating the CRD %s: %w", crd.Name, err)
		}
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var errs []error
		for _, crd := range crds {
			errs = append(errs, crdServed(ctx, c, dc, crd))
		}
		last = errors.Join(errs...)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("installing CRDs: not served within %s: %w (%w)", timeout, err, last)
	}
	return nil
}

// crdServed is nil once crd is Established and discovery lists its plural in every
// served version.
func crdServed(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	var got apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
		return fmt.Errorf("reading the CRD %s: %w", crd.Name, err)
	}
	if !established(&got) {
		return fmt.Errorf("the CRD %s is not Established yet", crd.Name)
	}
	for _, v := range got.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := got.Spec.Group + "/" + v.Name
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return fmt.Errorf("discovering %s: %w", gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == got.Spec.Names.Plural }) {
			return fmt.Errorf("discovery does not list %s in %s yet", got.Spec.Names.Plural, gv)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
