package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/controller/acceptance"
	ctrlremediation "github.com/gpunode/gpunode/internal/controller/remediation"
	"github.com/gpunode/gpunode/internal/nodeops"
	"github.com/gpunode/gpunode/internal/nodepolicy"
	"github.com/gpunode/gpunode/internal/remediation"
)

// cliClient is an uncached client of the cluster kubeconfig names (the default chain when
// it names none) that knows the built-in kinds and gpunode's.
func cliClient(f *clusterFlags) (client.Client, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "gpunode-cli"
	s, err := acceptance.Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// readGPUNode reads GPUNode name; a missing one fails with exit code 1 and says so.
func readGPUNode(ctx context.Context, c client.Client, name string) (*v1alpha1.GPUNode, error) {
	gn := &v1alpha1.GPUNode{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, gn)
	if apierrors.IsNotFound(err) {
		return nil, &exitError{code: ExitFail, err: fmt.Errorf("no GPUNode %q in the cluster (kubectl get gpunodes lists them)", name)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading GPUNode %q: %w", name, err)
	}
	return gn, nil
}

// explainNode decides GPUNode name at now as the remediation controller does: over the
// whole fleet (budget, breakers), from the same mapping of the API objects.
func explainNode(ctx context.Context, c client.Client, name string, now time.Time) (*nodeExplanation, error) {
	gn, err := readGPUNode(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var policies v1alpha1.GPUNodePolicyList
	if err := c.List(ctx, &policies); err != nil {
		return nil, fmt.Errorf("listing GPUNodePolicies to explain GPUNode %q: %w", name, err)
	}
	var gns v1alpha1.GPUNodeList
	if err := c.List(ctx, &gns); err != nil {
		return nil, fmt.Errorf("listing GPUNodes to explain GPUNode %q: %w", name, err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes to explain GPUNode %q: %w", name, err)
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	if byName[gn.Spec.NodeName] == nil {
		return nil, &exitError{code: ExitFail, err: fmt.Errorf("GPUNode %q names the Node %q, which does not exist: nothing holds it, and remediation decides nothing for it", name, gn.Spec.NodeName)}
	}
	fleet := remediation.Fleet{Policies: map[string]remediation.Policy{}, Breakers: map[string]remediation.Breaker{}}
	for i := range policies.Items {
		p := &policies.Items[i]
		rp, err := ctrlremediation.Policy(p.Name, p.Spec.Remediation)
		if err != nil {
			return nil, fmt.Errorf("explaining GPUNode %q: %w", name, err)
		}
		fleet.Policies[p.Name], fleet.Breakers[p.Name] = rp, ctrlremediation.Breaker(p)
	}
	self := -1
	for i := range gns.Items {
		other := &gns.Items[i]
		nd := byName[other.Spec.NodeName]
		if nd == nil {
			continue // no Node: part of no pool, as the controller counts it
		}
		if other.Name == gn.Name {
			other, self = gn, len(fleet.Nodes)
		}
		f, err := nodeFacts(other, nd, policies.Items, fleet.Policies)
		if err != nil && other == gn {
			return nil, fmt.Errorf("explaining GPUNode %q: %w", name, err)
		}
		fleet.Nodes = append(fleet.Nodes, f)
	}
	if self < 0 {
		return nil, &exitError{code: ExitFail, err: fmt.Errorf("GPUNode %q vanished while the fleet was read", name)}
	}
	facts := fleet.Nodes[self]
	plan := remediation.PlanFleet(fleet, now)
	governing, _ := nodepolicy.Governing(byName[gn.Spec.NodeName].Labels, policies.Items)
	out := &nodeExplanation{
		Explanation: remediation.Explain(facts, fleet.Policies[facts.Pool], plan.For(facts.Node), now),
		GPUNode:     gn.Name, NodeName: gn.Spec.NodeName, Pool: facts.Pool, StatusPhase: gn.Status.Phase,
		LastAcceptance: gn.Status.LastAcceptance, At: now.UTC(),
		BuiltInDefaults: nodepolicy.IsBuiltIn(governing), Agent: explainAgent(gn, governing, heldBy(facts, v1alpha1.HoldOwnerLiveness), now),
	}
	if r := gn.Status.Remediation; r != nil {
		out.Bundle = r.Evidence
	}
	if out.DeviceTaintRules, err = explainDeviceTaints(ctx, c, gn.Spec.NodeName); err != nil {
		return nil, err
	}
	return out, nil
}

// nodeFacts maps one GPUNode and its Node. An error (a malformed state or holds
// annotation) comes with the facts the rest of the objects give: the controller counts
// such a node in the fleet all the same.
func nodeFacts(gn *v1alpha1.GPUNode, nd *corev1.Node, policies []v1alpha1.GPUNodePolicy, mapped map[string]remediation.Policy) (remediation.Facts, error) {
	pool := ""
	if p, _ := acceptance.SelectPolicy(nd.Labels, policies); p != nil {
		pool = p.Name
	}
	state, stateErr := ctrlremediation.ReadState(gn)
	holds, holdsErr := nodeops.ParseHolds(nd.Name, nd.Annotations[v1alpha1.AnnotationHolds])
	f := ctrlremediation.Facts(gn, nd.Labels, holds, pool, mapped[pool].Budget.DomainKey, state)
	return f, errors.Join(stateErr, holdsErr)
}

// heldBy reports whether owner holds the node of f.
func heldBy(f remediation.Facts, owner string) bool {
	return slices.ContainsFunc(f.Holds, func(h remediation.Hold) bool { return h.Owner == owner })
}
