// Package upgrade is the planner of StackUpgrades: pure functions of the pool's facts, the
// upgrade's spec and the clock. CheckMatrix says whether an upgrade may run at all (its
// target satisfies the version matrix, its pool has nodes, no older running upgrade holds
// the same nodes); PickCanaries picks the nodes upgraded first; Decide says which nodes
// start now — canaries first, a soak after the canaries and after each wave, at most
// MaxPerDomain unavailable nodes per failure domain and MaxUnavailable in the pool counting
// every owner's holds, never a node in remediation, nothing new after a failed gate.
//
// The upgrade controller (internal/controller/upgrade) gathers the facts and carries the
// decisions out; nothing here reads the cluster.
package upgrade
