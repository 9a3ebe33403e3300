// Package nodeops takes GPU nodes in and out of service through holds.
//
// Every reason a node is out of service (a fault, an upgrade, acceptance, an operator) is a
// Hold with an owner, a reason and a start time, recorded in the node annotation
// gpunode.dev/holds. The node is schedulable only when it holds none: while any hold remains
// it carries the taint gpunode.dev/unschedulable=<reason of the oldest hold>:NoSchedule, and
// while an "acceptance" hold exists it also carries gpunode.dev/not-accepted:NoSchedule.
// Only the owner of a hold releases it.
//
// Decisions are pure functions (Add, Release, DesiredTaints, ParseHolds); Ops applies them
// to the API server in one optimistic-concurrency write per change.
//
// What this package never does:
//
//   - It never touches node.spec.unschedulable. Cordon belongs to people and to other tools
//     (kubectl drain, cluster autoscalers, upgrade tools); tools fighting over that one bit,
//     each uncordoning a node another still needs cordoned, is the problem gpunode solves.
//     Holds are additive and owned, so gpunode keeps its reasons in its own taints and
//     leaves the cordon bit to whoever set it.
//   - It never removes or rewrites a taint or annotation it does not own. gpunode owns only
//     the NoSchedule taints with keys gpunode.dev/unschedulable and gpunode.dev/not-accepted
//     and the annotation gpunode.dev/holds.
//   - It never silently overwrites a malformed holds annotation. The annotation may record
//     holds of owners gpunode cannot read any more; dropping them would put a node back in
//     service that someone wanted out. Ops refuses to act on such a node and returns an
//     error (ErrMalformedHolds) naming the node and the annotation; the node keeps the
//     taints it has (it stays out of service if it was). Repair is a person's act: fix the
//     JSON, or delete the annotation (kubectl annotate node NAME gpunode.dev/holds-), after
//     which the next Hold or Release writes a fresh one.
//
// One adoption rule: a node that carries gpunode.dev/not-accepted:NoSchedule but records no
// acceptance hold (the kubelet registered it with --register-with-taints, before gpunode ever
// wrote to it) is treated as held by "acceptance" since the node's creation (see
// AdoptRegistrationTaint). Without it, the first unrelated Hold or Release would drop the
// taint and put a node in service that was never accepted.
package nodeops
