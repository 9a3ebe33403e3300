package remediation

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/remediation"
)

// loaded is the fleet one pass decides over, and where the reconciled node is in it.
type loaded struct {
	fleet    remediation.Fleet
	self     int
	policies map[string]*v1alpha1.GPUNodePolicy
}

// loadFleet maps every GPUNode into facts. Every node's holds, the reconciled node's too,
// come from the holds annotation of one metadata-only listing of the Nodes (the cache,
// which every pass that changed remediation's hold waited to show the change: the budget
// counts the hold the previous pass placed). It returns nil when the reconciled node
// cannot be decided (its Node is gone, or its persisted state is malformed).
func (r *Reconciler) loadFleet(ctx context.Context, gn *v1alpha1.GPUNode) (*loaded, error) {
	logger := log.FromContext(ctx)
	var policies v1alpha1.GPUNodePolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		return nil, fmt.Errorf("list GPUNodePolicies for GPUNode %q: %w", gn.Name, err)
	}
	var gns v1alpha1.GPUNodeList
	// Read only: the cache's objects are not copied (the reconciled node is the fresh read).
	if err := r.Client.List(ctx, &gns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list GPUNodes for GPUNode %q: %w", gn.Name, err)
	}
	nodes, err := r.listNodeMeta(ctx)
	if err != nil {
		return nil, fmt.Errorf("list Nodes for GPUNode %q: %w", gn.Name, err)
	}
	meta := make(map[string]*metav1.PartialObjectMetadata, len(nodes.Items))
	for i := range nodes.Items {
		meta[nodes.Items[i].Name] = &nodes.Items[i]
	}
	self, ok := meta[gn.Spec.NodeName]
	if !ok {
		logger.Info("the GPUNode's Node does not exist; nothing to decide", "node", gn.Spec.NodeName)
		return nil, nil
	}
	selfHolds, err := nodeops.ParseHolds(self.Name, self.Annotations[v1alpha1.AnnotationHolds])
	if err != nil {
		return nil, fmt.Errorf("read holds of GPUNode %q: %w", gn.Name, err)
	}
	out := &loaded{
		self: -1, policies: map[string]*v1alpha1.GPUNodePolicy{},
		fleet: remediation.Fleet{Policies: map[string]remediation.Policy{}, Breakers: map[string]remediation.Breaker{}},
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		rp, err := Policy(p.Name, p.Spec.Remediation)
		if err != nil {
			logger.Error(err, "the pool takes remediation's defaults", "policy", p.Name)
		}
		out.fleet.Policies[p.Name], out.fleet.Breakers[p.Name], out.policies[p.Name] = rp, Breaker(p), p
	}
	for i := range gns.Items {
		other := &gns.Items[i]
		if other.Name == gn.Name {
			other = gn // the fresh read, not the cache's
		}
		m, ok := meta[other.Spec.NodeName]
		if !ok {
			continue // no Node: not part of any pool
		}
		pool := ""
		if p, err := acceptance.SelectPolicy(m.Labels, policies.Items); p != nil {
			pool = p.Name
		} else if err != nil {
			logger.V(1).Info("some GPUNodePolicies were not considered", "node", m.Name, "error", err.Error())
		}
		state, err := ReadState(other)
		if err != nil {
			if other == gn {
				logger.Error(err, "not deciding the node until a person repairs or deletes the annotation")
				return nil, nil
			}
			logger.Error(err, "counting the node in the fleet with no remediation state")
		}
		holds := selfHolds
		if other != gn {
			if holds, err = nodeops.ParseHolds(m.Name, m.Annotations[v1alpha1.AnnotationHolds]); err != nil {
				logger.Error(err, "counting the node in the fleet as held by no one", "node", m.Name)
			}
		} else {
			out.self = len(out.fleet.Nodes)
		}
		domainKey := out.fleet.Policies[pool].Budget.DomainKey
		out.fleet.Nodes = append(out.fleet.Nodes, Facts(other, m.Labels, holds, pool, domainKey, state))
	}
	if out.self < 0 {
		return nil, nil // the Node vanished between the two reads
	}
	return out, nil
}

// driverSelector is the reconciled node's pool's driverPodSelector (nil: none).
func (l *loaded) driverSelector() *v1alpha1.PodSelector {
	if p := l.policies[l.fleet.Nodes[l.self].Pool]; p != nil {
		return p.Spec.Remediation.DriverPodSelector
	}
	return nil
}
