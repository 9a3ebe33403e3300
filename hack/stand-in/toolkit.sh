#!/bin/sh
# The stand-in container toolkit (hack/stand-in-images.sh): it writes what the toolkit
# writes, under the host paths the toolkit DaemonSet mounts: a containerd drop-in with the
# nvidia runtime (/etc/containerd/conf.d/99-nvidia.toml) and a CDI spec
# (/var/run/cdi/gpunode-stand-in-toolkit.yaml, a kind of its own so that no GPU device is
# defined twice), then stays running; it removes both when stopped.
set -eu
conf=/etc/containerd/conf.d/99-nvidia.toml
spec=/var/run/cdi/gpunode-stand-in-toolkit.yaml
stop() { rm -f "$conf" "$spec"; echo "stand-in toolkit stopped"; exit 0; }
trap stop TERM INT
mkdir -p /etc/containerd/conf.d /var/run/cdi
cat >"$conf.tmp" <<TOML
version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]
    BinaryName = "${TOOLKIT_INSTALL_DIR:-/usr/local/nvidia/toolkit}/nvidia-container-runtime"
TOML
mv "$conf.tmp" "$conf"
cat >"$spec.tmp" <<YAML
cdiVersion: "0.6.0"
kind: gpunode.dev/stand-in-toolkit
devices:
  - name: toolkit
    containerEdits:
      env: ["GPUNODE_STAND_IN_TOOLKIT=${GPUNODE_TOOLKIT_VERSION:-unknown}"]
YAML
mv "$spec.tmp" "$spec"
echo "stand-in toolkit: wrote $conf and $spec"
while :; do sleep 3600 & wait $! || true; done
