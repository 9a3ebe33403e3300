// Package acceptance is the controller's acceptance gate: it selects a GPUNodePolicy for
// each GPUNode (the built-in defaults, nodepolicy.BuiltIn, when none selects it), asks the
// node's agent for an acceptance run when the node is new or its policy, inventory or
// driver changed, judges the AcceptanceRecord the agent publishes against the policy, and
// releases the node's "acceptance" hold when the run passes or keeps it, with the reason in
// status and an Event, when it fails.
//
// It also watches the agent's heartbeat (status.agent.heartbeatTime): a node whose agent
// sent none for the policy's agentLostAfter is held (owner liveness, reason agent-lost,
// phase AgentLost) until a heartbeat comes again and its GPUs are healthy (liveness.go,
// DecideAgent). Heartbeat-only updates do not enqueue a node; each pass asks to run again
// when the latest heartbeat turns stale.
//
// With the record it judges acceptance layer L2, what Kubernetes sees of the node (the Node
// Ready, allocatable GPUs as the agent counted them, labels, kubelet, taints, the
// device-plugin pod): the result is the condition KubernetesInventory and an Event, and a
// failure holds the node when the policy's layers include "kubernetes"
// (docs/acceptance-l2.md).
//
// It is the one writer of the node's lifecycle: status.phase, status.holds and the
// InService condition, decided by internal/lifecycle from the holds, the Accepted verdict,
// the published inventory and the phase remediation claims (status.remediation.phase).
//
// The decisions are pure functions of the GPUNode, the Node, the policies, the record, the
// pods on the node and a clock (decide.go, evaluate.go, liveness.go, kubernetes_*.go,
// internal/lifecycle); Reconciler applies them in ordered, re-entrant phases and applies
// the status fields it owns once, at the end of each pass, with server-side apply as
// gpunode-acceptance (apply.go).
//
// The protocol with the agent: the controller raises spec.acceptanceGeneration (and sets
// spec.acceptanceReason); the agent runs acceptance whenever that number is above
// status.lastAcceptance.generation, creates an AcceptanceRecord carrying it and names the
// record in status.lastAcceptance. What the request was made for (the policy and its hash,
// the inventory and the driver) is recorded, in the same write as the raised number, in the
// GPUNode annotation gpunode.dev/acceptance-basis; a later difference asks again.
package acceptance
