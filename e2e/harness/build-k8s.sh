#!/usr/bin/env bash
# build-k8s.sh — every Kubernetes 1.20.2 binary the e2e runs, from ONE unpacked copy of Debian's
# `kubernetes` source: the control plane (build-control-plane.sh), kubemark (build-kubemark.sh)
# and the node side (build-kubelet.sh), one after another in that tree. The three share most of
# their packages (apimachinery, client-go, the kubelet inside kubemark), and Kubernetes' make keeps
# its Go cache inside the tree, so a cold build compiles each package once instead of up to three
# times. Each script still works alone with its own tree.
#
# Usage: e2e/harness/build-k8s.sh      (as root: build-kubelet.sh needs it)
# Cached binaries make each step exit at once; the shared tree is removed at the end (it is
# ~3 GB) unless ADZE_K8S_KEEP_SRC=1. A tree left by an interrupted run is not trusted (the
# control-plane step patches kube-scheduler's sources in place): it is unpacked afresh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
shared="$CACHE/k8s-src-shared"
mkdir -p "$CACHE"
exec 8>"$CACHE/.k8s-src-shared.lock"
flock 8
keep=${ADZE_K8S_KEEP_SRC:-0}
[[ "$keep" == 1 ]] || trap 'rm -rf "$shared"' EXIT
[[ "$keep" == 1 && -f "$shared/.adze-complete" ]] || rm -rf "$shared"
mkdir -p "$shared"
export ADZE_K8S_SRC_PARENT="$shared" ADZE_K8S_KEEP_SRC=1
t0=$(date +%s)
echo "[build-k8s] control plane"; "$HERE/build-control-plane.sh"
echo "[build-k8s] kubemark";      "$HERE/build-kubemark.sh"
echo "[build-k8s] kubelet, kube-proxy, kubeadm, pause"; "$HERE/build-kubelet.sh"
touch "$shared/.adze-complete"
echo "[build-k8s] done in $(( $(date +%s) - t0 )) s"
