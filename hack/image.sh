#!/usr/bin/env bash
# image.sh OUT.tar [TAG]: the gpunode image without a container engine, from the binary the
# tests build and Debian's packages (no base image is pulled). The same layout and entrypoint
# as the Dockerfile's (a test compares them): /usr/bin/gpunode, ENTRYPOINT ["/usr/bin/gpunode"],
# glibc and its loader (cgo: the NVML adapter dlopens libnvidia-ml.so.1), CA certificates,
# /etc/passwd and /etc/group with root and nonroot (65532), a world-writable /tmp.
# The Dockerfile's base is distroless/base-debian13; this one takes glibc from the Debian
# release of the machine that builds it, the release the binary was linked against.
#
# TAG defaults to the chart's default image reference (ghcr.io/gpunode/gpunode:APPVERSION), so
# the chart's imagePullPolicy IfNotPresent never pulls. Reproducible: the same commit and the
# same Debian packages give the same image ID (SOURCE_DATE_EPOCH is the commit's time).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: image.sh OUT.tar [TAG]" >&2; exit 2; }
out=$1
app=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/gpunode/Chart.yaml)
tag=${2:-ghcr.io/gpunode/gpunode:$app}
commit=$(git rev-parse HEAD 2>/dev/null || echo "")
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
root="$w/rootfs"
mkdir -p "$root/usr/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot" "$root/var/lib"

# The binary: the Dockerfile's build command, flag for flag.
CGO_ENABLED=1 go build -trimpath \
  -ldflags "-s -w -X github.com/gpunode/gpunode/internal/buildinfo.version=$app -X github.com/gpunode/gpunode/internal/buildinfo.commit=$commit" \
  -o "$root/usr/bin/gpunode" ./cmd/gpunode

# glibc from Debian's own package, unpacked (dpkg-deb -x runs no maintainer script).
# A machine that never ran apt-get update has no package lists: update once, then retry.
(cd "$w" && apt-get download libc6 >/dev/null 2>&1) \
  || { apt-get update -qq >&2 && (cd "$w" && apt-get download libc6 >&2); } \
  || { echo "image.sh: apt-get download libc6 failed" >&2; exit 1; }
dpkg-deb -x "$w"/libc6_*.deb "$root"
rm -rf "$root/usr/share/doc" "$root/usr/share/lintian" "$root/usr/share/locale"
# Debian 12 is merged-/usr: /lib and /lib64 are links into /usr.
[[ -e "$root/lib" ]] || ln -s usr/lib "$root/lib"
[[ -e "$root/lib64" ]] || ln -s usr/lib64 "$root/lib64"
[[ -f /etc/ssl/certs/ca-certificates.crt ]] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"
chown 65532:65532 "$root/home/nonroot"

# The binary must start in this root: its loader and glibc are the image's own.
chroot "$root" /usr/bin/gpunode version >&2

bash hack/oci-image.sh "$root" /usr/bin/gpunode "$tag" "$out"
echo "$tag"
