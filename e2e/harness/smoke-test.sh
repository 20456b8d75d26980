#!/usr/bin/env bash
# smoke-test.sh — prove the e2e control plane works end to end, with curl only.
#
#   e2e/harness/smoke-test.sh
#
# 1. builds the binaries if they are not cached (build-control-plane.sh)
# 2. brings a control plane up in a temp dir (control-plane.sh up), with a
#    scheduler config that adds a tiny HTTP extender (python3, filter verb) so
#    the ADZE_SCHEDULER_CONFIG path is exercised too (skipped without python3)
# 3. checks: apiserver version; a Node with cpu 4 / memory 8Gi / pods 110 and
#    Ready=True, not-ready taint removed; a 3-replica Deployment of pause:3.9
#    (100m cpu) gets its pods created by the controller-manager and bound to
#    the node by kube-scheduler (through the extender); playing kubelet (pod
#    status Running/Ready) makes the Deployment available; a CRD (apiextensions
#    v1, structural schema with a map field) and a custom object can be created
#    and read back, and the apiserver survives it (reflect2 crash check)
# 4. stops everything in an EXIT trap (control-plane.sh down)
#
# Prints PASS/FAIL per check and a final "N passed, N failed" line; exits
# non-zero on any failure. Env: ADZE_KEEP=1 keeps the temp dir (logs) on success;
# ADZE_SMOKE_NO_EXTENDER=1 runs the default scheduler config.
set -uo pipefail

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); printf 'PASS: %s\n' "$*"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL: %s\n' "$*"; }
info() { printf '      %s\n' "$*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

finish() {
  local rc=$?
  if [[ -n "${EXT_PID:-}" ]] && kill -0 "$EXT_PID" 2>/dev/null; then kill "$EXT_PID" 2>/dev/null || true; fi
  if [[ -n "${DIR:-}" ]]; then
    "$HARNESS_DIR/control-plane.sh" down "$DIR" >/dev/null 2>&1 || true
    if ((FAILED > 0)) || ((rc != 0)) || [[ "${ADZE_KEEP:-0}" == 1 ]]; then
      echo "logs kept in $DIR"
    else
      rm -rf "$DIR"
    fi
  fi
  echo "$PASSED passed, $FAILED failed"
  if ((FAILED > 0)) && ((rc == 0)); then rc=1; fi
  exit "$rc"
}
trap finish EXIT

# --- 1. build ---------------------------------------------------------------
t=$(now)
if "$HARNESS_DIR/build-control-plane.sh"; then
  pass "binaries available (build-control-plane.sh took $(elapsed "$t")s)"
else
  fail "build-control-plane.sh"
  exit 1
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/adze-smoke.XXXXXX")

# --- 2. optional scheduler extender -------------------------------------------
EXT_LOG="$DIR/extender-calls.log"
if [[ "${ADZE_SMOKE_NO_EXTENDER:-0}" != 1 ]] && command -v python3 >/dev/null 2>&1; then
  EXT_PORT=""
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    if ! ss -Htln | awk '{print $4}' | grep -Eq "[:.]$p\$"; then EXT_PORT=$p; break; fi
  done
  cat >"$DIR/extender.py" <<'PY'
# Minimal scheduler extender: "filter" keeps every node and logs the pod name.
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, logfile = int(sys.argv[1]), sys.argv[2]
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        pod = (args.get("Pod") or args.get("pod") or {}).get("metadata", {}).get("name", "?")
        nodes = args.get("Nodes") or args.get("nodes")
        with open(logfile, "a") as f:
            f.write("%s %s\n" % (self.path, pod))
        body = json.dumps({"Nodes": nodes, "NodeNames": None, "FailedNodes": {}, "Error": ""}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
  python3 "$DIR/extender.py" "$EXT_PORT" "$EXT_LOG" >"$DIR/extender.log" 2>&1 &
  EXT_PID=$!
  cat >"$DIR/scheduler-extender.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://127.0.0.1:$EXT_PORT
  filterVerb: filter
  enableHTTPS: false
  nodeCacheCapable: false
  weight: 1
EOF
  export ADZE_SCHEDULER_CONFIG="$DIR/scheduler-extender.yaml"
  USE_EXTENDER=1
else
  USE_EXTENDER=0
fi

# --- 3. up ------------------------------------------------------------------
t=$(now)
if "$HARNESS_DIR/control-plane.sh" up "$DIR"; then
  pass "control plane up and ready in $(elapsed "$t")s ($DIR)"
else
  fail "control-plane.sh up"
  exit 1
fi
set -a
# shellcheck disable=SC1091
. "$DIR/env"
set +a

# api METHOD PATH [BODY] [CONTENT-TYPE] -> body on stdout; non-2xx -> return 1
api() {
  local method=$1 path=$2 body=${3:-} ctype=${4:-application/json}
  local out code
  out=$(curl -sS --max-time 20 --cacert "$ADZE_CA_CERT" -H "Authorization: Bearer $ADZE_TOKEN" \
    -H "Accept: application/json" -H "Content-Type: $ctype" -X "$method" \
    ${body:+--data-binary "$body"} -w '\n%{http_code}' "$APISERVER$path") || return 1
  code=${out##*$'\n'}
  printf '%s' "${out%$'\n'*}"
  [[ $code == 2* ]] || { echo >&2; echo "HTTP $code from $method $path" >&2; return 1; }
}

# retry SECONDS CMD...: retry until CMD succeeds
retry() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

ver=$(api GET /version | jq -r .gitVersion)
if [[ "$ver" == v1.20.2* ]]; then pass "apiserver /version is $ver"; else fail "apiserver /version is '$ver', want v1.20.2"; fi

# --- Node ---------------------------------------------------------------------
NODE=adze-smoke-node-1
node_json=$(jq -n --arg n "$NODE" '{
  apiVersion: "v1", kind: "Node",
  metadata: {name: $n, labels: {"kubernetes.io/hostname": $n, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
  spec: {},
  status: {
    capacity:    {cpu: "4", memory: "8Gi", pods: "110"},
    allocatable: {cpu: "4", memory: "8Gi", pods: "110"},
    conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "adze smoke test",
                  lastHeartbeatTime: (now | todate), lastTransitionTime: (now | todate)}]
  }}')
if created=$(api POST /api/v1/nodes "$node_json"); then
  pass "Node $NODE created"
  info "taints right after create: $(jq -c '.spec.taints // []' <<<"$created")"
else
  fail "create Node $NODE"
fi

# The apiserver keeps status on create for nodes; make sure it is there, else PATCH /status.
alloc=$(api GET "/api/v1/nodes/$NODE" | jq -c '.status.allocatable')
if [[ "$alloc" != *'"cpu":"4"'* ]]; then
  api PATCH "/api/v1/nodes/$NODE/status" "$(jq -c '{status: .status}' <<<"$node_json")" application/merge-patch+json >/dev/null
  alloc=$(api GET "/api/v1/nodes/$NODE" | jq -c '.status.allocatable')
fi
if [[ "$alloc" == *'"cpu":"4"'* && "$alloc" == *'"memory":"8Gi"'* && "$alloc" == *'"pods":"110"'* ]]; then
  pass "Node allocatable $alloc"
else
  fail "Node allocatable is $alloc"
fi

untaint() {
  local n rv taints patch
  n=$(api GET "/api/v1/nodes/$NODE") || return 1
  rv=$(jq -r .metadata.resourceVersion <<<"$n")
  taints=$(jq -c '[.spec.taints // [] | .[] | select(.key != "node.kubernetes.io/not-ready")]' <<<"$n")
  [[ "$(jq -c '.spec.taints // []' <<<"$n")" == "$taints" ]] && return 0 # nothing to remove
  [[ "$taints" == "[]" ]] && taints=null
  patch=$(jq -nc --arg rv "$rv" --argjson t "$taints" '{metadata: {resourceVersion: $rv}, spec: {taints: $t}}')
  api PATCH "/api/v1/nodes/$NODE" "$patch" application/merge-patch+json >/dev/null
}
if retry 20 untaint; then
  taints=$(api GET "/api/v1/nodes/$NODE" | jq -c '.spec.taints // []')
  ready=$(api GET "/api/v1/nodes/$NODE" | jq -r '.status.conditions[] | select(.type=="Ready") | .status')
  if [[ "$taints" != *not-ready* && "$ready" == True ]]; then
    pass "Node Ready=True, not-ready taint removed (taints now $taints)"
  else
    fail "Node taints=$taints ready=$ready"
  fi
else
  fail "could not remove not-ready taint"
fi

# --- Deployment ---------------------------------------------------------------
deploy=$(jq -n '{
  apiVersion: "apps/v1", kind: "Deployment",
  metadata: {name: "adze-smoke", namespace: "default"},
  spec: {replicas: 3, selector: {matchLabels: {app: "adze-smoke"}},
    template: {metadata: {labels: {app: "adze-smoke"}},
      spec: {terminationGracePeriodSeconds: 0, containers: [{name: "pause", image: "registry.k8s.io/pause:3.9",
        resources: {requests: {cpu: "100m"}}}]}}}}')
t=$(now)
if api POST /apis/apps/v1/namespaces/default/deployments "$deploy" >/dev/null; then
  pass "Deployment adze-smoke (3 x pause:3.9, 100m cpu) created"
else
  fail "create Deployment"
fi

pods() { api GET "/api/v1/namespaces/default/pods?labelSelector=app%3Dadze-smoke"; }
three_created() { [[ "$(pods | jq '.items | length')" == 3 ]]; }
three_bound() { [[ "$(pods | jq --arg n "$NODE" '[.items[] | select(.spec.nodeName == $n)] | length')" == 3 ]]; }
if retry 60 three_created; then
  pass "controller-manager created 3 pods after $(elapsed "$t")s"
else
  fail "pods created: $(pods | jq '.items | length') (want 3)"
fi
if retry 60 three_bound; then
  pass "kube-scheduler bound all 3 pods to $NODE after $(elapsed "$t")s"
  pods | jq -r '.items[] | "      \(.metadata.name) -> \(.spec.nodeName)"'
else
  fail "pods bound: $(pods | jq -c '[.items[] | {(.metadata.name): .spec.nodeName}]')"
  tail -n 20 "$DIR/kube-scheduler.log"
fi
if ((USE_EXTENDER)); then
  if [[ -s "$EXT_LOG" ]] && grep -q '^/filter adze-smoke' "$EXT_LOG"; then
    pass "scheduler called the HTTP extender's filter verb ($(grep -c '^/filter' "$EXT_LOG") calls) via ADZE_SCHEDULER_CONFIG"
  else
    fail "extender filter was not called (see $EXT_LOG, $DIR/kube-scheduler.log)"
  fi
fi

# Play kubelet: mark every pod Running + Ready; the Deployment should become available.
ts=$(date -u +%FT%TZ)
for p in $(pods | jq -r '.items[].metadata.name'); do
  st=$(jq -nc --arg ts "$ts" '{status: {phase: "Running", hostIP: "127.0.0.1", podIP: "127.0.0.1", startTime: $ts,
    conditions: [{type: "Initialized", status: "True", lastTransitionTime: $ts},
                 {type: "ContainersReady", status: "True", lastTransitionTime: $ts},
                 {type: "Ready", status: "True", lastTransitionTime: $ts},
                 {type: "PodScheduled", status: "True", lastTransitionTime: $ts}],
    containerStatuses: [{name: "pause", ready: true, restartCount: 0, image: "registry.k8s.io/pause:3.9",
      imageID: "", started: true, state: {running: {startedAt: $ts}}}]}}')
  api PATCH "/api/v1/namespaces/default/pods/$p/status" "$st" application/strategic-merge-patch+json >/dev/null ||
    info "status patch of $p failed"
done
available() { [[ "$(api GET /apis/apps/v1/namespaces/default/deployments/adze-smoke | jq '.status.availableReplicas // 0')" == 3 ]]; }
if retry 30 available; then
  pass "after faking kubelet pod status, Deployment has 3 available replicas"
else
  fail "Deployment status: $(api GET /apis/apps/v1/namespaces/default/deployments/adze-smoke | jq -c .status)"
fi

# --- CRD + custom object (reflect2 crash check) -----------------------------------
crd='{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.smoke.adze.dev"},
  "spec": {"group": "smoke.adze.dev", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "size": {"type": "integer", "minimum": 1},
          "labels": {"type": "object", "additionalProperties": {"type": "string"}},
          "zones": {"type": "array", "items": {"type": "string"}}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}'
if api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$crd" >/dev/null; then
  pass "CRD widgets.smoke.adze.dev (apiextensions.k8s.io/v1, structural schema) created"
else
  fail "create CRD"
fi
established() { api GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.smoke.adze.dev |
  jq '[.status.conditions[]? | select(.type=="Established" and .status=="True")] | length > 0' | grep -qx true; }
if retry 30 established; then pass "CRD Established"; else fail "CRD not Established"; fi

obj='{"apiVersion": "smoke.adze.dev/v1", "kind": "Widget",
  "metadata": {"name": "w1", "namespace": "default", "labels": {"a": "b"}, "annotations": {"x": "y"}},
  "spec": {"size": 3, "labels": {"team": "adze", "tier": "e2e"}, "zones": ["a", "b"]}}'
create_obj() { api POST /apis/smoke.adze.dev/v1/namespaces/default/widgets "$obj" >/dev/null 2>"$DIR/last-error"; }
# the endpoint can take a moment to be served after Established
if retry 20 create_obj; then
  pass "custom object Widget/w1 created"
else
  fail "create custom object Widget/w1: $(tr '\n' ' ' <"$DIR/last-error")"
fi
got=$(api GET /apis/smoke.adze.dev/v1/namespaces/default/widgets/w1 | jq -c '.spec' 2>/dev/null)
if [[ "$got" == '{"labels":{"team":"adze","tier":"e2e"},"size":3,"zones":["a","b"]}' ]]; then
  pass "custom object read back: $got"
else
  fail "custom object read back: '$got'"
fi
n=$(api GET /apis/smoke.adze.dev/v1/widgets | jq '.items | length' 2>/dev/null)
[[ "$n" == 1 ]] && pass "custom objects listed across namespaces: $n" || fail "list widgets: '$n'"
bad='{"apiVersion": "smoke.adze.dev/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"size": 0}}'
if api POST /apis/smoke.adze.dev/v1/namespaces/default/widgets "$bad" >/dev/null 2>&1; then
  fail "schema validation: size=0 was accepted"
else
  pass "schema validation rejects size=0"
fi

# --- still alive, no panics? -------------------------------------------------------
# (with the unpatched reflect2 v1.0.1 the apiserver does not die: every JSON
#  request that decodes a map panics inside the handler and returns 500, and
#  the log shows "apiserver panic'd on POST /api/v1/nodes")
panics=$(grep -l -E "panic'd|Observed a panic|SIGSEGV|^panic:" "$DIR"/*.log 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
if [[ -z "$panics" ]]; then
  pass "no panics in the component logs"
else
  fail "panics in: $panics"
  grep -h -m3 -E "panic'd on|Observed a panic" "$DIR"/*.log | sed 's/^/      /'
fi
if "$HARNESS_DIR/control-plane.sh" status "$DIR" >/dev/null && [[ "$(api GET /readyz)" == ok ]]; then
  pass "all four processes still running, /readyz ok"
else
  fail "a control plane process died:"
  "$HARNESS_DIR/control-plane.sh" status "$DIR"
  grep -l -E 'SIGSEGV|panic:' "$DIR"/*.log 2>/dev/null | sed 's/^/      crash in /'
fi
