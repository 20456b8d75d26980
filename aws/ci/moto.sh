#!/usr/bin/env bash
# Runs adze-aws's tests against a real moto server on 127.0.0.1 (started by moto-server.sh,
# which installs moto[server] into ~/.cache/adze/moto-venv if missing), then stops the server.
# Usage: aws/ci/moto.sh [extra cargo test args] [-- test binary args]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/aws/ci/moto-server.sh"
moto_start
trap 'kill "$MOTO_PID" 2>/dev/null || true; wait "$MOTO_PID" 2>/dev/null || true' EXIT
cd "$root"
# The moto tests are #[ignore]d (reported as ignored under a plain `cargo test`); here a
# server is up, so they run. Extra args before `--` go to cargo, after it to the test binary.
args=("$@")
# The drift-check benchmark (tests/sweep_bench.rs) is not a test: aws/ci/sweep-bench.sh runs it.
if [[ " ${args[*]} " == *" -- "* ]]; then args+=(--include-ignored); else args+=(--); args+=(--include-ignored); fi
args+=(--skip drift_pass_calls_and_time_per_claim_vs_sweep)
# `--workspace --test moto`: the same feature set as `cargo test --workspace`, so after that
# command nothing is built again (`-p adze-aws` alone unifies features differently and rebuilds
# most of the AWS SDK); the other tests of adze-aws need no server and run in the workspace's.
cargo test --workspace --test moto "${args[@]}"
