#!/usr/bin/env bash
# helm.sh: the helm binary the chart's tests (test/chart) and the real-cluster tier run, built
# from the Go module proxy (the version go.mod pins for the chart tests' Helm packages) with
# its version ldflags (without them an offline `helm template` assumes Kubernetes v1.20), into
# a cache outside the repo. A re-run is a no-op when it is there.
#
# stdout: one line, the helm binary. Logs go to stderr.
#   export GPUNODE_HELM="$(bash hack/helm.sh)"
#
# Env knobs:
#   HELM_VERSION      (default v3.22.0)
#   K8S_ASSETS_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/k8s-test-assets)
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${K8S_ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-test-assets}"

export PATH="/usr/local/go/bin:$PATH"
export GOWORK=off GOFLAGS=-mod=mod

log() { echo "[helm] $*" >&2; }
now() { date +%s; }

mkdir -p "$CACHE_ROOT"
cd "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock-helm"
flock 9

OUT="$CACHE_ROOT/helm-$HELM_VERSION-$(go env GOOS)-$(go env GOARCH)"
if [[ -x "$OUT/helm" ]]; then
  log "helm $HELM_VERSION cached"
  echo "$OUT/helm"
  exit 0
fi
rm -rf "$CACHE_ROOT"/tmp.helmbin.*   # its own only: hack/cluster-assets.sh builds in tmp.helm.*
t0=$(now)
log "building helm $HELM_VERSION"
src=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
w=$(mktemp -d "$CACHE_ROOT/tmp.helmbin.XXXXXX")
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
mkdir -p "$OUT"
mv "$w/out/helm" "$OUT/helm"; rm -rf "$w"
"$OUT/helm" version --short >&2
log "helm built in $(( $(now) - t0 ))s"
echo "$OUT/helm"
