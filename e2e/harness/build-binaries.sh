#!/usr/bin/env bash
# Builds every Adze binary the e2e suites run, in release, in ONE cargo invocation. The suites
# all call this instead of building their own package subsets: different subsets unify
# dependency features differently, and each distinct set would rebuild the dependency tree
# (the EC2 SDK among it) — minutes each on CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
nice -n 5 cargo build -q --release --locked --workspace --bins
