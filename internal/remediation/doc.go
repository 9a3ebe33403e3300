// Package remediation decides what to do about a faulty GPU node: the lifecycle
// (Suspect → Quarantined → Recovering → Accepting → back in service | Maintenance), the
// recovery ladder (restart-app → reset-gpu → reload-driver → reboot-node → power-cycle →
// Maintenance), one safety budget per pool and failure domain, and a circuit breaker per
// pool. docs/remediation.md has the rules and the reasons.
//
// Everything here is a pure function of facts, a policy and a clock; nothing reads the
// time or talks to Kubernetes:
//
//   - Assess reads what a node's faults call for (Need).
//   - PlanFleet evaluates every pool's Breaker and the budget over the whole fleet and
//     gives each node an Admission (Admit, EvaluateBreaker are its parts).
//   - DecideFleet does that, then gives each node its next move (Decision): a phase, a
//     hold to place or release, actions to carry out, and the State to persist.
//   - Explain accounts for a node from the same inputs (`gpunode explain node NAME`).
//
// The contract with the reconciler, which makes the decisions crash-safe: persist
// Decision.State first, then apply Decision.Hold, then carry out Decision.Actions. A step
// recorded as started is never started again; a decision made after a crash waits for the
// step's outcome or times it out and escalates. Actions are only ever given while the
// facts show remediation's hold, so no action runs on a node that could take new work.
package remediation
