#!/usr/bin/env bash
# Builds every Adze binary the e2e suites run, in release, in ONE cargo invocation. The suites
# all call this instead of building their own package subsets: different subsets unify
# dependency features differently, and each distinct set would rebuild the dependency tree
# (the EC2 SDK among it) — minutes each on CI.
#
# ADZE_E2E_PREBUILT=1 skips the build and only checks that the binaries are in
# $CARGO_TARGET_DIR/release: for developers running several suites from worktrees that share
# one release build (CI never sets it).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ "${ADZE_E2E_PREBUILT:-0}" == 1 ]]; then
  rel=${CARGO_TARGET_DIR:-$PWD/target}/release
  for b in adze-provisioner adze-extender adze-agent adze-aws-fault-proxy imds-sim crdgen; do
    [[ -x "$rel/$b" ]] || { echo "build-binaries: ADZE_E2E_PREBUILT=1 but $rel/$b is missing" >&2; exit 1; }
  done
  exit 0
fi
nice -n 5 cargo build -q --release --locked --workspace --bins
