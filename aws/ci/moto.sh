#!/usr/bin/env bash
# Runs adze-aws's tests against a real moto server on 127.0.0.1.
# Installs moto[server] into ~/.cache/adze/moto-venv if missing, starts it on a free port,
# exports ADZE_AWS_ENDPOINT, runs `cargo test -p adze-aws`, and stops the server.
# Usage: aws/ci/moto.sh [extra cargo test args]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${ADZE_MOTO_VENV:-$HOME/.cache/adze/moto-venv}"
moto_version="${ADZE_MOTO_VERSION:-5.2.5}"

if ! "$venv/bin/moto_server" --help >/dev/null 2>&1; then
  echo "moto.sh: installing moto[server]==$moto_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "moto[server]==$moto_version"
fi

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
log="$(mktemp -t adze-moto.XXXXXX.log)"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"; then break; fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then echo "moto.sh: moto_server exited:"; cat "$log"; exit 1; fi
  sleep 0.2
done
echo "moto.sh: moto $moto_version on http://127.0.0.1:$port"

export ADZE_AWS_ENDPOINT="http://127.0.0.1:$port"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1
cd "$root"
cargo test -p adze-aws "$@"
