#!/usr/bin/env bash
# Checks deploy/aws/adze.yaml: cfn-lint (installed once into ~/.cache/adze/cfn-lint-venv,
# version ${ADZE_CFN_LINT_VERSION:-1.58.0}), then a deployment into moto's CloudFormation
# (deploy/ci/moto_stack.py asserts the queue, rules, roles and policy exist as declared).
# The policy's conditions are checked by aws/tests/iam_policy.rs (cargo test -p adze-aws).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
template="$root/deploy/aws/adze.yaml"
venv=${ADZE_CFN_LINT_VENV:-$HOME/.cache/adze/cfn-lint-venv}
version=${ADZE_CFN_LINT_VERSION:-1.58.0}
if [[ "$("$venv/bin/cfn-lint" --version 2>/dev/null)" != "cfn-lint $version" ]]; then
  echo "check.sh: installing cfn-lint==$version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "cfn-lint==$version"
fi
"$venv/bin/cfn-lint" --regions us-east-1 us-west-2 eu-central-1 -- "$template"
echo "check.sh: cfn-lint $version: no findings"

. "$root/aws/ci/moto-server.sh"
moto_start
trap 'kill "$MOTO_PID" 2>/dev/null || true; wait "$MOTO_PID" 2>/dev/null || true' EXIT
"$MOTO_PYTHON" "$root/deploy/ci/moto_stack.py" "$template"
