// Package evidence writes the evidence bundle a node keeps before any destructive recovery
// step (a GPU reset, a driver reload, a reboot) erases what caused the fault.
//
// A bundle is one gzip-compressed tar archive in a host folder (e.g.
// /var/lib/gpunode/evidence) holding, after its manifest:
//
//	manifest.json   schema version, node, trigger finding, GPUs, created time, and for every
//	                other file its size, sha256, item counts and any truncation
//	node.json       node facts: node name, boot id, kernel, driver and CUDA versions
//	findings.json   the trigger finding first, then every finding of the node
//	kernel.json     the kernel-log records of the window around the event
//	gpu.json        the full GPU snapshot(s), per-field read errors included
//	pods.json       the pods on the affected GPUs (from the kubelet's pod-resources API)
//	health.json     the health monitor's per-GPU state and counters
//	errors.json     what could not be collected, and why ({} when every source answered)
//
// The pieces:
//
//   - Build (pure) turns Contents and Limits into the archive's files and its manifest:
//     each section is capped in bytes, items are dropped in a documented order of
//     importance, and what was dropped is recorded in the manifest; a total cap bounds the
//     sum.
//   - Encode (pure) writes them as a deterministic tar+gzip stream: fixed headers, the
//     bundle's created time as every file's mtime, no gzip name or time. The same Contents
//     give the same bytes, so the same sha256.
//   - Store writes an archive atomically (temporary file, fsync, rename, fsync of the
//     folder) under a name made of the node, the created time and the archive's sha256,
//     then applies retention (Prune: count, age, total bytes; oldest first; never the
//     bundle just written).
//   - Verify re-reads an archive: the file's sha256 against its name, the manifest's
//     schema, and every file's size and sha256 against the manifest.
//   - Collector gathers Contents from the node's sources (GPU backend, kernel log, monitor,
//     pod resources); a source that fails is recorded in errors.json, never fatal: a
//     partial bundle before a reset is worth more than none.
//
// Summary is what goes into the GPUNode status and an Event: archive hash, manifest hash,
// path, size, created time, trigger and counts. docs/evidence.md describes the format.
package evidence
