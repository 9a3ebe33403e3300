#!/usr/bin/env bash
# cluster-down.sh: take the test cluster of hack/cluster-up.sh down and leave nothing behind:
# every process in its namespaces (the control plane, containerd, its shims and the pods'
# processes) killed by PID, the kubelet's cgroups removed, the namespaces (and with them
# every mount made inside) gone with their last process, the state folder deleted.
# KEEP_STATE=1 keeps the state folder (logs) for a look after a failure.
set -uo pipefail
STATE="${CLUSTER_STATE:-/tmp/gpunode-cluster}"
[[ -f "$STATE/.gpunode-cluster" ]] || { echo "cluster-down.sh: no cluster state in $STATE" >&2; exit 0; }
CGROUP_ROOT=$(cat "$STATE/cgroup-root" 2>/dev/null || echo gpunode-cluster)
holder=$(cat "$STATE/holder.pid" 2>/dev/null || true)
if [[ -n "$holder" && -e /proc/$holder/ns/mnt ]]; then
  ns=$(readlink "/proc/$holder/ns/mnt")
  # Every process in the cluster's mount namespace (containers have their own: they are
  # found through their cgroups below). Kill until none is left.
  for _ in 1 2 3 4 5; do
    pids=()
    for p in /proc/[0-9]*; do
      [[ "$(readlink "$p/ns/mnt" 2>/dev/null)" == "$ns" ]] && pids+=("${p#/proc/}")
    done
    [[ ${#pids[@]} -eq 0 ]] && break
    kill -9 "${pids[@]}" 2>/dev/null
    sleep 0.5
  done
fi
# Container processes (own namespaces) live in the kubelet's cgroups.
for _ in 1 2 3 4 5; do
  left=0
  for f in /sys/fs/cgroup/*/"$CGROUP_ROOT" /sys/fs/cgroup/"$CGROUP_ROOT"; do
    [[ -d "$f" ]] || continue
    while read -r p; do [[ -n "$p" ]] && { kill -9 "$p" 2>/dev/null; left=1; }; done < <(find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  [[ $left -eq 0 ]] && break
  sleep 0.5
done
for f in /sys/fs/cgroup/*/"$CGROUP_ROOT" /sys/fs/cgroup/"$CGROUP_ROOT"; do
  [[ -d "$f" ]] && find "$f" -depth -type d -exec rmdir {} + 2>/dev/null
done
still=$(ls -d /sys/fs/cgroup/*/"$CGROUP_ROOT" 2>/dev/null)
[[ -n "$still" ]] && echo "cluster-down.sh: cgroups left: $still" >&2
if [[ "${KEEP_STATE:-0}" == 1 ]]; then
  rm -f "$STATE/holder.pid"
else
  rm -rf "$STATE"
fi
[[ -z "$still" ]]
