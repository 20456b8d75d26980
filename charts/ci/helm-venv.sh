# shellcheck shell=bash
# Sourced by charts/ci/check.sh and e2e/chart.sh: sets $helm_python to a Python with
# helm-sdkpy (Helm's Go library behind a cffi binding, from PyPI) and PyYAML, installing
# them into a venv under ~/.cache/adze on first use.
helm_venv=${ADZE_CACHE:-$HOME/.cache/adze}/helm-venv
helm_python=$helm_venv/bin/python
if [[ ! -x "$helm_python" ]] || ! "$helm_python" -c 'import helm_sdkpy, yaml' 2>/dev/null; then
  echo "== installing helm-sdkpy into $helm_venv"
  mkdir -p "$(dirname "$helm_venv")"
  python3 -m venv "$helm_venv" || { echo "FAIL: python3 -m venv"; exit 1; }
  # helm-sdkpy declares a newer Python than some machines have; its binding works on 3.11.
  "$helm_venv/bin/pip" install -q --ignore-requires-python helm-sdkpy pyyaml \
    || { echo "FAIL: pip install helm-sdkpy"; exit 1; }
fi
