#!/usr/bin/env bash
# The project's one test command (README.md, .ci/run): formatting, vet, lint, unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [[ -n "$unformatted" ]]; then
  echo "these files need gofmt -w:"; echo "$unformatted"; exit 1
fi

echo "== generated code (controller-gen: deepcopy, CRDs and RBAC) is up to date"
# Regenerate in place and compare with a snapshot taken before. This does not depend on git:
# it gives the same answer on a fresh CI clone (stale or uncommitted outputs fail) and on a
# working tree where the outputs are new and not yet committed (git status would call them
# untracked, not stale). The generated files are deleted first so that an output no longer
# produced (a removed kind's CRD) shows up as a difference too. On failure the tree holds the
# fresh outputs: review and commit them.
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
cp -R api "$snapshot/api"; mkdir -p config/crd config/rbac; cp -R config/crd "$snapshot/crd"
cp -R config/rbac "$snapshot/rbac"
rm -f api/*/zz_generated.*.go config/crd/gpunode.dev_*.yaml config/rbac/controller/role.yaml config/rbac/agent/role.yaml
go generate ./api/... ./internal/controller/... ./internal/agent/...
if ! diff -r "$snapshot/api" api || ! diff -r "$snapshot/crd" config/crd || ! diff -r "$snapshot/rbac" config/rbac; then
  echo "generated code is stale: run go generate ./api/... ./internal/controller/... ./internal/agent/... (and commit the result)"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== golangci-lint (pinned in go.mod as a tool)"
go tool golangci-lint run ./...

echo "== dead code (golang.org/x/tools/cmd/deadcode from cmd/gpunode, pinned in go.mod as a tool)"
# Every function the binary cannot reach fails the check unless hack/deadcode-allow.txt names
# it with a reason; an entry there that is reachable again (or gone) fails it too.
module=$(go list -m)
dead=$(go tool deadcode -f '{{range .Funcs}}{{$.Path}}.{{.Name}}{{"\n"}}{{end}}' ./cmd/gpunode | sed "s|^$module/||" | sort -u)
allowed=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' hack/deadcode-allow.txt | sort -u)
unexpected=$(comm -23 <(echo "$dead") <(echo "$allowed") | sed '/^$/d')
stale=$(comm -13 <(echo "$dead") <(echo "$allowed") | sed '/^$/d')
if [[ -n "$unexpected" ]]; then
  echo "functions the binary never reaches (delete them, wire them, or add them to hack/deadcode-allow.txt with why):"
  echo "$unexpected"; exit 1
fi
if [[ -n "$stale" ]]; then
  echo "hack/deadcode-allow.txt names functions that are no longer dead code (remove them there):"
  echo "$stale"; exit 1
fi

echo "== go build (CGO_ENABLED=1: the NVML adapter dlopens libnvidia-ml.so.1 at run time)"
CGO_ENABLED=1 go build -o /dev/null ./cmd/gpunode

echo "== go test"
# The API-server integration tests (internal/testenv) need etcd and kube-apiserver: the script
# builds them from the Go module proxy into a cache outside the repo (about 12 minutes cold,
# instant when warm) and prints their folder. Under CI=true those tests fail without them.
KUBEBUILDER_ASSETS="$(bash hack/k8s-test-assets.sh)"
export KUBEBUILDER_ASSETS
# The chart's tests (test/chart) run the real helm binary (helm template, lint, package):
# hack/helm.sh builds it from the Go module proxy into the same cache. Under CI=true those
# tests fail without it.
GPUNODE_HELM="$(bash hack/helm.sh)"
export GPUNODE_HELM
# The real-cluster tier (test/cluster) needs containerd 2.x, helm, the pause image and Debian's
# runc, CNI plugins, umoci and skopeo (hack/cluster-assets.sh: cached outside the repo like the
# API-server assets; about 15 minutes cold). It needs root; without it the tier says why it
# skips (and fails under CI=true).
if [[ $(id -u) -eq 0 || "${CI:-}" == true ]]; then
  GPUNODE_CLUSTER_ASSETS="$(bash hack/cluster-assets.sh)"
  export GPUNODE_CLUSTER_ASSETS
fi
go test -count=1 $(go list ./... | grep -v '/test/cluster$')

echo "== fuzz targets, a short run each (CI=true; GPUNODE_FUZZTIME, default 4s)"
# Every func Fuzz* in a test file runs, found here so that a new one needs no entry: one
# invocation per target (go test -fuzz takes one target of one package). A failing input is
# written under the package's testdata/fuzz/ and the step fails; commit the input with the
# fix, and plain go test replays it from then on. docs/testing.md lists the targets.
# A package that links the Kubernetes client needs a coverage-instrumented build of it first
# (many minutes on two cores): its targets are fuzzed with GPUNODE_FUZZ_ALL=1; without it
# their seed inputs run as plain tests in the step above, and this step says so.
if [[ "${CI:-}" == true ]]; then
  while IFS=: read -r file name; do
    pkg="./$(dirname "$file")"
    deps=$(go list -test -deps "$pkg") # whole, before grep: grep -q closing the pipe early would fail it under pipefail
    if [[ "${GPUNODE_FUZZ_ALL:-}" != 1 ]] && grep -q '^k8s.io/\(client-go\|apimachinery\)/' <<<"$deps"; then
      echo "-- $name ($pkg): seeds only (links the Kubernetes client; GPUNODE_FUZZ_ALL=1 fuzzes it)"
      continue
    fi
    echo "-- $name ($pkg)"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "${GPUNODE_FUZZTIME:-4s}" "$pkg"
  done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' internal | sed 's/:func /:/' | sort -u)
fi

echo "== the real-cluster tier (test/cluster)"
# On its own, after the rest: it brings up a kubelet, containerd and a control plane, and the
# machine's two cores are not shared with the other packages' tests.
go test -count=1 -timeout 45m -v ./test/cluster/
