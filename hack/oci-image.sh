#!/usr/bin/env bash
# oci-image.sh ROOTFS ENTRYPOINT TAG OUT.tar: a one-layer container image of the folder
# ROOTFS, without a container engine (umoci builds the OCI layout, skopeo writes the archive
# that `ctr images import` and `docker load` read). Reproducible: every file's time and the
# image's creation time are SOURCE_DATE_EPOCH (default 0), owners are root, so the same
# ROOTFS gives the same layer and the same image ID.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: oci-image.sh ROOTFS ENTRYPOINT TAG OUT.tar" >&2; exit 2; }
rootfs=$1 entrypoint=$2 tag=$3 out=$4
[[ -d "$rootfs" ]] || { echo "oci-image.sh: $rootfs: not a folder" >&2; exit 2; }
epoch="${SOURCE_DATE_EPOCH:-0}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"

w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
find "$rootfs" -exec touch -h -d "@$epoch" {} +
umoci init --layout "$w/oci"
umoci new --image "$w/oci:img"
umoci insert --image "$w/oci:img" --history.created "$created" \
  --history.created_by "gpunode hack/oci-image.sh" "$rootfs" /
umoci config --image "$w/oci:img" --created "$created" --config.entrypoint "$entrypoint" \
  --config.workingdir / --no-history
umoci gc --layout "$w/oci"
rm -f "$out.tmp"
skopeo copy --quiet "oci:$w/oci:img" "docker-archive:$out.tmp:$tag" >&2
mv "$out.tmp" "$out"
