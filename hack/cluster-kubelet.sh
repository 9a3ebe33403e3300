#!/usr/bin/env bash
# cluster-kubelet.sh start|stop|restart: the test cluster's kubelet (hack/cluster-up.sh), on
# its own so that a test can restart it the way a node's service manager would.
set -euo pipefail
STATE="${CLUSTER_STATE:-/tmp/gpunode-cluster}"
holder=$(cat "$STATE/holder.pid")
node=$(cat "$STATE/node-name")
stop() {
  local pid; pid=$(cat "$STATE/pids/kubelet" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
start() {
  nsenter -t "$holder" -m -n -- env PATH="$STATE/bin:$PATH" setsid "$STATE/bin/kubelet" --config /etc/kubernetes/kubelet.yaml \
    --kubeconfig "$STATE/kubelet.kubeconfig" --hostname-override "$node" --node-ip 10.200.0.1 \
    >>"$STATE/logs/kubelet.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/kubelet"
}
case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "usage: cluster-kubelet.sh start|stop|restart" >&2; exit 2 ;;
esac
