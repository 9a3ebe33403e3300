// Package remediation is the controller that isolates and recovers faulty GPU nodes. It
// maps each GPUNode (its GPUs' health, its Node's holds, its pool's GPUNodePolicy and the
// agent's answers) into internal/remediation's Facts, decides over the whole fleet with
// remediation.DecideFleet, and carries the node's decision out in the order that makes it
// crash-safe:
//
//  1. persist: the decision's State as JSON in the GPUNode annotation
//     gpunode.dev/remediation-state, in the same update as the agent's request
//     (spec.remediation: capture-evidence, reset-gpu, reboot-node, power-cycle) and the
//     acceptance request (spec.acceptanceGeneration);
//  2. hold: place or release the hold of owner "remediation" on the Node (nodeops);
//  3. act: the controller's own actions: evict-pods through the Eviction API (exactly the
//     pods status.gpuHealth lists on the step's GPUs), and reload-driver (the driver pods
//     the pool's driverPodSelector finds on the node, recorded by UID in the annotation
//     gpunode.dev/remediation-controller-step before they are deleted; Succeeded once a
//     replacement is Ready);
//  4. mirror: a summary into status.remediation, with the phase the state claims
//     (status.remediation.phase, which the acceptance controller turns into status.phase
//     through internal/lifecycle), and Events.
//
// Every write is a server-side apply as gpunode-remediation with exactly the fields it
// owns (apply.go); the read-decide-write ones carry the object's resourceVersion.
//
// It runs one worker so that the budget every pass computes counts the holds the
// previous passes placed (a pass that changes remediation's hold waits for the Node
// metadata cache to show it). A GPUNode change that brings a new fault is queued first;
// a tripped breaker sets the GPUNodePolicy's RemediationPaused condition; a hold released
// in a pool re-examines the pool's nodes that wait for budget. docs/remediation.md has the
// controller's behaviour in full.
package remediation
