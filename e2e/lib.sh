# Shared by the e2e suites (sourced, not run): the skip guard, PASS/FAIL bookkeeping, polling,
# kubectl shorthands and bringing a control plane up with one retry. Each suite keeps only
# what is its own. Source it from the repository root:  . e2e/lib.sh
# shellcheck shell=bash

# e2e_enabled_or_skip [WHAT]: exits the calling suite with SKIP unless ADZE_E2E=1 (the suites
# need a control plane).
e2e_enabled_or_skip() {
  if [[ "${ADZE_E2E:-0}" != 1 ]]; then
    echo "SKIP: ${1:-e2e} needs a control plane; set ADZE_E2E=1 to run it (see e2e/harness/README.md)"
    exit 0
  fi
}

passed=0; failed=0
pass() { echo "PASS: $*"; passed=$((passed+1)); }
fail() { echo "FAIL: $*"; failed=$((failed+1)); e2e_snapshot; }
# On the first few failures, what the cluster looked like then: CI keeps a failed suite's logs
# dir on a machine nobody can open afterwards, so the output is all there is to go on.
# Suites set E2E_DIAG_LOGS to the log files worth a tail (the provisioner's, the scheduler's).
E2E_DIAG_MAX=3  # snapshots per suite (a constant: output stays bounded)
e2e_snapshot() {
  (( failed <= E2E_DIAG_MAX )) || return 0
  [[ -n "${KUBECONFIG:-}" && -r "${KUBECONFIG:-}" ]] || return 0
  local kc=(kubectl --kubeconfig "$KUBECONFIG" --request-timeout=10s) f
  echo "---- snapshot at this failure ($(date -u +%T))"
  "${kc[@]}" get pods -A -o json 2>/dev/null | jq -r '.items[]
    | select(.status.phase != "Running" and .status.phase != "Succeeded")
    | "pod \(.metadata.namespace)/\(.metadata.name) \(.status.phase) node=\(.spec.nodeName // "-") \(.status.reason // "")"
      + " " + ([.status.conditions[]? | select(.status != "True") | "\(.type)=\(.reason // "?"): \(.message // "" | .[0:160])"] | join("; "))' 2>/dev/null | head -25
  "${kc[@]}" get nodes -o json 2>/dev/null | jq -r '.items[] | "node \(.metadata.name) ready=\([.status.conditions[]? | select(.type=="Ready") | .status][0] // "?")"
    + " taints=\([.spec.taints[]? | "\(.key):\(.effect)"] | join(","))"
    + " pods-alloc=\(.status.allocatable.pods // "?") cpu-alloc=\(.status.allocatable.cpu // "?")"' 2>/dev/null | head -40
  "${kc[@]}" get nodeclaims -o json 2>/dev/null | jq -r '.items[] | "nodeclaim \(.metadata.name) node=\(.status.nodeName // "-")"
    + " " + ([.status.conditions[]? | "\(.type)=\(.status)"] | join(",")) + (if .metadata.deletionTimestamp then " deleting" else "" end)' 2>/dev/null | head -40
  "${kc[@]}" get events -A -o json 2>/dev/null | jq -r '[.items[] | select(.type=="Warning" or .reason=="FailedScheduling")]
    | sort_by(.lastTimestamp // .eventTime // "") | .[-15:][]
    | "event \(.lastTimestamp // .eventTime) \(.involvedObject.kind)/\(.involvedObject.name) \(.reason): \(.message | .[0:200])"' 2>/dev/null
  for f in ${E2E_DIAG_LOGS:-}; do
    [[ -r "$f" ]] || continue
    echo "-- tail of $f"; tail -n 20 "$f" | cut -c1-400
  done
  echo "---- end of snapshot"
}
# check DESCRIPTION CMD...: PASS or FAIL by CMD's status.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# Prints the tally; the suite's status (non-zero when anything failed).
e2e_summary() { echo "$passed passed, $failed failed"; [[ "$failed" -eq 0 ]]; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
# wait_for SECONDS CMD...: polls every 0.2 s until CMD succeeds; status 1 when time runs out.
wait_for() {
  local limit=$1; shift; local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do (( $(date +%s) >= end )) && return 1; sleep 0.2; done
}
# count_is N CMD...: CMD prints exactly N.
count_is() { [[ "$("${@:2}")" == "$1" ]]; }
# jqe ARGS...: `jq -e` that also fails when jq printed nothing. jq 1.6 (Debian bookworm) exits 0
# on empty input, so a check fed by a kubectl that failed would otherwise pass on nothing.
# Exported, so checks run through `bash -c` have it too.
jqe() { local out; out=$(jq -e "$@") || return 1; [[ -n "$out" ]]; }  # empty-input-ok: the definition
export -f jqe
# absent [-i] ERE FILE...: no line of the FILEs matches ERE, and every FILE exists and is not
# empty: `! grep` passes on a log that is missing or was never written.
absent() {
  local flags=-qE f
  if [[ "${1:-}" == -i ]]; then flags=-qiE; shift; fi
  local pat=$1; shift
  (( $# > 0 )) || { echo "absent: no file given" >&2; return 1; }
  for f in "$@"; do [[ -s "$f" ]] || { echo "absent: $f is missing or empty" >&2; return 1; }; done
  ! grep "$flags" -- "$pat" "$@"  # empty-input-ok: every file was checked above
}
export -f absent
# count CMD...: how many lines CMD printed, or nothing and status 1 when CMD failed, so that
# `count_is 0` on a kubectl that failed does not pass (`... | wc -l` prints 0 then).
count() { local out; out=$("$@") || return 1; if [[ -z "$out" ]]; then echo 0; else wc -l <<<"$out"; fi; }
export -f count

# cpu_secs PID: CPU seconds (user + system) the process has used so far; 0 when it is gone.
cpu_secs() {
  [[ -n "${1:-}" && -r /proc/$1/stat ]] || { echo 0; return; }
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

k() { kubectl --kubeconfig "$KUBECONFIG" "$@"; }
kj() { kubectl --kubeconfig "$KUBECONFIG" get "$@" -o json; }

# control_plane_up DIR [NAME]: e2e/harness/control-plane.sh up DIR, retried once (a slow first
# start on a loaded machine should not fail a run; a second failure exits the suite, log shown),
# then DIR/env (KUBECONFIG, APISERVER, ...) exported. `up` clears DIR, so its log lives beside it.
control_plane_up() {
  local dir=$1 name=${2:-} up_log=$1.up.log
  local harness; harness="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/harness"
  if ! "$harness/control-plane.sh" up "$dir" >"$up_log" 2>&1; then
    echo "control plane${name:+ $name} did not come up on the first try; retrying:"; tail -n 30 "$up_log"
    "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
    mkdir -p "$dir"
    "$harness/control-plane.sh" up "$dir" >"$up_log" 2>&1 \
      || { cat "$up_log"; echo "FAIL: control plane${name:+ $name} up"; exit 1; }
  fi
  rm -f "$up_log"
  set -a; . "$dir/env"; set +a
}

# adze_rbac CLOUD [VALUE=true ...]: the chart's RBAC (charts/adze, cloudProvider CLOUD and the
# dotted chart VALUEs set, release `adze` in namespace $ADZE_NS; with
# provisioner.capacityBuffers=true also the chart's CapacityBuffer CRD) applied to the control
# plane just brought up (control_plane_up), and one kubeconfig per component holding its ServiceAccount's token:
#   $PROVISIONER_KUBECONFIG $EXTENDER_KUBECONFIG $AGENT_KUBECONFIG
# Start adze-provisioner, adze-extender and adze-agent with these (and POD_NAMESPACE=$ADZE_NS,
# where their Leases are allowed), never with the admin $KUBECONFIG, which stays for what
# plays the cluster (kubectl, simulated kubelets, the registrar). Exits the suite on failure.
ADZE_NS=adze-system
adze_rbac() {
  local cloud=$1 e2e; e2e="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"; shift
  # shellcheck source=../charts/ci/helm-venv.sh
  . "$e2e/../charts/ci/helm-venv.sh"
  # shellcheck disable=SC2154 # helm_python comes from charts/ci/helm-venv.sh
  "$helm_python" "$e2e/rbac.py" apply "$cloud" "$ADZE_NS" "$ADZE_CONTROL_PLANE_DIR" "$@" \
    || { echo "FAIL: the chart's RBAC applied to the control plane"; exit 1; }
  ADZE_RBAC_CLOUD=$cloud
  PROVISIONER_KUBECONFIG=$ADZE_CONTROL_PLANE_DIR/provisioner.kubeconfig
  EXTENDER_KUBECONFIG=$ADZE_CONTROL_PLANE_DIR/extender.kubeconfig
  AGENT_KUBECONFIG=$ADZE_CONTROL_PLANE_DIR/agent.kubeconfig
  export ADZE_NS PROVISIONER_KUBECONFIG EXTENDER_KUBECONFIG AGENT_KUBECONFIG
}

# rbac_audit [LABEL]: the dynamic RBAC proof for the current control plane, run before it goes
# down: its audit log must show requests from Adze's ServiceAccounts, none refused (403), none
# outside charts/ci/rbac-calls.yaml. The calls used go to $ADZE_CONTROL_PLANE_DIR/rbac-used.txt.
rbac_audit() {
  local e2e; e2e="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  check "${1:+[$1] }RBAC: Adze's ServiceAccounts were never refused and made only declared calls (audit log)" \
    "$helm_python" "$e2e/rbac.py" audit "$ADZE_RBAC_CLOUD" "$ADZE_NS" "$AUDIT_LOG" "$ADZE_CONTROL_PLANE_DIR/rbac-used.txt"
}

# inotify_raise NAME MINIMUM / inotify_restore: every hollow kubelet takes inotify instances,
# and the default 128 per user stops new ones short of ~40 nodes. Raised for a suite's run
# (as root), put back by inotify_restore in its EXIT trap -- unless something else changed the
# value meanwhile (another run on the machine), which is then left alone.
inotify_old=() inotify_set=()
inotify_raise() { # FILE MINIMUM
  local f=/proc/sys/fs/inotify/$1 old
  old=$(cat "$f" 2>/dev/null) || return 0
  (( old >= $2 )) && return 0
  if echo "$2" >"$f" 2>/dev/null; then
    inotify_old+=("$1=$old"); inotify_set+=("$1=$2")
    echo "raised $f $old -> $2 for the run"
  else
    echo "note: could not raise $f ($old; not root?): many hollow nodes may fail to start"
  fi
}
inotify_restore() {
  local i name
  for i in "${!inotify_old[@]}"; do
    name=${inotify_old[i]%%=*}
    [[ "$(cat "/proc/sys/fs/inotify/$name")" == "${inotify_set[i]#*=}" ]] \
      && echo "${inotify_old[i]#*=}" >"/proc/sys/fs/inotify/$name"
  done
}

# e2e_nodepool NAME [CPU-LIMIT] [TEMPLATE-SPEC-LINE] [DISRUPTION-FLOW-MAP]: the suites' NodePool
# (amd64, on-demand, c/m/r of generation 5 or later), its nodes labelled e2e-pool=NAME; the
# line goes under spec.template.spec (e.g. "expireAfter: 60s"), the map is spec.disruption.
e2e_nodepool() {
  cat <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {e2e-pool: $1}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: aws.adze.sh/instance-category, operator: In, values: [c, m, r]}
        - {key: aws.adze.sh/instance-generation, operator: Gt, values: ["4"]}
      ${3:-}
${4:+  disruption: $4}
  limits: {cpu: "${2:-1000}"}
YAML
}
# e2e_deployment NAMESPACE NAME REPLICAS CPU MEMORY NODE-LABEL-KEY NODE-LABEL-VALUE [POD-SPEC-LINE]:
# pause containers asking CPU and MEMORY, on nodes labelled KEY=VALUE, no termination grace.
e2e_deployment() {
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      nodeSelector: {"$6": "$7"}
      terminationGracePeriodSeconds: 0
      ${8:-}
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: "$4", memory: "$5"}}
YAML
}
