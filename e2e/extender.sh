#!/usr/bin/env bash
# End-to-end test of the scheduler extender (adze-extender) with the real kube-scheduler of a
# Kubernetes 1.20 control plane (e2e/harness) and `adze-provisioner run --cloud-provider
# simulated --simulated-instance-dir`: every instance Adze launches boots a kubemark hollow
# kubelet (real kubelet code over a fake runtime, e2e/harness/hollow-node.sh watch) after a
# boot delay, which registers its Node; so do the fixed nodes of the preemption and
# client-certificate sections. Only the throughput rounds' nodes are Node objects written here,
# on purpose (see there). Skips unless ADZE_E2E=1.
#
#   ADZE_E2E=1 e2e/extender.sh
#
# Two control planes, one after the other, run the same scenario:
#   without  kube-scheduler as shipped;
#   with     kube-scheduler configured with the extender (filter, bind, nodeCacheCapable;
#            no prioritize, as the chart renders it).
# Scenario: 20 pods of deployment A go pending -> NodeClaims; while those boot (the hollow
# kubelet starts ADZE_E2E_BOOT_DELAY after launch, default 20s, then registers), 20 pods of deployment B that would fit on A's nodes go
# pending -> NodeClaims of their own. When the nodes register, A's pods should land on the
# nodes launched for them and nothing more should be launched. Reported per plane: NodeClaims
# launched beyond the plan for A then B ("extra"), and A pods not on their nominated node.
# On the "with" plane the extender runs as two replicas behind a Service-like proxy, and the
# leading replica is stopped midway (see below): still no pod off its node.
# Then throughput, side by side on the "with" plane: ADZE_E2E_TPUT_ROUNDS (default 12, 6 per
# arm) rounds alternate kube-scheduler with the extender and without it (the extender stopped,
# kube-scheduler restarted with the shipped configuration) in the order with, without,
# without, with, ... so drift in the machine's load falls on both arms alike. The extender
# runs as the chart deploys it by default: HTTPS, kube-scheduler's client certificate
# required (a CA and both certificates made here with openssl). Each round releases
# ADZE_E2E_TPUT_PODS (default 500) pending pods onto 10 fresh roomy nodes at once and times
# their binding; pods bound per second is reported per round, and per arm as the median
# round with the spread (min-max) and pooled (all pods / all time). The extender's cost,
# 1 - median with / median without, is held to ADZE_E2E_TPUT_BUDGET (default 5 %): printed
# as within or OVER the budget, a failing check only with ADZE_E2E_TPUT_GATE=1.
# Then, on the "with" plane: kube-scheduler is restarted with the extender stanza shipped for
# 1.20 (manifests/scheduler/kube-scheduler-config-v1beta1.yaml: ignorable, preemptVerb, no
# bindVerb), the extender is killed, pods still get scheduled; it is started again and is
# consulted again. Under the same stanza, preemption: 1.20.2 never calls an extender's
# preempt verb (an upstream regression, fixed in later releases), so it preempts for a
# high-priority pod regardless; the extender's answer for the same real pods is asked
# directly (no candidates where a NodePool can serve the pod, the candidates otherwise). Then
# kube-scheduler-pr103019 (1.20.2 with upstream's preempt fix, from e2e/harness) runs the
# same stanza: it asks the extender, and a high-priority pod a NodePool can serve preempts
# nothing while one no NodePool can serve still preempts. Last, client certificates: the
# extender with --client-ca refuses an anonymous /bind, and kube-scheduler with tlsConfig
# certFile/keyFile schedules through it.
#
# Prints PASS:/FAIL:/RESULT: lines and "N passed, N failed"; exits non-zero on failure.
# Everything started here is stopped by the EXIT trap; ADZE_KEEP=1 keeps the logs.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
BOOT_DELAY=${ADZE_E2E_BOOT_DELAY:-20s}
[[ "$BOOT_DELAY" =~ ^([0-9]{1,3})s?$ ]] || { echo "FAIL: ADZE_E2E_BOOT_DELAY is whole seconds (e.g. 20s), not '$BOOT_DELAY'"; exit 1; }
BOOT_SECS=${BASH_REMATCH[1]}
TPUT_PODS=${ADZE_E2E_TPUT_PODS:-500}
TPUT_ROUNDS=${ADZE_E2E_TPUT_ROUNDS:-12}
TPUT_BUDGET=${ADZE_E2E_TPUT_BUDGET:-5}

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-kubemark.sh" >/dev/null 2>"/tmp/adze-kubemark-build.$$.log" \
  || { cat "/tmp/adze-kubemark-build.$$.log"; echo "FAIL: kubemark build"; exit 1; }
rm -f "/tmp/adze-kubemark-build.$$.log"
# ADZE_E2E_NO_BUILD=1 runs the binaries already in $target/release (e.g. built with
# `cargo build --release -p adze-extender -p adze-provisioner --bins`, which is much quicker on a
# busy machine than the whole workspace).
if [[ "${ADZE_E2E_NO_BUILD:-0}" != 1 ]]; then
  "$root/e2e/harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
fi
prov_bin=$target/release/adze-provisioner
ext_bin=$target/release/adze-extender
crdgen=$target/release/crdgen

work=$(mktemp -d /tmp/adze-e2e-ext.XXXXXX)
dir=; prov_pid=; ext_pid=; rep_pid=(); proxy_pid=; fleet_pid=
stop_plane() {
  [[ -n "$prov_pid" ]] && kill "$prov_pid" 2>/dev/null && wait "$prov_pid" 2>/dev/null
  [[ -n "$ext_pid" ]] && kill "$ext_pid" 2>/dev/null && wait "$ext_pid" 2>/dev/null
  for p in "${rep_pid[@]}" $proxy_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rep_pid=(); proxy_pid=
  prov_pid=; ext_pid=
  [[ -n "$fleet_pid" ]] && kill "$fleet_pid" 2>/dev/null && wait "$fleet_pid" 2>/dev/null
  fleet_pid=
  [[ -n "$dir" ]] && "$harness/hollow-node.sh" stop-all "$dir" >/dev/null 2>&1
  [[ -n "$dir" ]] && "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  dir=
}
cleanup() {
  stop_plane
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
# The node lifecycle controller on: it lifts the hollow kubelets' not-ready taint once they
# report Ready. The throughput nodes have no kubelet: a long monitor grace keeps them Ready
# (untainted, their pods untouched) for the whole series of rounds.
export ADZE_NODE_LIFECYCLE=1 ADZE_NODE_MONITOR_GRACE=15m
export ADZE_KCM_EXTRA_ARGS="${ADZE_KCM_EXTRA_ARGS:---kube-api-qps=500 --kube-api-burst=1000}"

# A port below the kernel's ephemeral range (32768-60999 here), so no outgoing connection can
# hold it by the time a server binds it (a CI run lost a round to "Address already in use"),
# and in use by no socket in any state.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    ss -Htan 2>/dev/null | awk '{print $4}' | grep -Eq "[:.]$p\$" || { echo "$p"; return; }
  done
  return 1
}

# up NAME [SCHEDULER_CONFIG]: a fresh control plane in $work/NAME, CRDs installed, and the
# fleet watch: a hollow kubelet for every instance record the simulated cloud writes in
# $dir/instances, started BOOT_SECS after the record (the machine's boot).
up() {
  dir=$work/$1; mkdir -p "$dir"
  ADZE_SCHEDULER_CONFIG="${2:-}" control_plane_up "$dir" "$1"
  E2E_DIAG_LOGS="$dir/provisioner.log $dir/fleet.log $dir/extender.log"  # tailed by e2e_snapshot on a failure
  "$crdgen" --without-cel | k apply -f - >/dev/null
  wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh
  adze_rbac simulated
  mkdir -p "$dir/instances"
  "$harness/hollow-node.sh" watch "$dir" "$dir/instances" --boot-delay "$BOOT_SECS" >>"$dir/fleet.log" 2>&1 &
  fleet_pid=$!
}

start_extender() { # PORT
  KUBECONFIG=$EXTENDER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$ext_bin" --listen "127.0.0.1:$1" >>"$dir/extender.log" 2>&1 &
  ext_pid=$!
  wait_for 60 curl -sf "http://127.0.0.1:$1/readyz"
}
start_provisioner() {
  # Consolidation (proven in e2e/disruption.sh) would add NodeClaims this suite counts: dry run.
  # ADZE_E2E_PROVISIONER_FLAGS replaces --disruption-dry-run (e.g. empty for a provisioner built
  # before consolidation existed).
  # shellcheck disable=SC2086
  KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$prov_bin" run ${ADZE_E2E_PROVISIONER_FLAGS---disruption-dry-run} --cloud-provider simulated --simulated-instance-dir "$dir/instances" >>"$dir/provisioner.log" 2>&1 &
  prov_pid=$!
  wait_for 60 grep -q "cluster state synced" "$dir/provisioner.log"
}

nodepool() { e2e_nodepool "$1" 100000; }  # name
deployment() { e2e_deployment "$@"; }  # namespace name replicas cpu memory selector-key selector-value
# A node of no NodePool played by a hollow kubelet, labelled KEY=yes for each KEY given;
# returns once it is Ready and its not-ready taint lifted.
kubelet_node() { # name cpus label-key...
  local name=$1 cpus=$2 labels="" key; shift 2
  for key in "$@"; do labels+="${labels:+,}$key=yes"; done
  "$harness/hollow-node.sh" start "$dir" "$name" --cpu "$cpus" --memory 16Gi --max-pods 110 --labels "$labels" >>"$dir/fleet.log" 2>&1 \
    || { echo "FAIL: hollow node $name did not start"; tail -n 20 "$dir/hollow/$name/kubelet.log"; return 1; }
  wait_for 90 schedulable "$name"
}
# schedulable NODE: Ready, and no NoSchedule/NoExecute taint left.
schedulable() {
  k get node "$1" -o json 2>/dev/null | jqe '(any(.status.conditions[]?; .type == "Ready" and .status == "True")) and ([.spec.taints[]? | select(.effect != "PreferNoSchedule")] | length == 0)'
}
claims() { k get nodeclaims -o name 2>/dev/null | wc -l; }
bound_pods() { # namespace
  k get pods -n "$1" -o json | jq '[.items[] | select((.spec.nodeName // "") != "")] | length'
}
pods_exist() { k get pods -n "$1" -o name | wc -l; }
bound_some() { (( $(bound_pods "$1") > 0 )); }
# The extender has recorded its FailedEveryNode Event on some pod of namespace b.
b_signalled() { (( $(k get events -n b --field-selector reason=FailedEveryNode,source=adze-extender -o name | wc -l) > 0 )); }
running_pods() { k get pods -n "$1" -o json | jq '[.items[] | select(.status.phase == "Running")] | length'; }
# Every NodeClaim has its Node, and every Node of a NodeClaim was registered by a kubelet.
claims_on_kubelets() {
  local n_claims n_nodes
  n_claims=$(claims)
  k get nodeclaims -o json | jqe '.items | length > 0 and all((.status.nodeName // "") != "")' || return 1
  n_nodes=$(k get nodes -l adze.sh/nodeclaim -o json | jq '[.items[] | select(.status.nodeInfo.kubeletVersion == "v1.20.2")] | length')
  [[ "$n_nodes" == "$n_claims" ]]
}
# A pods whose node is not the node of the claim they were nominated to.
misplaced_a() {
  k get nodeclaims -o json >"$dir/claims.json"
  k get pods -n a -o json >"$dir/pods-a.json"
  jq -n --slurpfile c "$dir/claims.json" --slurpfile p "$dir/pods-a.json" '
    ([$c[0].items[] | (.status.nodeName // "") as $n
       | (.metadata.annotations["adze.sh/nominated-pods"] // "[]" | fromjson)[] | {key: .uid, value: $n}]
     | from_entries) as $nominated
    | [$p[0].items[] | select($nominated[.metadata.uid] != null and $nominated[.metadata.uid] != .spec.nodeName)]
    | length'
}

# ---- a DaemonSet created after A's NodeClaims were planned (Karpenter #731) ----------------
# One pod per node of pool ab asking a whole cpu: A's nodes were sized without it, B's (planned
# after it) with it. The ledger keeps A's room for A's pods, so the DaemonSet pod never takes
# it; where it no longer fits it waits, and the provisioner marks that node's NodeClaim
# Drifted (DaemonSetsDrifted; this suite's disruption is a dry run, so nothing is replaced).
late_daemonset() {
  k create namespace late >/dev/null
  cat <<YAML | k apply -f - >/dev/null
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: late-agent, namespace: late}
spec:
  selector: {matchLabels: {app: late-agent}}
  template:
    metadata: {labels: {app: late-agent}}
    spec:
      nodeSelector: {e2e-pool: ab}
      terminationGracePeriodSeconds: 0
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: "1", memory: 64Mi}}
YAML
  LATE_DS_AT=$(k get daemonset -n late late-agent -o jsonpath='{.metadata.creationTimestamp}')
  echo "[late DaemonSet] created at $LATE_DS_AT, after A's $(claims) NodeClaims were planned"
}
# "NODE STATE" per node of pool ab: its late-agent pod Running, else Drifted (its NodeClaim's
# Drifted condition says DaemonSetsDrifted), else waiting.
late_ds_states() {
  k get nodes -l e2e-pool=ab -o json >"$dir/ab-nodes.json"
  k get pods -n late -o json >"$dir/late-pods.json"
  k get nodeclaims -o json >"$dir/claims.json"
  jq -rn --slurpfile n "$dir/ab-nodes.json" --slurpfile p "$dir/late-pods.json" --slurpfile c "$dir/claims.json" '
    ([$p[0].items[] | select(.status.phase == "Running") | .spec.nodeName]) as $running
    | ([$c[0].items[] | select(any(.status.conditions[]?; .type == "Drifted" and .status == "True"
         and ((.reason // "") + " " + (.message // "") | test("DaemonSets")))) | .status.nodeName]) as $drifted
    | $n[0].items[] | .metadata.name as $x
    | "\($x) \(if ($running | index($x)) then "running" elif ($drifted | index($x)) then "drifted" else "waiting" end)"'
}
late_ds_settled() { ! late_ds_states | grep -q ' waiting$'; }
# Nodes whose NodeClaim was launched for B's pods only (planned after the DaemonSet existed).
b_nodes() {
  k get pods -n b -o json >"$dir/pods-b.json"
  jq -rn --slurpfile c "$dir/claims.json" --slurpfile b "$dir/pods-b.json" '
    ([$b[0].items[].metadata.uid]) as $bu
    | $c[0].items[] | select((.status.nodeName // "") != "")
    | (.metadata.annotations["adze.sh/nominated-pods"] // "[]" | fromjson | map(.uid)) as $u
    | select(($u | length) > 0 and all($u[]; . as $x | $bu | index($x)))
    | .status.nodeName'
}

# ---- A then B: extra NodeClaims ----------------------------------------------------------
# Sets EXTRA and MISPLACED.
scenario_a_then_b() { # label
  local label=$1
  k create namespace a >/dev/null; k create namespace b >/dev/null
  nodepool ab | k apply -f - >/dev/null
  local t_a; t_a=$(now)
  deployment a a 20 1 1Gi e2e-pool ab | k apply -f - >/dev/null
  wait_for 60 bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt 0 ]"
  sleep 2 # the rest of A's batch
  local after_a; after_a=$(claims)
  [[ -n "${AFTER_A:-}" ]] && "$AFTER_A" # e.g. a DaemonSet created after A's NodeClaims were planned
  # B's machines are held in their boot until the signal below: real kubelets come up Ready
  # (not-ready taint lifted) a few seconds apart, and B's pods in kube-scheduler's backoff
  # could otherwise first be tried when B's own nodes were up, so that whether they ever met
  # A's nodes alone was a race (one CI run of three lost it).
  touch "$dir/instances/.hold"
  # B outranks A in kube-scheduler's queue (a higher priority that never preempts): when an A
  # node comes up, B's waiting pods are tried on it before A's own pods fill it. Without the
  # ranking the queue's order (priority, then time of last failure) decided whether any B pod
  # was ever tried while A's room stood empty: A's pods, failed first, usually went first and
  # filled each node, B's then met "Insufficient cpu" in kube-scheduler and the extender was
  # never asked (one CI run in several lost the race, more often once failover added retries).
  cat <<YAML | k apply -f - >/dev/null
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-b-first}
value: 1000
preemptionPolicy: Never
YAML
  deployment b b 20 1 1Gi e2e-pool ab "priorityClassName: e2e-b-first" | k apply -f - >/dev/null
  wait_for 60 bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt $after_a ]"
  sleep 3 # the rest of B's batch; the nodes are still booting
  local planned; planned=$(claims)
  [[ -n "${MIDWAY:-}" ]] && "$MIDWAY" # e.g. the leading extender replica stopped
  local registered
  registered=$(k get nodes -l adze.sh/nodeclaim -o name | wc -l)
  echo "[$label] NodeClaims for A: $after_a; for A then B: $planned; nodes registered so far: $registered"
  # Measured wait while only A's nodes are up: with the extender, B's pods fail filter on
  # every node (A's room is kept for A's pods); without it, they take A's room.
  # (Without it, a few seconds of A's nodes alone once its pods start binding.)
  if [[ "$label" == with ]]; then wait_for 120 b_signalled; else wait_for 120 bound_some a; sleep 5; fi
  echo "[$label] B's machines released $(elapsed "$t_a" "$(now)") s after A was applied"
  rm -f "$dir/instances/.hold"
  wait_for 240 count_is 20 bound_pods a
  wait_for 180 count_is 20 bound_pods b
  echo "RESULT: [$label] A applied -> all 40 pods of A and B bound: $(elapsed "$t_a" "$(now)") s (hollow kubelets started ${BOOT_SECS} s after each launch)"
  check "[$label] all 40 pods of A and B bound" count_is 40 bash -c "echo \$(( \$(kubectl --kubeconfig $KUBECONFIG get pods -n a -o json | jq '[.items[]|select(.spec.nodeName!=null)]|length') + \$(kubectl --kubeconfig $KUBECONFIG get pods -n b -o json | jq '[.items[]|select(.spec.nodeName!=null)]|length') ))"
  wait_for 120 count_is 20 running_pods a
  wait_for 120 count_is 20 running_pods b
  check "[$label] every NodeClaim's Node registered by its hollow kubelet (v1.20.2)" claims_on_kubelets
  check "[$label] the 40 pods Running as their kubelets report" count_is 40 bash -c "echo \$(( \$(kubectl --kubeconfig $KUBECONFIG get pods -n a -o json | jq '[.items[]|select(.status.phase==\"Running\")]|length') + \$(kubectl --kubeconfig $KUBECONFIG get pods -n b -o json | jq '[.items[]|select(.status.phase==\"Running\")]|length') ))"
  sleep 5 # let a late batch show up
  EXTRA=$(( $(claims) - planned ))
  MISPLACED=$(misplaced_a)
  echo "RESULT: [$label] extra NodeClaims beyond the plan for A then B: $EXTRA; A pods not on their nominated node: $MISPLACED"
}

# ---- throughput: pending pods released onto roomy nodes at once -------------------------
# Sets TPUT (pods bound per second), TPUT_BOUND and TPUT_SECS.
throughput() { # label round
  local label=$1 r=$2 n ns=tput-$2 key=e2e-tput-$2
  k create namespace "$ns" >/dev/null
  # Fresh nodes with room for every pod; not labelled yet, so the pods wait Unschedulable.
  # Node objects with no kubelet, on purpose: the rounds time kube-scheduler's binding of
  # thousands of pods with and without the extender, and kubelets starting those pods would
  # load the same 2 cores unevenly across the arms (hollow kubelets play every other node here).
  for n in 1 2 3 4 5 6 7 8 9 10; do
    cat <<YAML | k create -f - >/dev/null
apiVersion: v1
kind: Node
metadata: {name: tput-$r-$n, labels: {kubernetes.io/hostname: tput-$r-$n, e2e-tput-round: "$r"}}
status:
  capacity: {cpu: "1000", memory: 4000Gi, pods: "1000"}
  allocatable: {cpu: "1000", memory: 4000Gi, pods: "1000"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, message: simulated}]
YAML
    k taint nodes "tput-$r-$n" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1
  done
  deployment "$ns" tput "$TPUT_PODS" 10m 10Mi "$key" yes | k apply -f - >/dev/null
  wait_for 120 count_is "$TPUT_PODS" pods_exist "$ns"
  sleep 3 # every pod has been tried once and is waiting as Unschedulable
  local cpu0 cpu1 offset algo0 algo1 ext0 ext1
  # Timed by the apiserver's audit log (e2e/harness/bind-rate.py): first node label to last
  # binding, whoever binds. The wait below only reads the log's new lines, so it neither
  # loads the apiserver nor decides the time.
  offset=$(stat -c %s "$AUDIT_LOG")
  cpu0=$(cpu_snapshot); algo0=$(sched_algorithm); ext0=$(filter_handler)
  k label nodes -l "e2e-tput-round=$r" "$key=yes" >/dev/null
  wait_for 300 bindings_at_least "$TPUT_PODS" "$ns" "$offset"
  cpu1=$(cpu_snapshot); algo1=$(sched_algorithm); ext1=$(filter_handler)
  read -r TPUT_BOUND TPUT_SECS <<<"$(python3 "$harness/bind-rate.py" "$AUDIT_LOG" "$offset" "$ns" "tput-$r-")"
  TPUT=$(awk -v n="$TPUT_BOUND" -v s="$TPUT_SECS" 'BEGIN{if (s > 0) printf "%.1f", n/s; else print 0}')
  echo "RESULT: [round $r, $label] $TPUT_BOUND of $TPUT_PODS pods bound $TPUT_SECS s after the nodes were labelled: $TPUT pods/s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "$cpu0 $cpu1" | awk -v n="$TPUT_BOUND" -v r="$r" -v l="$label" '{ printf "RESULT: [round %s, %s] CPU seconds during the round: kube-scheduler %.2f, kube-apiserver %.2f, etcd %.2f, extender %.2f (extender %.0f us per pod)\n", r, l, $5-$1, $6-$2, $7-$3, $8-$4, (n > 0 ? 1e6*($8-$4)/n : 0) }'
  # Where a pod's serial time goes: kube-scheduler's scheduling algorithm (filter plugins, the
  # extender's exchange, score) per attempt, and the extender's own filter handler per call.
  TPUT_ALGO_US=$(echo "$algo0 $algo1" | awk '{ n = $4 - $2; printf "%.0f", (n > 0 ? 1e6 * ($3 - $1) / n : 0) }')
  echo "$algo0 $algo1 $ext0 $ext1" | awk -v r="$r" -v l="$label" '{ n = $4 - $2; m = $8 - $6; printf "RESULT: [round %s, %s] kube-scheduler scheduling algorithm %.0f us per attempt (%d attempts); extender filter handler %.0f us per call (%d calls)\n", r, l, (n > 0 ? 1e6 * ($3 - $1) / n : 0), n, (m > 0 ? 1e6 * ($7 - $5) / m : 0), m }'
  check "[round $r, $label] all $TPUT_PODS throughput pods bound" count_is "$TPUT_PODS" bound_pods "$ns"
}

# bindings_at_least N NAMESPACE OFFSET: the audit log, from byte OFFSET on, records at least N
# successful bindings of pods in NAMESPACE.
bindings_at_least() {
  local n
  n=$(tail -c +"$(($3 + 1))" "$AUDIT_LOG" | grep -F "\"namespace\":\"$2\"" | grep -F '"subresource":"binding"' | grep -cF '"code":201')
  (( n >= $1 ))
}

# "SUM COUNT" of kube-scheduler's scheduling_algorithm_duration_seconds (the serial part of a
# scheduling cycle that calls the extender), from its /metrics; "0 0" when unreadable.
sched_algorithm() {
  curl -sk --max-time 5 -H "Authorization: Bearer $ADZE_TOKEN" "https://127.0.0.1:$SCHEDULER_PORT/metrics" 2>/dev/null \
    | awk '$1 == "scheduler_scheduling_algorithm_duration_seconds_sum" {s = $2} $1 == "scheduler_scheduling_algorithm_duration_seconds_count" {c = $2} END {print (s == "" ? 0 : s), (c == "" ? 0 : c)}'
}
# "SUM COUNT" of the throughput extender's filter handler durations; "0 0" while it is stopped.
filter_handler() {
  curl -sf --max-time 5 --cacert "$pki/ca.crt" "https://127.0.0.1:$tput_port/metrics" 2>/dev/null \
    | awk '$1 == "adze_extender_request_duration_seconds_sum{verb=\"filter\"}" {s = $2} $1 == "adze_extender_request_duration_seconds_count{verb=\"filter\"}" {c = $2} END {print (s == "" ? 0 : s), (c == "" ? 0 : c)}'
}

# CPU seconds used by each part during a round, printed with the round's result.
cpu_snapshot() {
  echo "$(cpu_secs "$(cat "$dir/kube-scheduler.pid")") $(cpu_secs "$(cat "$dir/kube-apiserver.pid" 2>/dev/null)") $(cpu_secs "$(cat "$dir/etcd.pid" 2>/dev/null)") $(cpu_secs "$ext_pid")"
}

# restart_scheduler CONFIG [BINARY]: kube-scheduler of the current plane restarted on CONFIG
# (and BINARY instead of the plane's own kube-scheduler).
restart_scheduler() {
  local old cmd; old=$(cat "$dir/kube-scheduler.pid")
  kill "$old"; wait_for 30 bash -c "! kill -0 $old"
  cp "$1" "$dir/scheduler.yaml"
  cmd=$(cat "$dir/kube-scheduler.cmdline")
  [[ -n "${2:-}" ]] && cmd="$(printf '%q' "$2") ${cmd#* }"
  eval "setsid $cmd </dev/null >>'$dir/kube-scheduler.log' 2>&1 &"
  echo $! >"$dir/kube-scheduler.pid"
  wait_for 60 bash -c "curl -ksf --max-time 2 https://127.0.0.1:$SCHEDULER_PORT/healthz | grep -qx ok"
}

# Both planes: kube-scheduler's client at 500 QPS, so neither run is capped by the default
# 50 QPS of its binding calls (the extender binds with its own client).
scheduler_config() { # extenders-yaml
  cat <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: @DIR@/scheduler.kubeconfig
  qps: 500
  burst: 1000
$1
YAML
}

# ================= plane 1: kube-scheduler without the extender ==========================
echo "== plane 'without': kube-scheduler as shipped"
scheduler_config "" >"$work/scheduler-plain.yaml"
up without "$work/scheduler-plain.yaml"
start_provisioner
check "[without] provisioner started" kill -0 "$prov_pid"
scenario_a_then_b without
extra_without=$EXTRA; misplaced_without=$MISPLACED
kill "$prov_pid"; wait "$prov_pid" 2>/dev/null; prov_pid=
rbac_audit without
stop_plane

# ================= plane 2: kube-scheduler with the extender =============================
echo "== plane 'with': kube-scheduler with adze-extender"
port=$(free_port)
# As the chart renders it (no prioritizeVerb: filter alone places a pod on the node launched
# for it), with bindVerb, which the chart adds on 1.30+ or with ignorable: false.
scheduler_config "extenders:
  - urlPrefix: http://127.0.0.1:$port
    filterVerb: filter
    bindVerb: bind
    nodeCacheCapable: true
    httpTimeout: 5s" >"$work/scheduler-extender.yaml"
up with "$work/scheduler-extender.yaml"
# Two extender replicas behind a Service-like proxy (e2e/harness/service-proxy.py: per-request
# round-robin over the replicas whose /readyz answers 200). Only the holder of the
# adze-extender Lease reports ready, so every verb meets one ledger. Midway through the
# scenario (A's and B's NodeClaims planned, their nodes still booting) the leader is stopped
# as a rollout stops it (SIGTERM): it gives the Lease up and the other replica takes over.
rep_port=([1]=$(free_port) [2]=$(free_port))
for i in 1 2; do
  KUBECONFIG=$EXTENDER_KUBECONFIG POD_NAMESPACE=$ADZE_NS POD_NAME=ext-$i "$ext_bin" --listen "127.0.0.1:${rep_port[$i]}" >>"$dir/extender-$i.log" 2>&1 &
  rep_pid[$i]=$!
done
python3 "$harness/service-proxy.py" --listen "127.0.0.1:$port" \
  --backend "127.0.0.1:${rep_port[1]}" --backend "127.0.0.1:${rep_port[2]}" >"$dir/service-proxy.log" 2>&1 &
proxy_pid=$!
wait_for 60 curl -sf "http://127.0.0.1:$port/readyz"
check "[with] one of two extender replicas ready behind the Service proxy on 127.0.0.1:$port" curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"
lease_holder() { k get lease -n "$ADZE_NS" adze-extender -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
replica_ready() { curl -sf -o /dev/null "http://127.0.0.1:${rep_port[$1]}/readyz"; }
leader_i=$(lease_holder | sed -n 's/^ext-\([12]\)_.*/\1/p')
follower_i=$((3 - ${leader_i:-1}))
check "[replicas] ext-${leader_i:-?} holds the Lease and is ready; ext-$follower_i is not ready" \
  bash -c "[ -n '$leader_i' ] && curl -sf -o /dev/null http://127.0.0.1:${rep_port[${leader_i:-1}]}/readyz && ! curl -sf -o /dev/null http://127.0.0.1:${rep_port[$follower_i]}/readyz"
fail_over() {
  echo "[replicas] stopping the leader ext-$leader_i (SIGTERM) while the nodes boot"
  kill "${rep_pid[$leader_i]}"; wait "${rep_pid[$leader_i]}" 2>/dev/null
  wait_for 30 replica_ready "$follower_i"
}
start_provisioner
check "[with] provisioner started" kill -0 "$prov_pid"
MIDWAY=fail_over AFTER_A=late_daemonset scenario_a_then_b with
extra_with=$EXTRA; misplaced_with=$MISPLACED
wait_for 120 late_ds_settled
late_ds_states >"$dir/late-states.txt"
echo "RESULT: [late DaemonSet] per node of pool ab: $(awk '{print $2}' "$dir/late-states.txt" | sort | uniq -c | tr -s ' ' | paste -sd, -)"
check "[late DaemonSet] its pod runs on every node of pool ab where it fits; every node where it does not is marked DaemonSetsDrifted" \
  absent ' waiting$' "$dir/late-states.txt"
late_b=$(b_nodes | sort -u | paste -sd" " -)
check "[late DaemonSet] B's nodes, planned after it, run it ($(wc -w <<<"$late_b") nodes)" \
  bash -c "[ -n '$late_b' ] && for n in $late_b; do grep -qx \"\$n running\" '$dir/late-states.txt' || exit 1; done"
# None of A's pods was evicted, preempted or recreated to make room: all 20 are older than the
# DaemonSet, and (above) every one is on the node launched for it.
check "[late DaemonSet] all 20 A pods bound and created before the DaemonSet (none evicted or recreated)" \
  bash -c "kubectl --kubeconfig '$KUBECONFIG' get pods -n a -o json | jqe --arg t '$LATE_DS_AT' '[.items[] | select((.spec.nodeName // \"\") != \"\" and .metadata.creationTimestamp < \$t)] | length == 20'"
check "[replicas] the Lease moved to ext-$follower_i ($(lease_holder))" bash -c "[[ '$(lease_holder)' == ext-${follower_i}_* ]]"
check "[replicas] the stopped leader gave the Lease up on SIGTERM" grep -q 'leader lease released' "$dir/extender-$leader_i.log"
# The proxy logs every change of the ready set: never two replicas serving at once.
both=$(grep -c "^[0-9.]* ready: \['[^']*', '" "$dir/service-proxy.log")
ready_sets=$(grep -c ' ready: ' "$dir/service-proxy.log")
check "[replicas] never two replicas ready at once (ready sets: $ready_sets, with two: $both)" test "${ready_sets:-0}" -gt 0 -a "$both" = 0
served_after=$(grep -c " -> 127.0.0.1:${rep_port[$follower_i]} 200" "$dir/service-proxy.log")
check "[replicas] the new leader answered kube-scheduler after the handover ($served_after requests)" test "$served_after" -gt 0
check "[with] zero extra NodeClaims (got $extra_with)" test "$extra_with" = 0
check "[with] every A pod on the node launched for it (misplaced: $misplaced_with)" test "$misplaced_with" = 0
# While only A's nodes were up, B's pods were turned away from every node: the extender records
# an Event on each for the provisioner (the "fails everywhere" signal), found by the same field
# selector the provisioner watches with (reason and source, served by this 1.20 apiserver), and
# matched by UID to pods that exist. It no longer writes pods: no B pod carries the old annotation.
signalled=$(k get events -n b --field-selector reason=FailedEveryNode,source=adze-extender -o json \
  | jq -r --argjson pods "$(kj pods -n b)" '[$pods.items[].metadata.uid] as $u
      | [.items[] | select(.involvedObject.kind == "Pod" and (.involvedObject.uid as $x | $u | any(. == $x)))
         | .involvedObject.uid] | unique | length')
check "[with] B pods that failed filter on every node have the extender's FailedEveryNode Event (${signalled:-none} of 20)" test "${signalled:-0}" -gt 0
check "[with] no pod was patched by the extender (no adze.sh/unschedulable-at annotation)" \
  bash -c "kubectl --kubeconfig '$KUBECONFIG' get pods -A -o json | jqe '[.items[] | select(.metadata.annotations[\"adze.sh/unschedulable-at\"] != null)] | length == 0'"
binds=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^adze_extender_requests_total\{verb="bind"\}/ {print $2}')
echo "extender answered ${binds:-0} bind requests"
check "[with] kube-scheduler bound through the extender (bind verb used)" test "${binds:-0}" -ge 40
kill "$prov_pid"; wait "$prov_pid" 2>/dev/null; prov_pid=
# From here on one extender at a time on $port, started by start_extender.
kill "${rep_pid[$follower_i]}" "$proxy_pid" 2>/dev/null; wait "${rep_pid[$follower_i]}" "$proxy_pid" 2>/dev/null

# ---- the suite's PKI: a CA, the extender's serving certificate, kube-scheduler's client one --
pki=$work/pki; mkdir -p "$pki"
(
  cd "$pki" || exit 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=e2e-extender-ca \
    -keyout ca.key -out ca.crt
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 -keyout tls.key -out tls.csr
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext -out tls.crt
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=e2e-scheduler -keyout client.key -out client.csr
  printf 'extendedKeyUsage=clientAuth\n' >client.ext
  openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile client.ext -out client.crt
) >"$work/pki.log" 2>&1
check "test PKI generated (openssl)" test -s "$pki/client.crt" -a -s "$pki/tls.crt"

# ---- throughput, with and without the extender, alternating on this plane ----------------
# The extender as the chart deploys it by default: HTTPS, kube-scheduler's client
# certificate required (--client-ca), one process (ext_pid, so its CPU is reported).
echo "== throughput: $TPUT_ROUNDS rounds of $TPUT_PODS pods, alternating with (HTTPS, client certificates) / without the extender"
tput_port=$(free_port)
cp "$dir/scheduler.yaml" "$work/scheduler-with.run.yaml"
# The same configuration without the extenders block: kube-scheduler as shipped.
awk '/^extenders:/ {skip=1; next} skip && /^[ -]/ {next} {skip=0; print}' \
  "$work/scheduler-with.run.yaml" >"$work/scheduler-without.run.yaml"
# "With": the stanza the chart ships for 1.20 (manifests/scheduler/kube-scheduler-config-v1beta1.yaml,
# kept equal to the chart's render by charts/ci/check.sh): filter and preempt, no prioritize,
# no bind (kube-scheduler binds), HTTPS with kube-scheduler's client certificate; only its URL
# and certificate files pointed at this suite's, and httpTimeout 5s instead of 1s, so that a
# slow answer on a busy machine delays the round instead of being skipped (ignorable) and
# flattering it.
awk '/^extenders:/ {on=1} on' "$root/manifests/scheduler/kube-scheduler-config-v1beta1.yaml" \
  | sed -e "s#urlPrefix: .*#urlPrefix: https://127.0.0.1:$tput_port#" -e "s#httpTimeout: .*#httpTimeout: 5s#" \
        -e "s#caFile: .*#caFile: $pki/ca.crt#" -e "s#certFile: .*#certFile: $pki/client.crt#" \
        -e "s#keyFile: .*#keyFile: $pki/client.key#" >"$work/tput-stanza.yaml"
cat "$work/scheduler-without.run.yaml" "$work/tput-stanza.yaml" >"$work/scheduler-with-tls.run.yaml"
check "throughput: without the extender no extenders; with it the shipped 1.20 stanza (filter, no prioritize, no bind) over HTTPS with a client certificate" \
  bash -c "absent urlPrefix '$work/scheduler-without.run.yaml' && grep -q 'urlPrefix: https://127.0.0.1:$tput_port' '$work/scheduler-with-tls.run.yaml' && grep -q 'certFile: $pki/client.crt' '$work/scheduler-with-tls.run.yaml' && grep -q 'filterVerb: filter' '$work/tput-stanza.yaml' && absent 'prioritizeVerb|bindVerb' '$work/tput-stanza.yaml'"
start_tls_extender() { # PORT LOG
  KUBECONFIG=$EXTENDER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$ext_bin" --listen "127.0.0.1:$1" --tls-cert "$pki/tls.crt" --tls-key "$pki/tls.key" --client-ca "$pki/ca.crt" >>"$2" 2>&1 &
  ext_pid=$!
  wait_for 60 curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$1/readyz"
}
# Filter calls the throughput extender has answered (0 while it is stopped).
tput_filters() {
  local n
  n=$(curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$tput_port/metrics" 2>/dev/null \
    | awk '/^adze_extender_requests_total\{verb="filter"\}/ {print $2}')
  echo "${n:-0}"
}
arm_with_n=0; arm_with_s=0; arm_without_n=0; arm_without_s=0; rounds_with=; rounds_without=; algo_with=; algo_without=
for r in $(seq 1 "$TPUT_ROUNDS"); do
  # with, without, without, with, with, without, ...
  if (( (r / 2) % 2 == 0 )); then arm=with; else arm=without; fi
  if [[ "$arm" == with ]]; then
    [[ -n "$ext_pid" ]] || start_tls_extender "$tput_port" "$dir/extender-tput.log"
    restart_scheduler "$work/scheduler-with-tls.run.yaml"
  else
    if [[ -n "$ext_pid" ]]; then kill "$ext_pid"; wait "$ext_pid" 2>/dev/null; ext_pid=; fi
    restart_scheduler "$work/scheduler-without.run.yaml"
  fi
  sleep 2 # informers synced
  filters0=$(tput_filters)
  throughput "$arm" "$r"
  if [[ "$arm" == with ]]; then
    filters=$(( $(tput_filters) - filters0 ))
    check "[round $r, with] kube-scheduler asked the extender to filter every pod ($filters filter calls for $TPUT_BOUND pods)" \
      test "$filters" -ge "$TPUT_BOUND" -a "$TPUT_BOUND" -gt 0
    arm_with_n=$((arm_with_n + TPUT_BOUND)); arm_with_s=$(awk -v a="$arm_with_s" -v b="$TPUT_SECS" 'BEGIN{print a+b}'); rounds_with+="$TPUT "; algo_with+="$TPUT_ALGO_US "
  else
    arm_without_n=$((arm_without_n + TPUT_BOUND)); arm_without_s=$(awk -v a="$arm_without_s" -v b="$TPUT_SECS" 'BEGIN{print a+b}'); rounds_without+="$TPUT "; algo_without+="$TPUT_ALGO_US "
  fi
done
tput_with=$(awk -v n="$arm_with_n" -v s="$arm_with_s" 'BEGIN{if (s>0) printf "%.1f", n/s; else print 0}')
tput_without=$(awk -v n="$arm_without_n" -v s="$arm_without_s" 'BEGIN{if (s>0) printf "%.1f", n/s; else print 0}')
# Per arm: the median round and the spread (min-max); the cost is 1 - median with / median
# without, held to ADZE_E2E_TPUT_BUDGET percent (default 5, the issue's budget).
stats() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.1f %.1f %.1f %d", m, v[1], v[NR], NR}'; }
read -r med_with min_with max_with n_with <<<"$(stats "$rounds_with")"
read -r med_without min_without max_without n_without <<<"$(stats "$rounds_without")"
cost=$(awk -v w="$med_with" -v o="$med_without" 'BEGIN{if (o>0) printf "%.1f", 100*(1-w/o); else print "n/a"}')
pooled_cost=$(awk -v w="$tput_with" -v o="$tput_without" 'BEGIN{if (o>0) printf "%.1f", 100*(1-w/o); else print "n/a"}')
read -r algo_med_with _ _ _ <<<"$(stats "$algo_with")"
read -r algo_med_without _ _ _ <<<"$(stats "$algo_without")"
kill "$ext_pid" 2>/dev/null; wait "$ext_pid" 2>/dev/null; ext_pid=
check "throughput: the HTTPS extender answered kube-scheduler with no client-certificate refusal" \
  absent 'refused: no verified client certificate' "$dir/extender-tput.log"
# Back to the exact set-up for what follows: the plain-HTTP extender of the scenario.
start_extender "$port"
cmp -s "$dir/scheduler.yaml" "$work/scheduler-with.run.yaml" || restart_scheduler "$work/scheduler-with.run.yaml"

# ---- the shipped configuration, extender killed -> pods still scheduled --------------------
# kube-scheduler 1.20 skips an ignorable extender's filter, prioritize and preempt when it is
# down, but not its bind, so the chart renders no bindVerb for a 1.20 scheduler (see
# adze.extenderBinds). Run kube-scheduler with the extender stanza of the shipped file
# (manifests/scheduler/kube-scheduler-config-v1beta1.yaml, which charts/ci/check.sh keeps
# equal to the chart's render), only its URL and TLS pointed at this extender.
echo "== kube-scheduler restarted with the shipped extender stanza; extender killed"
shipped=$root/manifests/scheduler/kube-scheduler-config-v1beta1.yaml
stanza=$(awk '/^extenders:/ {on=1} on' "$shipped" \
  | sed -e "s#urlPrefix: .*#urlPrefix: http://127.0.0.1:$port#" -e 's/enableHTTPS: true/enableHTTPS: false/' \
        -e '/tlsConfig:/d' -e '/caFile:/d' -e '/certFile:/d' -e '/keyFile:/d')
check "shipped stanza: ignorable, every verb but bind" bash -c "grep -q 'ignorable: true' <<<'$stanza' && grep -q 'filterVerb: filter' <<<'$stanza' && grep -q 'preemptVerb: preempt' <<<'$stanza' && ! grep -q bindVerb <<<'$stanza'"  # empty-input-ok: the same text matched three greps first
# The running configuration with its extenders block replaced by the shipped one.
{ cat "$work/scheduler-without.run.yaml"; echo "$stanza"; } >"$work/scheduler-shipped.yaml"
restart_scheduler "$work/scheduler-shipped.yaml"
check "[shipped] kube-scheduler restarted with the shipped stanza" bash -c "curl -ksf --max-time 2 https://127.0.0.1:$SCHEDULER_PORT/healthz | grep -qx ok"
sleep 2 # informers synced
filters_before=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^adze_extender_requests_total\{verb="filter"\}/ {print $2}')
kill -9 "$ext_pid"; wait "$ext_pid" 2>/dev/null; ext_pid=
k create namespace ign >/dev/null
kubelet_node ign-1 8 e2e-ign
deployment ign ign 5 100m 100Mi e2e-ign yes | k apply -f - >/dev/null
wait_for 90 count_is 5 bound_pods ign
check "[shipped, extender down] pods still scheduled: $(bound_pods ign)/5 bound" count_is 5 bound_pods ign
# The extender comes back: kube-scheduler consults it again for the next pods (its ledger
# is rebuilt from the relist, so the reservations are back with it).
start_extender "$port"
check "[shipped] extender back on 127.0.0.1:$port (was at ${filters_before:-0} filter calls before it was killed)" curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"
k create namespace ign2 >/dev/null
deployment ign2 ign2 3 100m 100Mi e2e-ign yes | k apply -f - >/dev/null
wait_for 90 count_is 3 bound_pods ign2
check "[shipped, extender back] pods scheduled: $(bound_pods ign2)/3 bound" count_is 3 bound_pods ign2
filters_after=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^adze_extender_requests_total\{verb="filter"\}/ {print $2}')
check "[shipped, extender back] kube-scheduler filters through the restarted extender (${filters_after:-0} calls)" test "${filters_after:-0}" -ge 3

# ---- preemption, under the same shipped stanza (preemptVerb) -------------------------------
# kube-scheduler 1.20.0-1.20.8 never calls an extender's preempt verb: a regression in its
# framework set-up (extenders not handed to the preemption plugin), fixed upstream by
# kubernetes PR 103019 (1.22, cherry-picked to 1.21 and 1.20 patch releases). This plane's
# 1.20.2 shows it: it preempts for a high-priority pod without asking the extender. The
# extender's answer is then asked directly, in kube-scheduler's wire format, with the real
# pods and the NodePool from this API server: no candidates for a pod NodePool "pre" can
# serve (nodeSelector on a label the pool's template sets), the candidates back for a pod no
# NodePool can serve (a label no pool sets).
echo "== preemption: kube-scheduler 1.20.2 and the extender's preempt answer for real pods"
cat <<YAML | k create -f - >/dev/null
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-high}
value: 1000000
YAML
kubelet_node pre-1 4 e2e-pre e2e-pre-only
nodepool pre | sed 's/e2e-pool: pre/e2e-pool: pre, e2e-pre: "yes"/' | k apply -f - >/dev/null
check "NodePool pre sets the label e2e-pre" bash -c "kubectl --kubeconfig $KUBECONFIG get nodepool pre -o jsonpath='{.spec.template.metadata.labels.e2e-pre}' | grep -qx yes"
k create namespace pre-low >/dev/null; k create namespace pre-hold >/dev/null; k create namespace pre-free >/dev/null
deployment pre-low low 3 1200m 100Mi e2e-pre-only yes | k apply -f - >/dev/null
wait_for 60 count_is 3 bound_pods pre-low
check "[preemption] 3 low-priority pods fill pre-1" count_is 3 bound_pods pre-low
low_uids=$(k get pods -n pre-low -o jsonpath='{.items[*].metadata.uid}')
# evicted NAMESPACE UIDS: how many of the pods UIDS (of NAMESPACE) were evicted (gone, or
# terminating).
evicted() {
  local live n=0 u
  # pipefail: a kubectl that failed must not read as "every pod evicted".
  live=$(set -o pipefail; k get pods -n "$1" -o json | jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.uid') || return 1
  for u in $2; do grep -qx "$u" <<<"$live" || n=$((n + 1)); done
  echo "$n"
}
preempted() { evicted pre-low "$low_uids"; }
some_preempted() { [ "$(preempted)" -gt 0 ]; }
verb_count() { curl -sf "http://127.0.0.1:$port/metrics" | awk -v v="$1" '$1 == "adze_extender_requests_total{verb=\""v"\"}" {print $2}'; }
high_pod() { # namespace name selector-key
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1}
spec:
  priorityClassName: e2e-high
  nodeSelector: {"$3": "yes"}
  terminationGracePeriodSeconds: 0
  containers:
    - name: pause
      image: registry.k8s.io/pause:3.9
      resources: {requests: {cpu: "1", memory: 100Mi}}
YAML
}
# ExtenderPreemptionArgs as a nodeCacheCapable kube-scheduler sends them, for a real pod.
ask_preempt() { # namespace name -> the number of candidate nodes left
  k get pod -n "$1" "$2" -o json \
    | jq '{Pod: ., NodeNameToMetaVictims: {"pre-1": {Pods: [{UID: "victim"}], NumPDBViolations: 0}}}' \
    | curl -sf -X POST -H 'content-type: application/json' --data-binary @- "http://127.0.0.1:$port/preempt" \
    | jq '.NodeNameToMetaVictims | length'
}
preempt_before=$(verb_count preempt)
high_pod pre-hold hold-1 e2e-pre | k apply -f - >/dev/null
wait_for 60 some_preempted
check "[preemption] kube-scheduler 1.20.2 preempted for a high-priority pod ($(preempted) of 3 low-priority pods)" some_preempted
preempt_calls=$(( $(verb_count preempt) - ${preempt_before:-0} ))
check "[preemption] ... without calling the extender's preempt verb (1.20.0-1.20.8 regression; $preempt_calls calls)" test "$preempt_calls" = 0
check "[preemption] the extender answers no candidates for a pod NodePool pre can serve" count_is 0 ask_preempt pre-hold hold-1
check "[preemption] ... and says why in its log" grep -q 'NodePool pre can serve it' "$dir/extender.log"
high_pod pre-free free-1 e2e-pre-only | k apply -f - >/dev/null
check "[preemption] the candidates come back for a pod no NodePool can serve" count_is 1 ask_preempt pre-free free-1
check "[preemption] held answers counted in adze_extender_preemptions_held_total" bash -c "curl -sf http://127.0.0.1:$port/metrics | grep -qx 'adze_extender_preemptions_held_total 1'"

# ---- the preemption hold inside kube-scheduler: 1.20.2 with the upstream preempt fix ---------
# e2e/harness builds kube-scheduler-pr103019: this 1.20.2 with kubernetes PR 103019's one
# change (the extenders handed to the framework), as released in 1.20.9+. Restarted on it
# with the same shipped stanza, kube-scheduler asks the extender before it preempts. On a
# fresh node pre-2 filled by 3 low-priority pods: a high-priority pod NodePool pre2 can serve
# evicts none of them (the hold), and one no NodePool can serve evicts as before.
echo "== preemption hold engaged by a kube-scheduler that calls preempt (1.20.2 + PR 103019)"
fixed_scheduler=${ADZE_K8S_BIN:-${ADZE_CACHE:-$HOME/.cache/adze}/k8s-1.20.2/bin}/kube-scheduler-pr103019
restart_scheduler "$work/scheduler-shipped.yaml" "$fixed_scheduler"
check "[hold] kube-scheduler restarted on $(basename "$fixed_scheduler")" bash -c "pgrep -f kube-scheduler-pr103019 >/dev/null && curl -ksf --max-time 2 https://127.0.0.1:$SCHEDULER_PORT/healthz | grep -qx ok"
kubelet_node pre-2 4 e2e-pre2 e2e-pre2-only
nodepool pre2 | sed 's/e2e-pool: pre2/e2e-pool: pre2, e2e-pre2: "yes"/' | k apply -f - >/dev/null
k create namespace hold-low >/dev/null; k create namespace hold-high >/dev/null
deployment hold-low low 3 1200m 100Mi e2e-pre2-only yes | k apply -f - >/dev/null
wait_for 60 count_is 3 bound_pods hold-low
check "[hold] 3 low-priority pods fill pre-2" count_is 3 bound_pods hold-low
hold_low_uids=$(k get pods -n hold-low -o jsonpath='{.items[*].metadata.uid}')
evicted_low() { evicted hold-low "$hold_low_uids"; }
held_count() { curl -sf "http://127.0.0.1:$port/metrics" | awk '$1 == "adze_extender_preemptions_held_total" {print $2}'; }
preempts_reach() { [ "$(verb_count preempt)" -ge "$1" ]; }
some_evicted() { [ "$(evicted_low)" -gt 0 ]; }
unbound() { local node; node=$(k get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}') || return 1; [[ -z "$node" ]]; }
held_before=$(held_count); preempt_before=$(verb_count preempt)
high_pod hold-high served e2e-pre2 | k apply -f - >/dev/null
# kube-scheduler tries the pod at once, then again after its backoff (1 s, 2 s, ...): wait for
# two preempt calls, then a little longer for any eviction to show.
wait_for 60 preempts_reach $(( ${preempt_before:-0} + 2 ))
sleep 5
preempt_calls=$(( $(verb_count preempt) - ${preempt_before:-0} ))
check "[hold] kube-scheduler asked the extender before preempting ($preempt_calls preempt calls)" test "$preempt_calls" -ge 1
check "[hold] 0 of 3 low-priority pods preempted for a high-priority pod NodePool pre2 can serve ($(evicted_low) evicted)" count_is 0 evicted_low
check "[hold] ... which stays pending, for Adze to launch capacity" unbound hold-high served
held_after=$(held_count)
check "[hold] every hold counted (adze_extender_preemptions_held_total ${held_before:-0} -> ${held_after:-0})" test "${held_after:-0}" -gt "${held_before:-0}"
# No NodePool sets e2e-pre2-only: the extender lets kube-scheduler's candidates through.
high_pod hold-high unserved e2e-pre2-only | k apply -f - >/dev/null
wait_for 60 some_evicted
check "[hold] a high-priority pod no NodePool can serve still preempts ($(evicted_low) of 3 evicted)" some_evicted
check "[hold] ... and the served pod still evicted nothing of its own: it is still pending" unbound hold-high served

# ---- client certificates: kube-scheduler authenticates, anyone else is refused -------------
# The suite's PKI (made before the throughput rounds); the extender restarted with
# --client-ca; kube-scheduler restarted with the shipped stanza over HTTPS with tlsConfig
# certFile/keyFile, as the chart renders it.
echo "== client certificates: kube-scheduler's accepted, an anonymous /bind refused"
kill "$ext_pid"; wait "$ext_pid" 2>/dev/null; ext_pid=
tls_port=$(free_port)
KUBECONFIG=$EXTENDER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$ext_bin" --listen "127.0.0.1:$tls_port" --tls-cert "$pki/tls.crt" --tls-key "$pki/tls.key" --client-ca "$pki/ca.crt" >>"$dir/extender-tls.log" 2>&1 &
ext_pid=$!
wait_for 60 curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$tls_port/readyz"
check "[mTLS] extender ready over HTTPS; probes need no client certificate" curl -sf --cacert "$pki/ca.crt" -o /dev/null "https://127.0.0.1:$tls_port/readyz"
anon=$(curl -s --cacert "$pki/ca.crt" -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
  -d '{"PodName": "ign-x", "PodNamespace": "ign", "PodUID": "u", "Node": "tput-1-1"}' "https://127.0.0.1:$tls_port/bind")
check "[mTLS] an unauthenticated /bind is refused (HTTP $anon)" test "$anon" = 401
stranger=$(openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=stranger \
  -keyout "$pki/stranger.key" -out "$pki/stranger.crt" >/dev/null 2>&1; \
  curl -s --cacert "$pki/ca.crt" --cert "$pki/stranger.crt" --key "$pki/stranger.key" -o /dev/null -w '%{http_code}' \
  -X POST -d '{}' "https://127.0.0.1:$tls_port/bind")
check "[mTLS] a certificate from another CA does not get through (HTTP ${stranger:-none})" test "${stranger:-000}" != 200
stanza_tls=$(sed -e "s#urlPrefix: .*#urlPrefix: https://127.0.0.1:$tls_port#" -e 's/enableHTTPS: false/enableHTTPS: true/' <<<"$stanza")
stanza_tls+="
    tlsConfig:
      caFile: $pki/ca.crt
      certFile: $pki/client.crt
      keyFile: $pki/client.key"
{ cat "$work/scheduler-without.run.yaml"; echo "$stanza_tls"; } >"$work/scheduler-mtls.yaml"
restart_scheduler "$work/scheduler-mtls.yaml"
sleep 2 # informers synced
k create namespace mtls >/dev/null
deployment mtls mtls 3 100m 100Mi e2e-ign yes | k apply -f - >/dev/null
wait_for 90 count_is 3 bound_pods mtls
check "[mTLS] pods scheduled with kube-scheduler presenting its client certificate: $(bound_pods mtls)/3" count_is 3 bound_pods mtls
tls_filters=$(curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$tls_port/metrics" | awk '/^adze_extender_requests_total\{verb="filter"\}/ {print $2}')
tls_errors=$(curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$tls_port/metrics" | awk '/^adze_extender_errors_total\{verb="filter"\}/ {print $2}')
check "[mTLS] kube-scheduler's filter calls were answered (${tls_filters:-0} calls, ${tls_errors:-0} errors)" \
  bash -c "[ ${tls_filters:-0} -ge 3 ] && [ ${tls_errors:-0} -eq 0 ]"
refusals=$(grep -c 'refused: no verified client certificate' "$dir/extender-tls.log")
check "[mTLS] the only refusal logged is the anonymous /bind, none of kube-scheduler's calls ($refusals)" test "$refusals" = 1

echo "RESULT: extra NodeClaims (A then B): without extender $extra_without, with extender $extra_with"
echo "RESULT: A pods not on their nominated node: without extender $misplaced_without, with extender $misplaced_with"
echo "RESULT: kube-scheduler throughput ($TPUT_ROUNDS alternating rounds of $TPUT_PODS pods on 10 nodes; $n_with with the extender over HTTPS with client certificates, $n_without without): with median $med_with pods/s (min-max $min_with-$max_with; rounds: ${rounds_with% }), without median $med_without pods/s (min-max $min_without-$max_without; rounds: ${rounds_without% }); the extender costs $cost % by the medians (budget $TPUT_BUDGET %); pooled (all pods / all time) $tput_with vs $tput_without pods/s, $pooled_cost %; kube-scheduler's scheduling algorithm per attempt, median of rounds: $algo_med_with us with, $algo_med_without us without"
check "throughput: at least 6 rounds per arm ($n_with with, $n_without without)" test "$n_with" -ge 6 -a "$n_without" -ge 6
# The budget gates only with ADZE_E2E_TPUT_GATE=1: on 2 shared cores one arm's rounds spread
# wider than the budget itself (e.g. 93-182 pods/s), so the verdict is printed either way.
within_budget() { awk -v c="$cost" -v b="$TPUT_BUDGET" 'BEGIN{exit !(c != "n/a" && c + 0 <= b + 0)}'; }
if [[ "${ADZE_E2E_TPUT_GATE:-0}" == 1 ]]; then
  check "throughput: the extender's cost by the medians, $cost %, within the budget of $TPUT_BUDGET %" within_budget
elif within_budget; then echo "RESULT: throughput: within the budget of $TPUT_BUDGET % ($cost %; not gating, ADZE_E2E_TPUT_GATE=1 gates)"
else echo "RESULT: throughput: OVER the budget of $TPUT_BUDGET % ($cost %; not gating, ADZE_E2E_TPUT_GATE=1 gates)"; fi
check "no panics in the extender or provisioner logs" absent panicked "$work"/*/extender*.log "$work"/*/provisioner.log
check "no hollow kubelet panicked or died of a Go runtime fatal error" bash -c "ls '$work'/*/hollow/*/kubelet.log >/dev/null && absent 'panic:|fatal error:' '$work'/*/hollow/*/kubelet.log"
check "no hollow kubelet failed to start for an instance record" absent FAILED "$work"/*/fleet.log
rbac_audit with
e2e_summary
