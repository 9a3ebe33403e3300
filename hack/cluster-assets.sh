#!/usr/bin/env bash
# cluster-assets.sh: everything the real-cluster test tier (test/cluster) needs beyond the
# Kubernetes binaries of hack/k8s-test-assets.sh, from the Go module proxy and Debian's
# packages only (no prebuilt binary or image is downloaded), into a cache outside the repo.
# Re-runs are a no-op when everything is there.
#
#   Debian packages  runc, containernetworking-plugins (CNI bridge, host-local, loopback),
#                    umoci and skopeo (OCI images without a daemon), busybox-static, iproute2,
#                    util-linux (unshare, nsenter), openssl (the cluster's certificates); installed
#                    with apt-get when missing (root)
#   containerd 2.x   containerd, containerd-shim-runc-v2, ctr, built from the module proxy:
#                    Debian 12's containerd 1.6 has no CDI, which the device plugin's cdi-cri
#                    strategy needs (containerd 1.7 or later)
#   helm             built from the module proxy with its version ldflags (without them an
#                    offline `helm template` assumes Kubernetes v1.20)
#   pause image      kubernetes' own build/pause/linux/pause.c, gcc -static, as an OCI archive
#
# stdout: one line, the folder holding bin/ (helm, containerd, containerd-shim-runc-v2, ctr)
# and images/pause.tar. Logs go to stderr.
#   CLUSTER_ASSETS="$(bash hack/cluster-assets.sh)"
#
# Env knobs:
#   CONTAINERD_VERSION  (default v2.4.2)   HELM_VERSION (default v3.22.0)
#   K8S_VERSION         the pause source   (default v1.37.2)
#   K8S_ASSETS_CACHE    cache root         (default ${XDG_CACHE_HOME:-$HOME/.cache}/k8s-test-assets)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "$0")" && pwd)"

CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CACHE_ROOT="${K8S_ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-test-assets}"
DEBIAN_PACKAGES=(runc containernetworking-plugins umoci skopeo busybox-static iproute2 util-linux openssl)

export PATH="/usr/local/go/bin:$PATH"
export GOWORK=off GOFLAGS=-mod=mod

log() { echo "[cluster-assets] $*" >&2; }
now() { date +%s; }
moddir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

mkdir -p "$CACHE_ROOT"
cd "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock-cluster"
flock 9

platform="$(go env GOOS)-$(go env GOARCH)"
OUT="$CACHE_ROOT/cluster-containerd-$CONTAINERD_VERSION-helm-$HELM_VERSION-$platform"
mkdir -p "$OUT/bin" "$OUT/images"

debian_packages() {
  local missing=() p
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && { log "Debian packages installed"; return; }
  [[ $(id -u) -eq 0 ]] || { log "missing Debian packages (install them as root): ${missing[*]}"; exit 1; }
  local t0; t0=$(now)
  log "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  log "Debian packages installed in $(( $(now) - t0 ))s"
}

build_containerd() {
  [[ -x "$OUT/bin/containerd" && -x "$OUT/bin/containerd-shim-runc-v2" && -x "$OUT/bin/ctr" ]] && {
    log "containerd $CONTAINERD_VERSION cached"; return; }
  local t0 src w pkg; t0=$(now)
  log "building containerd $CONTAINERD_VERSION"
  src=$(moddir "github.com/containerd/containerd/v2@$CONTAINERD_VERSION")
  w=$(mktemp -d "$CACHE_ROOT/tmp.containerd.XXXXXX")
  cp -r "$src/." "$w/"; chmod -R u+w "$w"
  pkg=github.com/containerd/containerd/v2/version
  (
    cd "$w"
    # Static, no cgo: no btrfs or devmapper snapshotters (overlayfs and native are enough).
    CGO_ENABLED=0 go build -trimpath -tags "urfave_cli_no_docs no_btrfs no_devmapper no_zfs" \
      -ldflags "-s -w -X $pkg.Version=$CONTAINERD_VERSION -X $pkg.Package=github.com/containerd/containerd/v2" \
      -o out/ ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr >&2
  )
  mv "$w"/out/* "$OUT/bin/"; rm -rf "$w"
  "$OUT/bin/containerd" --version >&2
  log "containerd built in $(( $(now) - t0 ))s"
}

build_helm() {
  [[ -x "$OUT/bin/helm" ]] && { log "helm $HELM_VERSION cached"; return; }
  local t0 src w kv major minor ld; t0=$(now)
  log "building helm $HELM_VERSION"
  src=$(moddir "helm.sh/helm/v3@$HELM_VERSION")
  w=$(mktemp -d "$CACHE_ROOT/tmp.helm.XXXXXX")
  cp -r "$src/." "$w/"; chmod -R u+w "$w"
  (
    cd "$w"
    # The Kubernetes version helm assumes offline: its client-go's, as helm's Makefile does.
    kv=$(go list -m -f '{{.Version}}' k8s.io/client-go); kv=${kv#v}
    major=$(( ${kv%%.*} + 1 )); minor=${kv#*.}; minor=${minor%%.*}
    ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ld+=" -X $p.k8sVersionMajor=$major -X $p.k8sVersionMinor=$minor"
    done
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o out/helm ./cmd/helm >&2
  )
  mv "$w/out/helm" "$OUT/bin/helm"; rm -rf "$w"
  "$OUT/bin/helm" version --short >&2
  log "helm built in $(( $(now) - t0 ))s"
}

build_pause() {
  [[ -f "$OUT/images/pause.tar" ]] && { log "pause image cached"; return; }
  local t0 src w; t0=$(now)
  log "building the pause image from kubernetes $K8S_VERSION's pause.c"
  src=$(moddir "k8s.io/kubernetes@$K8S_VERSION")
  w=$(mktemp -d "$CACHE_ROOT/tmp.pause.XXXXXX")
  mkdir -p "$w/rootfs"
  gcc -Os -static -Wall -Werror -DVERSION="$K8S_VERSION" -o "$w/rootfs/pause" "$src/build/pause/linux/pause.c"
  strip "$w/rootfs/pause"
  bash "$HACK_DIR/oci-image.sh" "$w/rootfs" /pause registry.k8s.io/pause:3.10 "$w/pause.tar" >&2
  mv "$w/pause.tar" "$OUT/images/pause.tar"; rm -rf "$w"
  log "pause image built in $(( $(now) - t0 ))s"
}

rm -rf "$CACHE_ROOT"/tmp.containerd.* "$CACHE_ROOT"/tmp.helm.* "$CACHE_ROOT"/tmp.pause.*
debian_packages
build_containerd
build_helm
build_pause
echo "$OUT"
