#!/usr/bin/env bash
# CI check of the Adze chart, manifests/, the Dockerfile and the kind config.
#
#   charts/ci/check.sh                    # all checks; prints PASS:/FAIL: and "N passed, N failed"
#   charts/ci/check.sh --write-manifests  # regenerate manifests/ from the chart
#   charts/ci/check.sh --offline          # only what needs no cluster (static checks, and
#                                         # manifests/kubernetes-*/ per version family)
#
# Uses Helm's own library from PyPI (helm-sdkpy, in a venv under ~/.cache/adze) and a
# throwaway Kubernetes 1.20 control plane (e2e/harness): helm-sdkpy has no `template`, so
# each value set is installed for real, which also has the API server validate every object.
# Needs: python3, kubectl, cargo; the harness builds or reuses its cached k8s binaries.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
harness=$root/e2e/harness
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

. charts/ci/helm-venv.sh

static_failed=0
if [[ "${1:-}" != --write-manifests ]]; then
  # The Dockerfile cannot be built here (no container engine): check the binaries it builds
  # and copies exist in the workspace.
  bins=$(cargo metadata --no-deps --format-version 1 --offline 2>/dev/null | \
    python3 -c 'import json,sys; print(" ".join(t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"] if "bin" in t["kind"]))')
  for b in $(grep -o -- '--bin [a-z-]*' Dockerfile | awk '{print $2}'); do
    if [[ " $bins " == *" $b "* ]]; then echo "PASS: Dockerfile: binary $b is a workspace target"
    else echo "FAIL: Dockerfile: binary $b is not a workspace target (have: $bins)"; static_failed=$((static_failed+1)); fi
    grep -q "target/release/$b" Dockerfile || { echo "FAIL: Dockerfile does not copy $b"; static_failed=$((static_failed+1)); }
  done
  # -x follows `source`d files (the suites' shared e2e/lib.sh).
  for script in e2e/*.sh e2e/kind/*.sh charts/ci/helm-venv.sh charts/ci/scheduler-config.sh; do
    if bash -n "$script" && { ! command -v shellcheck >/dev/null || shellcheck -x -S warning "$script"; }; then echo "PASS: $script parses (and passes shellcheck when installed)"; else echo "FAIL: $script parses"; static_failed=$((static_failed+1)); fi
  done
  # A check must fail on empty input (`jq -e` on nothing, `! grep` on a missing log, ...).
  for lint_args in --self-test ""; do
    # shellcheck disable=SC2086 # "" runs the lint itself
    python3 e2e/harness/empty-input-lint.py $lint_args || static_failed=$((static_failed+1))
  done
  grep -q -- '--locked' Dockerfile && grep -q 'nonroot' Dockerfile && echo "PASS: Dockerfile: --locked build, nonroot runtime" \
    || { echo "FAIL: Dockerfile: --locked build, nonroot runtime"; static_failed=$((static_failed+1)); }
fi

# No cluster needed: manifests/kubernetes-*/, the chart rendered for each Kubernetes version
# family by a stand-in API server (charts/ci/offline.py).
# shellcheck disable=SC2154 # helm_python comes from charts/ci/helm-venv.sh
if [[ "${1:-}" == --write-manifests ]]; then
  "$helm_python" charts/ci/check.py --write-offline-manifests || exit 1
elif ! "$helm_python" charts/ci/check.py --offline; then
  static_failed=$((static_failed+1))
fi
if [[ "${1:-}" == --offline ]]; then
  if [[ "$static_failed" -gt 0 ]]; then echo "($static_failed static check(s) failed above)"; exit 1; fi
  exit 0
fi

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
# The same package set as e2e/run.sh and e2e/chart.sh, so the three share one build.
"$root/e2e/harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
dir=$(mktemp -d /tmp/adze-chart-check.XXXXXX)
cleanup() { "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1; rm -rf "$dir" "$dir.up.log" "$dir.scheduler.yaml"; }
. charts/ci/scheduler-config.sh
trap cleanup EXIT
if ! "$harness/control-plane.sh" up "$dir" >"$dir.up.log" 2>&1; then
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1; mkdir -p "$dir"
  "$harness/control-plane.sh" up "$dir" >"$dir.up.log" 2>&1 || { cat "$dir.up.log"; echo "FAIL: control plane up"; exit 1; }
fi
export KUBECONFIG=$dir/kubeconfig
# 1.20 has no CEL: the CRDs without x-kubernetes-validations, installed before the chart
# (Helm skips crds/ entries that exist).
"$CARGO_TARGET_DIR/release/crdgen" --without-cel | kubectl apply -f - >/dev/null || { echo "FAIL: CRDs"; exit 1; }
kubectl apply -f charts/ci/stub-crds.yaml >/dev/null || { echo "FAIL: stub CRDs"; exit 1; }
kubectl wait --for condition=established --timeout=30s crd --all >/dev/null

# shellcheck disable=SC2154 # helm_python comes from charts/ci/helm-venv.sh
"$helm_python" charts/ci/check.py "$@"
rc=$?
if [[ "$static_failed" -gt 0 ]]; then echo "($static_failed static check(s) failed above)"; rc=1; fi
exit $rc
