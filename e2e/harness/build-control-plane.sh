#!/usr/bin/env bash
# build-control-plane.sh — build a real Kubernetes 1.20 control plane
# (kube-apiserver, kube-scheduler, kube-controller-manager) from Debian
# bookworm's `kubernetes` source package, and install the runtime bits the
# harness needs (etcd-server, openssl, curl, jq, kubectl).
#
# Usage:   e2e/harness/build-control-plane.sh
#
# Result:  $ADZE_CACHE/k8s-1.20.2/bin/{kube-apiserver,kube-scheduler,kube-controller-manager}
#          (ADZE_CACHE defaults to $HOME/.cache/adze; it lives OUTSIDE the repo), and
#          kube-scheduler-pr103019: the same 1.20.2 kube-scheduler with upstream's fix for
#          extenders never being asked to `preempt` (kubernetes PR 103019, released in the
#          1.20 line by the cherry-pick PR 103030): the one change is the framework option that
#          hands the configured extenders to the profiles, so the preemption plugin calls them.
#          It stands in for a kube-scheduler that calls an extender's preempt verb (1.20.9+,
#          1.21.3+, 1.22+), which these machines cannot otherwise run.
#
# Idempotent: when the four binaries are already in the cache it only checks
# that the runtime packages are installed and exits (well under a second when
# nothing is missing). A cold build takes ~5-10 minutes on 2 cores.
#
# Environment:
#   ADZE_CACHE            cache root (default $HOME/.cache/adze)
#   ADZE_K8S_DEB_VERSION  Debian source version (default 1.20.5+really1.20.2-1.1+deb12u1)
#   ADZE_K8S_REBUILD=1    ignore cached binaries and rebuild
#   ADZE_K8S_NICE         nice level for the compile (default 19)
#   ADZE_K8S_KEEP_SRC=1   keep the unpacked source and Go build cache (~2.3 GB) after a build
#   ADZE_SKIP_APT=1       never call apt-get (fail if something is missing)
#   ADZE_INSTALL_KUBECTL=0  do not install Debian's kubernetes-client when no kubectl is on PATH
#
# Non-interactive (CI=true, no stdin): apt runs with DEBIAN_FRONTEND=noninteractive -y.
#
# Trap handled here: Kubernetes 1.20 vendors github.com/modern-go/reflect2
# v1.0.1, which segfaults under Go >= 1.18 the first time the apiserver encodes
# a map (e.g. creating a custom resource). We replace the vendored copy with
# Debian's golang-github-modern-go-reflect2-dev (1.0.2) before building.
set -euo pipefail

K8S_DEB_VERSION="${ADZE_K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}"
K8S_UPSTREAM_VERSION="v1.20.2"
CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
ROOT="$CACHE/k8s-1.20.2"
BIN="$ROOT/bin"
# build-k8s.sh points all three builds at one tree (ADZE_K8S_SRC_PARENT) so they share its Go cache.
SRC_PARENT="${ADZE_K8S_SRC_PARENT:-$ROOT/src}"
NICE="${ADZE_K8S_NICE:-19}"
BINARIES=(kube-apiserver kube-scheduler kube-controller-manager)
PATCHED_SCHEDULER=kube-scheduler-pr103019
GO_PKG=golang-1.19-go
GOROOT_DEB=/usr/lib/go-1.19
REFLECT2_DEB_DIR=/usr/share/gocode/src/github.com/modern-go/reflect2

# Packages needed to RUN the harness (always checked) and to BUILD (only on a cold build).
RUNTIME_PKGS=(etcd-server openssl curl jq ca-certificates procps iproute2 util-linux)
BUILD_PKGS=(dpkg-dev "$GO_PKG" rsync golang-github-modern-go-reflect2-dev make gcc libc6-dev xz-utils diffutils)

export DEBIAN_FRONTEND=noninteractive

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n env DEBIAN_FRONTEND=noninteractive); else SUDO=(__no_root__); fi
fi
as_root() {
  if [[ "${SUDO[0]:-}" == __no_root__ ]]; then die "need root (or passwordless sudo) to run: $*"; fi
  "${SUDO[@]}" "$@"
}

APT_UPDATED=0
apt_update() {
  if [[ $APT_UPDATED == 0 ]]; then
    log "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
}

missing_pkgs() {
  local p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      printf '%s\n' "$p"
    fi
  done
}

ensure_pkgs() {
  local missing
  mapfile -t missing < <(missing_pkgs "$@")
  if ((${#missing[@]} == 0)); then return 0; fi
  [[ "${ADZE_SKIP_APT:-0}" == 1 ]] && die "missing packages and ADZE_SKIP_APT=1: ${missing[*]}"
  apt_update
  log "apt-get install ${missing[*]}"
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
}

base_ok() {
  local b
  for b in "${BINARIES[@]}"; do
    [[ -x "$BIN/$b" ]] || return 1
  done
  # A cheap sanity check that the binary actually runs.
  "$BIN/kube-apiserver" --version >/dev/null 2>&1 || return 1
}
binaries_ok() { base_ok && [[ -x "$BIN/$PATCHED_SCHEDULER" ]]; }

# ---------------------------------------------------------------------------
log "cache: $ROOT"
ensure_pkgs "${RUNTIME_PKGS[@]}"
# kubectl is optional (the harness itself only uses curl). Any kubectl on PATH
# is kept (e.g. a newer one from another repo); otherwise install Debian's 1.20.
if [[ "${ADZE_INSTALL_KUBECTL:-1}" == 1 ]] && ! command -v kubectl >/dev/null 2>&1; then
  ensure_pkgs kubernetes-client || log "WARNING: could not install kubernetes-client (kubectl); continuing without it"
fi

if [[ "${ADZE_K8S_REBUILD:-0}" != 1 ]] && binaries_ok; then
  log "binaries already present in $BIN ($("$BIN/kube-apiserver" --version 2>&1)); nothing to build"
  exit 0
fi

mkdir -p "$ROOT" "$SRC_PARENT" "$BIN"
# Serialise concurrent builds sharing one cache.
exec 9>"$ROOT/.build.lock"
if ! flock -n 9; then
  log "another build holds $ROOT/.build.lock; waiting"
  flock 9
  if [[ "${ADZE_K8S_REBUILD:-0}" != 1 ]] && binaries_ok; then
    log "binaries were built by the other process; done"
    exit 0
  fi
fi

T0=$(date +%s)
ensure_pkgs "${BUILD_PKGS[@]}"

# --- source -----------------------------------------------------------------
upstream_dir_version="${K8S_DEB_VERSION%-*}"              # 1.20.5+really1.20.2
SRC="$SRC_PARENT/kubernetes-${upstream_dir_version}"
if [[ ! -f "$SRC/.adze-extracted" ]]; then
  if ! apt-cache showsrc "kubernetes" 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$"; then
    apt_update
  fi
  if ! apt-cache showsrc "kubernetes" 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$"; then
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    srcfile=/etc/apt/sources.list.d/adze-deb-src.sources
    log "no deb-src for kubernetes=${K8S_DEB_VERSION}; adding $srcfile ($codename)"
    as_root tee "$srcfile" >/dev/null <<EOF
# Added by Adze e2e/harness/build-control-plane.sh (source packages only).
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
EOF
    APT_UPDATED=0
    apt_update
    apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$" \
      || die "kubernetes=${K8S_DEB_VERSION} not found in deb-src (apt-cache showsrc kubernetes)"
  fi
  log "apt-get source kubernetes=${K8S_DEB_VERSION} into $SRC_PARENT"
  rm -rf "$SRC"
  # Download + unpack (dpkg-source applies Debian's patches). As root apt warns
  # about the unsandboxed download; that is harmless.
  (cd "$SRC_PARENT" && nice -n "$NICE" apt-get source -qq "kubernetes=${K8S_DEB_VERSION}" </dev/null) \
    || die "apt-get source failed"
  [[ -d "$SRC/vendor" ]] || die "unexpected source layout: $SRC/vendor missing"
  touch "$SRC/.adze-extracted"
else
  log "source already unpacked: $SRC"
fi

# --- reflect2 patch ------------------------------------------------------------
[[ -f "$REFLECT2_DEB_DIR/reflect2.go" ]] || die "$REFLECT2_DEB_DIR missing (golang-github-modern-go-reflect2-dev)"
log "replacing vendor/github.com/modern-go/reflect2 (v1.0.1) with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
rsync -a --delete --exclude='*_test.go' --exclude='test*/' \
  "$REFLECT2_DEB_DIR/" "$SRC/vendor/github.com/modern-go/reflect2/"

# --- build -----------------------------------------------------------------
export PATH="$GOROOT_DEB/bin:$PATH"
unset GOROOT GOFLAGS GOPATH GO111MODULE GOOS GOARCH CGO_ENABLED
log "go: $(go version)"
# make WHAT=... in the source tree, logging to $ROOT/build.log.
make_what() {
  log "make WHAT=\"$*\" (nice -n $NICE; log: $ROOT/build.log)"
  (
    cd "$SRC"
    # Version stamping: there is no .git in the Debian tree.
    export KUBE_GIT_VERSION="$K8S_UPSTREAM_VERSION" KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20
    nice -n "$NICE" make WHAT="$*" </dev/null
  ) >>"$ROOT/build.log" 2>&1 || { tail -n 50 "$ROOT/build.log" >&2; die "make failed (see $ROOT/build.log)"; }
}
built() { # NAME: path of a binary make just built
  local f="$SRC/_output/bin/$1"
  [[ -x "$f" ]] || f="$SRC/_output/local/bin/linux/$(go env GOARCH)/$1"
  [[ -x "$f" ]] || die "built binary $1 not found under $SRC/_output"
  echo "$f"
}
: >"$ROOT/build.log"
T1=$(date +%s)
if [[ "${ADZE_K8S_REBUILD:-0}" == 1 ]] || ! base_ok; then
  whats=()
  for b in "${BINARIES[@]}"; do whats+=("cmd/$b"); done
  make_what "${whats[*]}"
  for b in "${BINARIES[@]}"; do
    install -m 0755 "$(built "$b")" "$BIN/.$b.tmp"
    mv -f "$BIN/.$b.tmp" "$BIN/$b"
  done
fi
# The preempt fix: hand the extenders create() builds to the profiles as well, so the
# preemption plugin (and anything else asking the framework for them) sees them.
factory="$SRC/pkg/scheduler/factory.go"
if ! grep -q 'frameworkruntime.WithExtenders(extenders)' "$factory"; then  # empty-input-ok: the patch step below greps the same file and fails when it is missing
  grep -qF 'frameworkruntime.WithPodNominator(nominator),' "$factory" \
    || die "pkg/scheduler/factory.go has no WithPodNominator option line to add WithExtenders beside"
  sed -i 's/^\t\tframeworkruntime.WithPodNominator(nominator),$/&\n\t\tframeworkruntime.WithExtenders(extenders),/' "$factory"
  grep -qF 'frameworkruntime.WithExtenders(extenders),' "$factory" || die "the WithExtenders patch did not apply"
fi
make_what cmd/kube-scheduler
install -m 0755 "$(built kube-scheduler)" "$BIN/.$PATCHED_SCHEDULER.tmp"
mv -f "$BIN/.$PATCHED_SCHEDULER.tmp" "$BIN/$PATCHED_SCHEDULER"
T2=$(date +%s)
log "make finished in $((T2 - T1))s"

{
  echo "debian_source_version=$K8S_DEB_VERSION"
  echo "go=$(go version)"
  echo "reflect2=$(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
  echo "built_at=$(date -u +%FT%TZ)"
  echo "make_seconds=$((T2 - T1))"
} >"$BIN/BUILD-INFO"
binaries_ok || die "binaries in $BIN do not run"
# The source tree and the Go build cache under it are ~10x the binaries; the binaries are all
# later runs need, and CI's disk is not large.
if [[ "${ADZE_K8S_KEEP_SRC:-0}" != 1 ]]; then
  log "removing $SRC_PARENT (ADZE_K8S_KEEP_SRC=1 keeps it)"
  rm -rf "$SRC_PARENT"
fi
log "done in $(( $(date +%s) - T0 ))s: $(ls "$BIN" | tr '\n' ' ')"
log "$("$BIN/kube-apiserver" --version 2>&1)"
