# syntax=docker/dockerfile:1
# The gpunode image: one binary for every role (agent, controller, exporter, accept).
#
# The recipe for machines with a container engine. `hack/image.sh OUT.tar` builds the same image
# without one (the binary the tests build, glibc from Debian's package, umoci and skopeo): the
# same layout, entrypoint and build flags, which test/cluster checks against this file; the
# real-cluster tests run that image. See docs/install.md.
#
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/gpunode/gpunode:v0.1.0 .
#
# cgo is on: the NVML adapter dlopens libnvidia-ml.so.1 at run time, which needs glibc's
# dynamic loader in the runtime image. The image carries no NVIDIA library: the NVIDIA
# container runtime mounts the node's libnvidia-ml and device nodes (the chart's
# runtimeClassName and NVIDIA_VISIBLE_DEVICES=all), so the image works with any driver version.
#
# Builder and runtime are the same Debian release (trixie, 13): a binary linked against a newer
# glibc than the runtime's does not start.

FROM golang:1.26-trixie AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath \
      -ldflags "-s -w -X github.com/gpunode/gpunode/internal/buildinfo.version=${VERSION} -X github.com/gpunode/gpunode/internal/buildinfo.commit=${COMMIT}" \
      -o /out/gpunode ./cmd/gpunode

# distroless/base: glibc and CA certificates, no shell, no package manager. The user is set by
# the chart: root for the agent and exporter (host files, the kubelet's sockets), 65532 for
# the controller.
FROM gcr.io/distroless/base-debian13
COPY --from=build /out/gpunode /usr/bin/gpunode
ENTRYPOINT ["/usr/bin/gpunode"]
