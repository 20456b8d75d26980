#!/usr/bin/env bash
# build-kubemark.sh — build kubemark (the hollow node: real kubelet code over a fake container
# runtime) from the same Debian bookworm `kubernetes` 1.20.2 source as build-control-plane.sh,
# with e2e/harness/kubemark-flags.patch applied (per-node provider ID, size, reservations,
# eviction thresholds, healthz port and runtime socket as flags).
#
# Usage:   e2e/harness/build-kubemark.sh
# Result:  $ADZE_CACHE/kubemark-1.20.2/bin/kubemark (ADZE_CACHE defaults to $HOME/.cache/adze).
#
# Its own cache directory, so it never writes where build-control-plane.sh or another build does.
# Idempotent: exits at once when the binary is cached and was built from the current patch (its
# sha256 is recorded in bin/BUILD-INFO); a changed patch rebuilds. Cold: ~7 min on 2 cores.
# The make output goes to $ROOT/build.log and is shown (its tail) only when the build fails.
#
# Environment: ADZE_CACHE, ADZE_K8S_DEB_VERSION, ADZE_K8S_NICE (default 19), ADZE_SKIP_APT=1,
#   ADZE_KUBEMARK_REBUILD=1 (rebuild even when cached), ADZE_K8S_KEEP_SRC=1 (keep the unpacked
#   source and Go build cache, ~2.5 GB, for fast rebuilds after a patch change).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PATCH="$HERE/kubemark-flags.patch"
K8S_DEB_VERSION="${ADZE_K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}"
CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
ROOT="$CACHE/kubemark-1.20.2"
BIN="$ROOT/bin"
# build-k8s.sh points all three builds at one tree (ADZE_K8S_SRC_PARENT) so they share its Go cache.
SRC_PARENT="${ADZE_K8S_SRC_PARENT:-$ROOT/src}"
NICE="${ADZE_K8S_NICE:-19}"
GOROOT_DEB=/usr/lib/go-1.19
REFLECT2_DEB_DIR=/usr/share/gocode/src/github.com/modern-go/reflect2
BUILD_PKGS=(dpkg-dev golang-1.19-go rsync golang-github-modern-go-reflect2-dev make gcc libc6-dev xz-utils diffutils patch)
export DEBIAN_FRONTEND=noninteractive

log() { printf '[build-kubemark] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -f "$PATCH" ]] || die "$PATCH missing"
patch_sha=$(sha256sum "$PATCH" | cut -d' ' -f1)
binary_ok() {
  [[ -x "$BIN/kubemark" ]] && grep -qx "patch_sha256=$patch_sha" "$BIN/BUILD-INFO" 2>/dev/null \
    && "$BIN/kubemark" --help 2>&1 | grep -q -- '--provider-id'
}
if [[ "${ADZE_KUBEMARK_REBUILD:-0}" != 1 ]] && binary_ok; then
  log "kubemark already built from the current patch: $BIN/kubemark"
  exit 0
fi

mkdir -p "$BIN" "$SRC_PARENT"
exec 9>"$ROOT/.build.lock"
if ! flock -n 9; then
  log "another build holds $ROOT/.build.lock; waiting"
  flock 9
  if [[ "${ADZE_KUBEMARK_REBUILD:-0}" != 1 ]] && binary_ok; then log "built by the other process"; exit 0; fi
fi

SUDO=()
[[ "$(id -u)" == 0 ]] || SUDO=(sudo -n env DEBIAN_FRONTEND=noninteractive)
missing=()
for p in "${BUILD_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  [[ "${ADZE_SKIP_APT:-0}" == 1 ]] && die "missing packages and ADZE_SKIP_APT=1: ${missing[*]}"
  log "apt-get install ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
fi

T0=$(date +%s)
SRC="$SRC_PARENT/kubernetes-${K8S_DEB_VERSION%-*}"
if [[ ! -f "$SRC/.adze-extracted" ]]; then
  # build-control-plane.sh adds the deb-src entry when apt has none; run it first on a fresh machine.
  apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: ${K8S_DEB_VERSION}\$" \
    || die "no deb-src for kubernetes=${K8S_DEB_VERSION}: run e2e/harness/build-control-plane.sh first"
  log "apt-get source kubernetes=${K8S_DEB_VERSION} into $SRC_PARENT"
  rm -rf "$SRC"
  (cd "$SRC_PARENT" && nice -n "$NICE" apt-get source -qq "kubernetes=${K8S_DEB_VERSION}" </dev/null >/dev/null 2>&1) \
    || die "apt-get source failed"
  touch "$SRC/.adze-extracted"
fi

# The patch: take back the one applied before (a kept source tree), then apply the current one.
if [[ -f "$SRC/.adze-applied.patch" ]]; then
  (cd "$SRC" && patch -p1 -R -s <.adze-applied.patch) || die "could not reverse the previously applied patch"
  rm -f "$SRC/.adze-applied.patch"
fi
(cd "$SRC" && patch -p1 -s --no-backup-if-mismatch <"$PATCH") || die "$PATCH does not apply"
cp "$PATCH" "$SRC/.adze-applied.patch"

# Same reflect2 fix as build-control-plane.sh (1.20's vendored v1.0.1 breaks under Go >= 1.18).
[[ -f "$REFLECT2_DEB_DIR/reflect2.go" ]] || die "$REFLECT2_DEB_DIR missing"
rsync -a --delete --exclude='*_test.go' --exclude='test*/' "$REFLECT2_DEB_DIR/" "$SRC/vendor/github.com/modern-go/reflect2/"

export PATH="$GOROOT_DEB/bin:$PATH"
unset GOROOT GOFLAGS GOPATH GO111MODULE GOOS GOARCH CGO_ENABLED
log "make WHAT=cmd/kubemark (nice -n $NICE; log: $ROOT/build.log)"
(
  cd "$SRC"
  export KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20
  nice -n "$NICE" make WHAT=cmd/kubemark </dev/null
) >"$ROOT/build.log" 2>&1 || { tail -n 40 "$ROOT/build.log" >&2; die "make failed (see $ROOT/build.log)"; }
built="$SRC/_output/bin/kubemark"
[[ -x "$built" ]] || built="$SRC/_output/local/bin/linux/$(go env GOARCH)/kubemark"
[[ -x "$built" ]] || die "built kubemark not found under $SRC/_output"
install -m 0755 "$built" "$BIN/.kubemark.tmp" && mv -f "$BIN/.kubemark.tmp" "$BIN/kubemark"
T1=$(date +%s)
{
  echo "debian_source_version=$K8S_DEB_VERSION"
  echo "patch_sha256=$patch_sha"
  echo "go=$(go version)"
  echo "built_at=$(date -u +%FT%TZ)"
  echo "build_seconds=$((T1 - T0))"
} >"$BIN/BUILD-INFO"
binary_ok || die "$BIN/kubemark does not run or lacks the patched flags"
if [[ "${ADZE_K8S_KEEP_SRC:-0}" != 1 ]]; then
  log "removing $SRC_PARENT (ADZE_K8S_KEEP_SRC=1 keeps it)"
  rm -rf "$SRC_PARENT"
fi
log "done in $((T1 - T0))s: $BIN/kubemark"
