// Package stack is the stack controller: it deploys and judges the operands of StackPools
// (the GPU driver and the NVIDIA container toolkit) on the nodes each pool selects.
//
// Two reconcilers share the package's pure decisions:
//   - NodeReconciler, one pass per Node: its pool (Member: the one StackPool that selects
//     it, or a conflict), the gpunode.dev/stack-pool label, and the stack hold (Readiness,
//     DecideNode).
//   - PoolReconciler, one pass per StackPool: its DaemonSets (Render, one per operand whose
//     source is Container and that the GPU Operator does not own, updateStrategy OnDelete)
//     and its status (Aggregate).
//
// Both write with server-side apply as gpunode-stack, and take holds through
// internal/nodeops as owner stack. docs/stack.md is the model.
package stack
