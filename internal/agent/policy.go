package agent

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// governing lists the GPUNodePolicies and returns the one that governs the node
// (nodepolicy.Governing: BuiltIn when none selects it), logging the ones it had to ignore.
// cached reads the list from the API server's watch cache (resourceVersion 0), as the
// policy that the monitor follows every round may be a moment old; an acceptance run reads
// it fresh.
func (a *Agent) governing(ctx context.Context, nodeLabels map[string]string, cached bool) (*v1alpha1.GPUNodePolicy, error) {
	policies := &v1alpha1.GPUNodePolicyList{}
	var opts []client.ListOption
	if cached {
		opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	}
	if err := a.cfg.Client.List(ctx, policies, opts...); err != nil {
		return nil, fmt.Errorf("list GPUNodePolicies: %w", err)
	}
	gp, errs := nodepolicy.Governing(nodeLabels, policies.Items)
	for _, err := range errs {
		a.cfg.Log.Warn("GPUNodePolicy ignored", "node", a.cfg.NodeName, "err", err)
	}
	return gp, nil
}

// followPolicy gives the health monitor the thresholds of the policy that governs the node
// now, so that the monitor judges a GPU by the same limits as acceptance does. It runs every
// round, and lists the policies when the policy watch saw a change, the node's labels
// changed, or no watch is established; when the policies cannot be listed the monitor
// keeps the thresholds it has, and the next round lists them again. The policy chosen is
// handed to Config.OnPolicy too (the DRA plugin's taint effect).
func (a *Agent) followPolicy(ctx context.Context, nodeLabels map[string]string) {
	key := fingerprint(nodeLabels)
	if a.watched.policiesWatched.Load() && !a.watched.policiesChanged.Swap(false) && key == a.policyLabels {
		return
	}
	gp, err := a.governing(ctx, nodeLabels, true)
	if err != nil {
		a.watched.policiesChanged.Store(true)
		a.cfg.Log.Debug("health thresholds not refreshed", "node", a.cfg.NodeName, "err", err)
		return
	}
	a.policyLabels = key
	a.mon.SetThresholds(nodepolicy.Thresholds(gp))
	if a.cfg.OnPolicy != nil {
		a.cfg.OnPolicy(gp)
	}
}

// watchPolicies follows the GPUNodePolicies, so that followPolicy lists them only after one
// changed (or the node's labels did) instead of every round.
func (a *Agent) watchPolicies(ctx context.Context, w client.WithWatch) {
	a.keepWatching(ctx, "GPUNodePolicies", func(ctx context.Context) error {
		wi, err := w.Watch(ctx, &v1alpha1.GPUNodePolicyList{})
		if err != nil {
			return err
		}
		defer wi.Stop()
		a.watched.policiesChanged.Store(true) // a change before the watch began is not known
		a.watched.policiesWatched.Store(true)
		defer a.watched.policiesWatched.Store(false)
		for {
			select {
			case <-ctx.Done():
				return nil
			case _, open := <-wi.ResultChan():
				if !open {
					return nil
				}
				a.watched.policiesChanged.Store(true)
			}
		}
	})
}
