#!/usr/bin/env bash
# The drift-check benchmark (aws/tests/sweep_bench.rs) against a fresh moto server: creates
# 1,000 then 5,000 instances tagged as NodeClaims and prints DescribeInstances calls and drift
# pass time, per-claim against the shared sweep. Then the pure disruption decision at the same
# sizes (`cargo bench -p adze-scheduling --bench disruption`), so both come from one run.
# Usage: aws/ci/sweep-bench.sh   (ADZE_SWEEP_BENCH_SIZES, ADZE_SWEEP_BENCH_SAMPLE: see the test)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/aws/ci/moto-server.sh"
moto_start
trap 'kill "$MOTO_PID" 2>/dev/null || true; wait "$MOTO_PID" 2>/dev/null || true' EXIT
cd "$root"
ADZE_SWEEP_BENCH=1 cargo test -p adze-aws --test sweep_bench -- --ignored --nocapture
cargo bench -p adze-scheduling --bench disruption
