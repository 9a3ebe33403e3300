// Package upgrade is the upgrade controller: for each StackUpgrade it reads the pool's
// member nodes, refuses an upgrade the planner's CheckMatrix refuses (Accepted=False with the
// reason), and reports what the planner's Decide would do now (phase, wave, canaries,
// counts, message) in the StackUpgrade's status, applied with field manager
// gpunode-upgrade.
//
// It does not move nodes yet: holding, draining, moving a node to the target versions and
// gating it on acceptance are not built, and the controller command does not run it.
package upgrade
