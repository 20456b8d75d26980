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
if [[ " ${args[*]} " == *" -- "* ]]; then args+=(--include-ignored); else args+=(-- --include-ignored); fi
cargo test -p adze-aws "${args[@]}"
