#!/usr/bin/env bash
# Runs adze-aws's tests against a real moto server on 127.0.0.1 (started by moto-server.sh,
# which installs moto[server] into ~/.cache/adze/moto-venv if missing), then stops the server.
# Usage: aws/ci/moto.sh [extra cargo test args]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/aws/ci/moto-server.sh"
moto_start
trap 'kill "$MOTO_PID" 2>/dev/null || true; wait "$MOTO_PID" 2>/dev/null || true' EXIT
cd "$root"
cargo test -p adze-aws "$@"
