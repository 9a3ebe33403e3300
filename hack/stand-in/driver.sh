#!/bin/sh
# The stand-in driver container (hack/stand-in-images.sh): it "loads" the driver of
# $GPUNODE_DRIVER_VERSION by writing that version to /run/nvidia/driver-version, the file the
# agent's simulated GPUs read (--sim-driver-version-file), and "unloads" it when stopped.
set -eu
v="${GPUNODE_DRIVER_VERSION:?GPUNODE_DRIVER_VERSION is not set}"
root="${DRIVER_ROOT:-/run/nvidia}"
unload() { rm -f "$root/driver-version"; echo "stand-in driver $v unloaded"; exit 0; }
trap unload TERM INT
mkdir -p "$root"
printf '%s\n' "$v" >"$root/.driver-version.tmp"
mv "$root/.driver-version.tmp" "$root/driver-version"
echo "stand-in driver $v loaded: $root/driver-version"
while :; do sleep 3600 & wait $! || true; done
