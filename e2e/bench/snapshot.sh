#!/usr/bin/env bash
# Benchmark, not part of CI: a read-only snapshot of a large cluster, read and planned.
# 2,000 Nodes and 40,000 Pods bound to them, 500 pending Pods and Adze's NodePools on the real
# Kubernetes 1.20.2 control plane (e2e/harness), then, each under /usr/bin/time -v:
#
#   1. adze-provisioner snapshot --save FILE          the read alone (paginated lists)
#   2. adze-provisioner simulate --from-cluster       read + provisioning plan (pending pods)
#   3. adze-provisioner simulate --from-cluster --disruption   read + disruption plan
#   4. adze-provisioner simulate FILE                 the saved snapshot, offline
#   5. adze-provisioner simulate --disruption FILE    the same, its disruption plan
#
# and prints wall time, peak RSS and the plan's own elapsedMs for each. The Nodes have no
# kubelet (the harness runs no node lifecycle controller, so they stay Ready as created); the
# objects are created by e2e/bench/snapshot-objects.py (their shape is described there).
#
#   ADZE_E2E=1 e2e/bench/snapshot.sh
#
# Environment: BENCH_NODES (2000), BENCH_PODS (40000), BENCH_PENDING (500), BENCH_THREADS (8,
# parallel creates), ADZE_E2E_PREBUILT=1 (use ${CARGO_TARGET_DIR:-target}/release as it is),
# BENCH_BIN_DIR (look for adze-provisioner and crdgen there instead), ADZE_KEEP=1 (keep the
# snapshot, the plans and the control plane's logs).
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR/..
. "$(dirname "$0")/../lib.sh"
e2e_enabled_or_skip "the snapshot benchmark"
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
nodes=${BENCH_NODES:-2000} pods=${BENCH_PODS:-40000} pending=${BENCH_PENDING:-500}
threads=${BENCH_THREADS:-8}
for v in "$nodes" "$pods" "$pending" "$threads"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "BENCH_NODES, BENCH_PODS, BENCH_PENDING and BENCH_THREADS are whole numbers"; exit 2; }
done
(( nodes >= 50 && nodes <= 10000 && pods <= 200000 && threads >= 1 && threads <= 64 )) \
  || { echo "BENCH_NODES 50-10000, BENCH_PODS up to 200000, BENCH_THREADS 1-64"; exit 2; }
[[ -x /usr/bin/time ]] || { echo "FAIL: /usr/bin/time (GNU time) is needed for peak RSS"; exit 1; }

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
bins=${BENCH_BIN_DIR:-$target/release}
bin=$bins/adze-provisioner
crdgen=$bins/crdgen
[[ -x "$bin" && -x "$crdgen" ]] || { echo "FAIL: $bin or $crdgen missing"; exit 1; }

dir=$(mktemp -d /tmp/adze-snapbench.XXXXXX)
cleanup() {
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log"; fi
}
trap cleanup EXIT
control_plane_up "$dir"
"$crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh

# ---- the cluster ------------------------------------------------------------------------------
pool() { # NAME FAMILY POLICY BUDGET
  cat <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {bench-pool: $1}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand, spot]}
        - {key: aws.adze.sh/instance-family, operator: In, values: [$2]}
  disruption: {consolidationPolicy: $3, consolidateAfter: 0s, budgets: [{nodes: "$4"}]}
  limits: {cpu: "100000"}
---
YAML
}
{
  pool general m5 WhenEmptyOrUnderutilized 10%
  pool compute c5 WhenEmptyOrUnderutilized 20%
  pool memory r5 WhenEmpty 10%
  pool burst "m5, c5" WhenEmptyOrUnderutilized 10%
} | k apply -f - >/dev/null || { fail "NodePools applied"; exit 1; }
for ns in shop search batch data; do k create namespace "$ns" >/dev/null; done
wait_for 60 bash -c "for ns in shop search batch data; do kubectl --kubeconfig '$KUBECONFIG' -n \$ns get sa default >/dev/null 2>&1 || exit 1; done" \
  || { fail "default ServiceAccounts of the bench namespaces"; exit 1; }
echo "== create $nodes Nodes, $pods bound Pods, $pending pending Pods ($threads in parallel)"
t0=$(now)
# shellcheck disable=SC2154 # APISERVER and ADZE_TOKEN come from control_plane_up's env file
"$root/e2e/bench/snapshot-objects.py" "$APISERVER" "$ADZE_TOKEN" "$dir/ca.crt" "$nodes" "$pods" "$pending" "$threads" \
  || { fail "objects created"; exit 1; }
echo "created in $(elapsed "$t0" "$(now)") s"
check "$nodes Nodes in the cluster" count_is "$nodes" count k get nodes --no-headers
check "$((pods + pending)) Pods in the cluster" count_is "$((pods + pending))" count k get pods -A --no-headers
etcd_db=$(du -sh "$dir/etcd" 2>/dev/null | cut -f1)
echo "etcd data: $etcd_db"

# ---- the measurements ---------------------------------------------------------------------------
# timed NAME CMD...: CMD under /usr/bin/time -v, its stdout in $dir/NAME.out, stderr (with
# time's report) in $dir/NAME.err; prints "NAME: wall W s, peak RSS R MiB[, plan P ms]".
timed() {
  local name=$1; shift
  /usr/bin/time -v "$@" >"$dir/$name.out" 2>"$dir/$name.err"
  local rc=$? wall rss plan
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.1f", s}' "$dir/$name.err")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$dir/$name.err")
  plan=$(jq -r '.elapsedMs // empty' "$dir/$name.out" 2>/dev/null)
  echo "$name: exit $rc, wall ${wall:-?} s, peak RSS ${rss:-?} MiB${plan:+, plan $plan ms}"
  return "$rc"
}
export KUBECONFIG
echo "== measure"
check "snapshot (read only)" timed read "$bin" snapshot --save "$dir/snapshot.yaml"
grep -v '^\s' "$dir/read.err" | grep -iv 'command being timed' | sed -n '1,12p'
echo "snapshot file: $(du -h "$dir/snapshot.yaml" | cut -f1), $(grep -c '^kind: Pod$' "$dir/snapshot.yaml") pods"
check "simulate --from-cluster (read + provisioning plan)" \
  timed from-cluster "$bin" simulate --from-cluster --output json
check "simulate --from-cluster --disruption (read + disruption plan)" \
  timed from-cluster-disruption "$bin" simulate --from-cluster --disruption --output json
check "simulate on the saved snapshot (provisioning plan, offline)" \
  timed file "$bin" simulate --output json "$dir/snapshot.yaml"
check "simulate --disruption on the saved snapshot (offline)" \
  timed file-disruption "$bin" simulate --disruption --output json "$dir/snapshot.yaml"
for f in from-cluster file; do
  jq -r --arg f "$f" '"\($f): \(.nodeClaims | length) NodeClaims planned ($\(.totalPricePerHour)/h), \(.unschedulable | length) pods unschedulable"' "$dir/$f.out" 2>/dev/null
done
for f in from-cluster-disruption file-disruption; do
  jq -r --arg f "$f" '"\($f): \(.commands | length) commands, \(.leftAlone | length) nodes left alone"' "$dir/$f.out" 2>/dev/null
done
check "the offline plan equals the live one (elapsedMs aside)" \
  bash -c "diff <(jq -S 'del(.elapsedMs)' '$dir/from-cluster.out') <(jq -S 'del(.elapsedMs)' '$dir/file.out') >/dev/null"
e2e_summary
