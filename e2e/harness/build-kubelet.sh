#!/usr/bin/env bash
# build-kubelet.sh — build the node side of Kubernetes 1.20.2 (kubelet, kube-proxy, kubeadm) and
# the pause container's binary from the same Debian bookworm `kubernetes` source package the
# control plane comes from (build-control-plane.sh), for e2e/install.sh's real node and the
# kind node image (e2e/kind/node-image.sh; kind bootstraps its nodes with kubeadm).
#
# Usage:   e2e/harness/build-kubelet.sh
#
# Result:  $ADZE_CACHE/kubelet-1.20.2/bin/{kubelet,kube-proxy,kubeadm,pause}
#          (pause: build/pause/linux/pause.c compiled static with gcc; install.sh wraps it in
#          an OCI archive because no registry is reachable to pull k8s.gcr.io/pause).
#
# Its own cache directory (not k8s-1.20.2/) so it never races the control-plane build over
# one source tree. Idempotent: exits at once when the four binaries are cached. A cold build
# is ~10-15 min on 2 shared cores (one `make`, both Go commands together, nice 19).
#
# Environment:
#   ADZE_CACHE            cache root (default $HOME/.cache/adze)
#   ADZE_K8S_DEB_VERSION  Debian source version (default 1.20.5+really1.20.2-1.1+deb12u1)
#   ADZE_K8S_REBUILD=1    ignore the cached binaries and rebuild
#   ADZE_K8S_NICE         nice level for the compile (default 19)
#   ADZE_K8S_KEEP_SRC=1   keep the unpacked source and Go build cache after a build
#   ADZE_SKIP_APT=1       never call apt-get (fail if something is missing)
#
# The reflect2 trap build-control-plane.sh describes (vendored v1.0.1 segfaults under
# Go >= 1.18) applies to the kubelet too; the same Debian copy replaces it.
set -euo pipefail

K8S_DEB_VERSION="${ADZE_K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}"
K8S_UPSTREAM_VERSION="v1.20.2"
CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
ROOT="$CACHE/kubelet-1.20.2"
BIN="$ROOT/bin"
# build-k8s.sh points all three builds at one tree (ADZE_K8S_SRC_PARENT) so they share its Go cache.
SRC_PARENT="${ADZE_K8S_SRC_PARENT:-$ROOT/src}"
NICE="${ADZE_K8S_NICE:-19}"
BINARIES=(kubelet kube-proxy kubeadm)
GO_PKG=golang-1.19-go
GOROOT_DEB=/usr/lib/go-1.19
REFLECT2_DEB_DIR=/usr/share/gocode/src/github.com/modern-go/reflect2
BUILD_PKGS=(dpkg-dev "$GO_PKG" rsync golang-github-modern-go-reflect2-dev make gcc libc6-dev xz-utils diffutils)

export DEBIAN_FRONTEND=noninteractive
log() { printf '[build-kubelet] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[[ "$(id -u)" == 0 ]] || die "run as root (the node e2e needs root anyway)"

ensure_pkgs() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ "${ADZE_SKIP_APT:-0}" == 1 ]] && die "missing packages and ADZE_SKIP_APT=1: ${missing[*]}"
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
}

binaries_ok() {
  [[ -x "$BIN/kubelet" && -x "$BIN/kube-proxy" && -x "$BIN/kubeadm" && -x "$BIN/pause" ]] || return 1
  "$BIN/kubelet" --version >/dev/null 2>&1
}

if [[ "${ADZE_K8S_REBUILD:-0}" != 1 ]] && binaries_ok; then
  log "already built: $BIN ($("$BIN/kubelet" --version 2>&1))"
  exit 0
fi

mkdir -p "$BIN" "$SRC_PARENT"
exec 9>"$ROOT/.build.lock"
flock 9
if [[ "${ADZE_K8S_REBUILD:-0}" != 1 ]] && binaries_ok; then exit 0; fi
T0=$(date +%s)
ensure_pkgs "${BUILD_PKGS[@]}"

upstream_dir_version="${K8S_DEB_VERSION%-*}"
SRC="$SRC_PARENT/kubernetes-${upstream_dir_version}"
if [[ ! -f "$SRC/.adze-extracted" ]]; then
  apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$" || apt-get update -qq
  if ! apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$"; then
    # The same source-only entry build-control-plane.sh adds on its cold build (when its
    # binaries are cached, it never added one on this machine).
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    srcfile=/etc/apt/sources.list.d/adze-deb-src.sources
    log "no deb-src for kubernetes=${K8S_DEB_VERSION}; adding $srcfile ($codename)"
    cat >"$srcfile" <<SRC
# Added by Adze e2e/harness/build-kubelet.sh (source packages only).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${codename} ${codename}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: ${codename}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
    apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$" \
      || die "kubernetes=${K8S_DEB_VERSION} not found in deb-src (apt-cache showsrc kubernetes)"
  fi
  log "apt-get source kubernetes=${K8S_DEB_VERSION} into $SRC_PARENT"
  rm -rf "$SRC"
  (cd "$SRC_PARENT" && nice -n "$NICE" apt-get source -qq "kubernetes=${K8S_DEB_VERSION}" </dev/null) \
    || die "apt-get source failed"
  [[ -d "$SRC/vendor" ]] || die "unexpected source layout: $SRC/vendor missing"
  touch "$SRC/.adze-extracted"
fi
rsync -a --delete --exclude='*_test.go' --exclude='test*/' \
  "$REFLECT2_DEB_DIR/" "$SRC/vendor/github.com/modern-go/reflect2/"

export PATH="$GOROOT_DEB/bin:$PATH"
unset GOROOT GOFLAGS GOPATH GO111MODULE GOOS GOARCH CGO_ENABLED
log "go: $(go version); make WHAT=\"cmd/kubelet cmd/kube-proxy cmd/kubeadm\" (nice -n $NICE; log: $ROOT/build.log)"
(
  cd "$SRC"
  export KUBE_GIT_VERSION="$K8S_UPSTREAM_VERSION" KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20
  nice -n "$NICE" make WHAT="cmd/kubelet cmd/kube-proxy cmd/kubeadm" </dev/null
) >"$ROOT/build.log" 2>&1 || { tail -n 50 "$ROOT/build.log" >&2; die "make failed (see $ROOT/build.log)"; }
for b in "${BINARIES[@]}"; do
  f="$SRC/_output/bin/$b"
  [[ -x "$f" ]] || f="$SRC/_output/local/bin/linux/$(go env GOARCH)/$b"
  [[ -x "$f" ]] || die "built binary $b not found under $SRC/_output"
  install -m 0755 "$f" "$BIN/.$b.tmp" && mv -f "$BIN/.$b.tmp" "$BIN/$b"
done
# pause: the same flags upstream's build/pause/Makefile uses for its static binary.
pause_src="$SRC/build/pause/linux/pause.c"
[[ -f "$pause_src" ]] || pause_src="$SRC/build/pause/pause.c"
[[ -f "$pause_src" ]] || die "no build/pause source in $SRC"
gcc -Os -Wall -Werror -static -DVERSION=v3.4.1-adze -o "$BIN/.pause.tmp" "$pause_src"
mv -f "$BIN/.pause.tmp" "$BIN/pause"
{
  echo "debian_source_version=$K8S_DEB_VERSION"
  echo "go=$(go version)"
  echo "built_at=$(date -u +%FT%TZ)"
  echo "seconds=$(( $(date +%s) - T0 ))"
} >"$BIN/BUILD-INFO"
binaries_ok || die "binaries in $BIN do not run"
if [[ "${ADZE_K8S_KEEP_SRC:-0}" != 1 ]]; then rm -rf "$SRC_PARENT"; fi
log "done in $(( $(date +%s) - T0 ))s: $(ls "$BIN" | tr '\n' ' ')"
