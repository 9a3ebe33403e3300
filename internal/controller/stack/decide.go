package stack

import (
	v1alpha1 "github.com/gpunode/gpunode/api/v1alpha1"
)

// NodeDecision is what the stack controller writes on one Node.
type NodeDecision struct {
	// Pool is the gpunode.dev/stack-pool label's value; "" removes the label.
	Pool string
	// Hold is the reason of the stack hold; "" releases it.
	Hold string
}

// DecideNode decides a Node's label and stack hold from its membership and, for a member,
// the readiness of its pool's operands (nil when the node is not a member):
//   - selected by two or more pools: no label, held (pool-conflict, naming the pools);
//   - selected by one pool: labelled with it, held (stack-not-ready, saying what is
//     missing) until its driver and toolkit are both ready;
//   - selected by none: no label, no stack hold (a cluster without StackPools is as
//     before).
func DecideNode(m Membership, ready *v1alpha1.StackNodeStatus) NodeDecision {
	switch {
	case m.Conflict():
		return NodeDecision{Hold: ConflictReason(m)}
	case m.Pool() == "":
		return NodeDecision{}
	case ready == nil || !Ready(*ready):
		d := NodeDecision{Pool: m.Pool(), Hold: v1alpha1.HoldReasonStackNotReady + ": the pool's operands are not judged yet"}
		if ready != nil {
			d.Hold = NotReadyReason(*ready)
		}
		return d
	}
	return NodeDecision{Pool: m.Pool()}
}
