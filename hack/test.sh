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

echo "== go vet"
go vet ./...

echo "== golangci-lint (pinned in go.mod as a tool)"
go tool golangci-lint run ./...

echo "== go build (CGO_ENABLED=1: the NVML adapter dlopens libnvidia-ml.so.1 at run time)"
CGO_ENABLED=1 go build -o /dev/null ./cmd/gpunode

echo "== go test"
go test -count=1 ./...
