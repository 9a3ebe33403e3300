// Package lifecycle decides a GPU node's lifecycle phase, its InService condition and the
// holds GPUNode status lists, from the node's facts alone: its holds (the Node's
// gpunode.dev/holds annotation), the acceptance verdict (the Accepted condition), whether
// the agent published the node's inventory, and the phase remediation's state claims
// (status.remediation.phase). It is one pure function, Decide; the acceptance controller
// is its one writer (field manager gpunode-acceptance), so no two components write
// status.phase.
//
// The phases (docs/architecture.md): Discovered → Accepting → InService; InService →
// Suspect → Quarantined → Recovering → Accepting → InService | Maintenance; Upgrading →
// Accepting; any phase → AgentLost → the phase its facts give once the agent is back.
package lifecycle
