#!/usr/bin/env bash
# cluster-up.sh: a real single-node Kubernetes cluster (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, containerd 2.x with CDI, runc, CNI bridge)
# for the real-cluster test tier, in a private mount and network namespace: nothing is bound
# outside it, it has no route out, and the machine's own files and settings are not changed
# (the host paths a cluster writes are folders under $CLUSTER_STATE, mounted inside the
# namespace only). hack/cluster-down.sh takes it down and leaves nothing behind.
#
#   CLUSTER_STATE=/tmp/gpunode-cluster bash hack/cluster-up.sh   # prints the state folder
#   bash hack/cluster-exec.sh kubectl get nodes                  # a command inside it
#
# Needs root, the binaries of hack/k8s-test-assets.sh and hack/cluster-assets.sh (built when
# missing), and the images to load (IMAGES: space-separated archives; the pause image always).
#
# Env knobs:
#   CLUSTER_STATE   the state folder (default /tmp/gpunode-cluster); must not exist or be a
#                   cluster this script made (it is reused then: up is idempotent)
#   NODE_NAME       the node's name (default gpu-node-1)
#   IMAGES          image archives to import into containerd (docker-archive or OCI)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "$0")" && pwd)"
STATE="${CLUSTER_STATE:-/tmp/gpunode-cluster}"
NODE_NAME="${NODE_NAME:-gpu-node-1}"
IMAGES="${IMAGES:-}"
SERVICE_IP=10.96.0.1   # the kubernetes Service's ClusterIP: the API server listens on it
NODE_IP=10.200.0.1     # the node's address (on lo: the kernel may have no dummy driver)
POD_CIDR=10.244.0.0/24
# The kubelet's cgroup root: one per state folder, so two clusters never share one.
CGROUP_ROOT="/gpunode-cluster-$(basename "$STATE")"

log() { echo "[cluster-up] $(date +%T) $*" >&2; }
[[ $(id -u) -eq 0 ]] || { echo "cluster-up.sh: needs root" >&2; exit 1; }

K8S_ASSETS="$(bash "$HACK_DIR/k8s-test-assets.sh")"
CLUSTER_ASSETS="$(bash "$HACK_DIR/cluster-assets.sh")"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  [[ -x "$K8S_ASSETS/$b" ]] || { echo "cluster-up.sh: $K8S_ASSETS/$b missing" >&2; exit 1; }
done

if [[ -f "$STATE/holder.pid" ]] && kill -0 "$(cat "$STATE/holder.pid")" 2>/dev/null; then
  log "cluster already up in $STATE"; echo "$STATE"; exit 0
fi
if [[ -e "$STATE" && ! -f "$STATE/.gpunode-cluster" ]]; then
  echo "cluster-up.sh: $STATE exists and is not a cluster state folder" >&2; exit 1
fi
bash "$HACK_DIR/cluster-down.sh" >/dev/null 2>&1 || true
mkdir -p "$STATE"/{bin,pki,etc-upper,etc-work,usr-upper,usr-work,var-lib/kubelet,var-lib/containerd,var-lib/gpunode,var-log,etcd,logs,sysctl,pids}
touch "$STATE/.gpunode-cluster"
ln -sf "$K8S_ASSETS"/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kubectl} "$STATE/bin/"
ln -sf "$CLUSTER_ASSETS"/bin/* "$STATE/bin/"
echo "$NODE_NAME" >"$STATE/node-name"
echo "${CGROUP_ROOT#/}" >"$STATE/cgroup-root"

# --- certificates: one CA; clients by CN/O (system:masters for the admin, system:node:NAME
# for the kubelet); the API server's serving certificate for every name a client uses.
pki="$STATE/pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 30 \
  -subj "/CN=gpunode-test-ca" 2>/dev/null
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
cert() { # name subject [sans]
  local n=$1 subj=$2 sans=${3:-} ext="$pki/$1.ext"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >"$ext"
  [[ -n "$sans" ]] && echo "subjectAltName=$sans" >>"$ext"
  openssl req -newkey rsa:2048 -nodes -keyout "$pki/$n.key" -out "$pki/$n.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$pki/$n.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$n.crt" -days 30 -extfile "$ext" 2>/dev/null
}
cert apiserver "/CN=kube-apiserver" \
  "IP:$SERVICE_IP,IP:$NODE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=admin"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "IP:$NODE_IP,DNS:$NODE_NAME"
kubeconfig() { # name
  cat >"$STATE/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpunode-test
  cluster: {server: "https://127.0.0.1:443", certificate-authority: "$pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$pki/$1.crt", client-key: "$pki/$1.key"}
contexts:
- name: gpunode-test
  context: {cluster: gpunode-test, user: $1}
current-context: gpunode-test
EOF
}
for n in admin controller-manager scheduler kubelet; do kubeconfig "$n"; done

# --- configuration files (seen inside the namespace through an overlay on /etc)
mkdir -p "$STATE/etc-upper/containerd" "$STATE/etc-upper/cni/net.d" "$STATE/etc-upper/cdi" "$STATE/etc-upper/kubernetes"
cat >"$STATE/etc-upper/containerd/config.toml" <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.k8s.io/pause:3.10"
[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  # Root here may lack CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below its own.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "/etc/cni/net.d"
EOF
cat >"$STATE/etc-upper/cni/net.d/10-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gpunode-test",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false,
     "hairpinMode": true, "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]]}},
    {"type": "loopback"}
  ]
}
EOF
cat >"$STATE/etc-upper/kubernetes/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: AlwaysAllow}
address: 0.0.0.0
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
resolvConf: ""
clusterDomain: cluster.local
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
EOF
# The kernel settings the kubelet wants, as files mounted over /proc/sys in the namespace:
# it reads them, finds its values and writes nothing (the machine's stay as they are).
echo 1 >"$STATE/sysctl/overcommit_memory"; echo 10 >"$STATE/sysctl/panic"; echo 1 >"$STATE/sysctl/panic_on_oops"

# --- the namespace: a sleeping process holds a private mount and network namespace
unshare --mount --net --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
holder=$!
echo "$holder" >"$STATE/holder.pid"
for _ in $(seq 50); do [[ "$(readlink /proc/$holder/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]] && break; sleep 0.1; done
in_ns() { nsenter -t "$holder" -m -n -- "$@"; }
in_ns bash -euc "
  mount -t overlay overlay -o lowerdir=/etc,upperdir=$STATE/etc-upper,workdir=$STATE/etc-work /etc
  mount --bind $STATE/var-lib /var/lib
  # /usr as an overlay too: an operand's host paths under /usr (/lib/modules, the toolkit's
  # /usr/local/nvidia) exist in the namespace, as on a GPU node, and never on the machine.
  mount -t overlay overlay -o lowerdir=/usr,upperdir=$STATE/usr-upper,workdir=$STATE/usr-work /usr
  mkdir -p /usr/lib/modules/\$(uname -r) /usr/local/nvidia
  mount --bind $STATE/var-log /var/log
  mount -t tmpfs -o mode=755 tmpfs /run
  ln -s /dev/shm /run/shm
  mkdir -p /run/cdi /run/containerd
  mount --bind $STATE/sysctl/overcommit_memory /proc/sys/vm/overcommit_memory
  mount --bind $STATE/sysctl/panic /proc/sys/kernel/panic
  mount --bind $STATE/sysctl/panic_on_oops /proc/sys/kernel/panic_on_oops
  mount --make-rshared /
  ip link set lo up
  ip addr add $SERVICE_IP/32 dev lo
  ip addr add $NODE_IP/32 dev lo
"

# --- processes, each in the namespace, logs and PIDs in the state folder
start() { # name command...
  local n=$1; shift
  # $STATE/bin first: containerd starts the shim it finds on PATH (not an older one the
  # machine may have in /usr/bin).
  nsenter -t "$holder" -m -n -- env PATH="$STATE/bin:$PATH" setsid "$@" >"$STATE/logs/$n.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$n"
}
wait_for() { # what seconds command...
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 2; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  log "timed out after ${secs}s waiting for $what"; tail -n 30 "$STATE"/logs/*.log >&2 || true; return 1
}
kc() { in_ns "$STATE/bin/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

B="$STATE/bin"
start etcd "$B/etcd" --data-dir "$STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster default=http://127.0.0.1:2380 \
  --unsafe-no-fsync
start kube-apiserver "$B/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
  --bind-address 0.0.0.0 --secure-port 443 --advertise-address "$NODE_IP" \
  --service-cluster-ip-range 10.96.0.0/16 \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --requestheader-client-ca-file "$pki/ca.crt" --requestheader-allowed-names front-proxy-client \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP
wait_for "the API server" 180 kc get --raw /readyz
# DRA (docs/dra.md) needs no flag here: Kubernetes 1.37 serves resource.k8s.io/v1 and runs the
# controller-manager's resourceclaim and device-taint-eviction controllers, the scheduler's
# DynamicResources plugin and the kubelet's DRA manager by default, and containerd 2.x
# resolves CDI devices from cdi_spec_dirs. test/cluster's first DRA step checks them.
start kube-controller-manager "$B/kube-controller-manager" --kubeconfig "$STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key"
start kube-scheduler "$B/kube-scheduler" --kubeconfig "$STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig "$STATE/scheduler.kubeconfig" --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false
start containerd "$B/containerd" --config /etc/containerd/config.toml
wait_for "containerd" 60 in_ns "$B/ctr" --address /run/containerd/containerd.sock version
for img in "$CLUSTER_ASSETS/images/pause.tar" $IMAGES; do
  log "importing $(basename "$img")"
  in_ns "$B/ctr" --address /run/containerd/containerd.sock -n k8s.io images import "$img" >&2
done
# The kubelet's own cgroup root, in every hierarchy (cgroup v1 here: one per controller);
# cluster-down.sh removes it. A new cpuset takes its parent's CPUs and memory nodes.
for h in /sys/fs/cgroup/*/; do
  [[ -d "$h" ]] || continue
  mkdir -p "$h${CGROUP_ROOT#/}"
  if [[ -f "$h/cpuset.cpus" ]]; then
    cat "$h/cpuset.cpus" >"$h${CGROUP_ROOT#/}/cpuset.cpus"; cat "$h/cpuset.mems" >"$h${CGROUP_ROOT#/}/cpuset.mems"
  fi
done
bash "$HACK_DIR/cluster-kubelet.sh" start
wait_for "node $NODE_NAME Ready" 180 kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
wait_for "the default service account" 60 kc get serviceaccount default -n default
log "cluster up: node $NODE_NAME Ready (state $STATE)"
echo "$STATE"
