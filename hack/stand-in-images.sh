#!/usr/bin/env bash
# stand-in-images.sh OUTDIR [DRIVER_VERSION] [TOOLKIT_VERSION]: the stand-in operand images
# of the real-cluster tier, without a container engine (hack/oci-image.sh), for clusters that
# cannot pull NVIDIA's: OUTDIR/driver.tar (localhost/gpunode-test/driver:DRIVER_VERSION,
# default 580.95.05) and OUTDIR/toolkit.tar (localhost/gpunode-test/container-toolkit:vTOOLKIT_VERSION,
# default 1.18.0). Each is Debian's static busybox and one script (hack/stand-in/): the
# driver writes the version file the simulated GPUs read, the toolkit a containerd drop-in
# and a CDI spec. A StackPool names them as repository + version, as it names NVIDIA's.
# Prints the two references.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 1 && $# -le 3 ]] || { echo "usage: stand-in-images.sh OUTDIR [DRIVER_VERSION] [TOOLKIT_VERSION]" >&2; exit 2; }
out=$1 driver=${2:-580.95.05} toolkit=${3:-1.18.0}
[[ -x /bin/busybox ]] || { echo "stand-in-images.sh: needs Debian's busybox-static (/bin/busybox)" >&2; exit 1; }
mkdir -p "$out"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
image() { # image NAME SCRIPT TAG
  local root="$w/$1"
  mkdir -p "$root/bin" "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for n in sh mkdir mv rm sleep cat printf echo; do ln -s busybox "$root/bin/$n"; done
  install -m 0755 "$2" "$root/bin/stand-in-$1"
  bash hack/oci-image.sh "$root" "/bin/stand-in-$1" "$3" "$out/$1.tar"
  echo "$3"
}
image driver hack/stand-in/driver.sh "localhost/gpunode-test/driver:$driver"
image toolkit hack/stand-in/toolkit.sh "localhost/gpunode-test/container-toolkit:v$toolkit"
