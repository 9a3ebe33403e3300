#!/usr/bin/env bash
# cluster-exec.sh COMMAND [ARGS...]: run a command inside the test cluster's namespaces
# (hack/cluster-up.sh), with KUBECONFIG set to its admin credentials and its binaries
# (kubectl, helm, ctr) first on PATH:
#   bash hack/cluster-exec.sh kubectl get nodes
#   bash hack/cluster-exec.sh helm list -A
set -euo pipefail
STATE="${CLUSTER_STATE:-/tmp/gpunode-cluster}"
[[ $# -ge 1 ]] || { echo "usage: cluster-exec.sh COMMAND [ARGS...]" >&2; exit 2; }
holder=$(cat "$STATE/holder.pid" 2>/dev/null) && kill -0 "$holder" 2>/dev/null \
  || { echo "cluster-exec.sh: no cluster is up in $STATE (hack/cluster-up.sh)" >&2; exit 1; }
exec nsenter -t "$holder" -m -n --wd="$PWD" -- env KUBECONFIG="$STATE/admin.kubeconfig" \
  PATH="$STATE/bin:$PATH" HELM_CACHE_HOME="$STATE/helm/cache" HELM_CONFIG_HOME="$STATE/helm/config" \
  HELM_DATA_HOME="$STATE/helm/data" CONTAINERD_ADDRESS=/run/containerd/containerd.sock "$@"
