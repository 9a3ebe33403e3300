package acceptance

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/nodepolicy"
)

// AnnotationBasis is the GPUNode annotation recording what the latest acceptance request
// was made for (a Basis as JSON). The controller writes it together with the raised
// spec.acceptanceGeneration.
const AnnotationBasis = "gpunode.dev/acceptance-basis"

// SelectPolicy returns the policy that governs a Node with nodeLabels (the rule is
// nodepolicy.Select's, shared with the agent), with the unusable policies joined into one error.
func SelectPolicy(nodeLabels map[string]string, policies []v1alpha1.GPUNodePolicy) (*v1alpha1.GPUNodePolicy, error) {
	p, errs := nodepolicy.Select(nodeLabels, policies)
	return p, errors.Join(errs...)
}

// Basis is what an acceptance request is made for: a difference between the basis of the
// latest request and the node's current one asks for another run.
type Basis struct {
	// Policy is the governing GPUNodePolicy's name; PolicySHA256 the hash of its spec.
	Policy       string `json:"policy"`
	PolicySHA256 string `json:"policySHA256"`
	// InventorySHA256 hashes each GPU's index, UUID, model and memory.
	InventorySHA256 string `json:"inventorySHA256"`
	// Driver is the driver version.
	Driver string `json:"driver,omitempty"`
}

// CurrentBasis is the basis of gn governed by policy.
func CurrentBasis(gn *v1alpha1.GPUNode, policy *v1alpha1.GPUNodePolicy) Basis {
	spec, err := json.Marshal(policy.Spec)
	if err != nil { // a spec of plain fields always marshals
		panic(fmt.Sprintf("acceptance: marshal GPUNodePolicy %q spec: %v", policy.Name, err))
	}
	gpus := slices.Clone(gn.Status.Inventory.GPUs)
	slices.SortFunc(gpus, func(a, b v1alpha1.GPUInfo) int { return cmp.Compare(a.Index, b.Index) })
	var inv strings.Builder
	for _, g := range gpus {
		fmt.Fprintf(&inv, "%d\t%s\t%s\t%d\n", g.Index, g.UUID, g.Model, g.MemoryMiB)
	}
	return Basis{
		Policy:          policy.Name,
		PolicySHA256:    sha(spec),
		InventorySHA256: sha([]byte(inv.String())),
		Driver:          gn.Status.Versions.Driver,
	}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Render is the annotation value of b.
func (b Basis) Render() string {
	out, err := json.Marshal(b)
	if err != nil { // strings only
		panic(fmt.Sprintf("acceptance: marshal basis: %v", err))
	}
	return string(out)
}

// RecordedBasis reads gn's basis annotation; ok is false when it is absent or unreadable.
func RecordedBasis(gn *v1alpha1.GPUNode) (Basis, bool) {
	v, ok := gn.Annotations[AnnotationBasis]
	if !ok {
		return Basis{}, false
	}
	var b Basis
	if err := json.Unmarshal([]byte(v), &b); err != nil {
		return Basis{}, false
	}
	return b, true
}

// Request is the decision whether to ask for an acceptance run, and why.
type Request struct {
	// Needed: raise spec.acceptanceGeneration.
	Needed bool
	// Reason is a condition reason (CamelCase); Message says it to a person.
	Reason  string
	Message string
}

// InventoryPublished reports whether gn's agent has published the node's facts.
func InventoryPublished(gn *v1alpha1.GPUNode) bool {
	return len(gn.Status.Inventory.GPUs) > 0 || gn.Status.Versions.Driver != ""
}

// Outstanding reports whether a request is waiting for the agent's answer.
func Outstanding(gn *v1alpha1.GPUNode) bool {
	return gn.Spec.AcceptanceGeneration > answeredGeneration(gn)
}

func answeredGeneration(gn *v1alpha1.GPUNode) int64 {
	if gn.Status.LastAcceptance == nil {
		return 0
	}
	return gn.Status.LastAcceptance.Generation
}

// DecideRequest decides whether gn needs an acceptance run, given the basis of the latest
// request (recorded; ok false when none is recorded) and the current one. Nothing is asked
// before the agent has published the node's facts, nor while a request is outstanding (a
// change meanwhile is seen once the answer is in). A node never asked is asked; otherwise
// a changed policy, inventory or driver asks again, in that order of precedence.
func DecideRequest(gn *v1alpha1.GPUNode, recorded Basis, ok bool, current Basis) Request {
	switch {
	case !InventoryPublished(gn):
		return Request{Reason: v1alpha1.ReasonWaitingForInventory, Message: "waiting for the agent to publish the node's inventory"}
	case Outstanding(gn):
		return Request{Reason: v1alpha1.ReasonPending, Message: fmt.Sprintf("acceptance generation %d requested; waiting for the agent's record", gn.Spec.AcceptanceGeneration)}
	case gn.Spec.AcceptanceGeneration == 0:
		return Request{Needed: true, Reason: v1alpha1.ReasonNewNode, Message: "new node: never accepted"}
	case !ok:
		return Request{Needed: true, Reason: v1alpha1.ReasonBasisUnknown, Message: "what the last run was asked for is not recorded"}
	case recorded.Policy != current.Policy:
		return Request{Needed: true, Reason: v1alpha1.ReasonPolicyChanged, Message: fmt.Sprintf("policy changed from %q to %q", recorded.Policy, current.Policy)}
	case recorded.PolicySHA256 != current.PolicySHA256:
		return Request{Needed: true, Reason: v1alpha1.ReasonPolicyChanged, Message: fmt.Sprintf("policy %q changed", current.Policy)}
	case recorded.InventorySHA256 != current.InventorySHA256:
		return Request{Needed: true, Reason: v1alpha1.ReasonInventoryChanged, Message: "GPU inventory changed since the last run"}
	case recorded.Driver != current.Driver:
		return Request{Needed: true, Reason: v1alpha1.ReasonDriverChanged, Message: fmt.Sprintf("driver changed from %q to %q", recorded.Driver, current.Driver)}
	}
	return Request{Reason: v1alpha1.ReasonAnswered, Message: fmt.Sprintf("acceptance generation %d answered; nothing changed since", gn.Spec.AcceptanceGeneration)}
}
