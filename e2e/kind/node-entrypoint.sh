#!/bin/bash
# Entrypoint of the offline kind node image (node-image.sh): the few fixes a kubelet 1.20
# inside a podman container needs before systemd starts. kind's own node images do more
# (cgroup v2, rootless, userns-remap); this image covers privileged podman on cgroup v1.
set -euo pipefail
# The kubelet's volume mounts must propagate into the containers it starts.
mount --make-rshared /
if [[ ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
  # cgroup v1 with a private cgroup namespace: podman mounts the hierarchies read-write but
  # the kubelet's cadvisor (1.20) finds the cpu controller only as a mount point of its own.
  for c in cpu cpuacct cpuset memory; do
    [[ -d /sys/fs/cgroup/$c ]] && mount --bind "/sys/fs/cgroup/$c" "/sys/fs/cgroup/$c"
  done
  # kind's kubelet configuration puts pods under cgroupRoot /kubelet, which must exist.
  for d in /sys/fs/cgroup/*/; do mkdir -p "$d/kubelet"; done
  echo "INFO: detected cgroup v1"
fi
exec "$@"
