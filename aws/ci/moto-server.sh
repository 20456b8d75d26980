# Sourced (bash): starts a moto server on a free loopback port.
#   . aws/ci/moto-server.sh && moto_start [LOGFILE]
# Installs moto[server]==${ADZE_MOTO_VERSION:-5.2.5} into ${ADZE_MOTO_VENV:-~/.cache/adze/moto-venv}
# if missing (boto3 comes with it: MOTO_PYTHON runs scripts against the server), waits until the
# server answers, then exports ADZE_AWS_ENDPOINT, MOTO_PID, MOTO_PYTHON and dummy AWS
# credentials. The caller stops MOTO_PID. Returns non-zero when moto cannot start.

moto_start() {
  local log=${1:-$(mktemp -t adze-moto.XXXXXX.log)}
  local venv=${ADZE_MOTO_VENV:-$HOME/.cache/adze/moto-venv}
  local version=${ADZE_MOTO_VERSION:-5.2.5}
  if ! "$venv/bin/moto_server" --help >/dev/null 2>&1; then
    echo "moto-server.sh: installing moto[server]==$version into $venv"
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet "moto[server]==$version" || return 1
  fi
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # moto_server.py: moto's own server with its per-resource tag lookup indexed (see the file).
  "$venv/bin/python" "$(dirname "${BASH_SOURCE[0]}")/moto_server.py" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
  MOTO_PID=$!
  local _
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/" && break
    if ! kill -0 "$MOTO_PID" 2>/dev/null; then echo "moto-server.sh: moto_server exited:"; cat "$log"; return 1; fi
    sleep 0.2
  done
  curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/" || { echo "moto-server.sh: moto did not answer"; return 1; }
  echo "moto-server.sh: moto $version on http://127.0.0.1:$port"
  export ADZE_AWS_ENDPOINT="http://127.0.0.1:$port" MOTO_PID MOTO_PYTHON="$venv/bin/python"
  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
}
