#!/usr/bin/env bash
# Benchmark, not part of CI: Karpenter's wide-deployments consolidation scenario on the real
# Kubernetes 1.20.2 control plane (e2e/harness) with Adze's release build and the simulated
# cloud. 30 Deployments, every one spread across zones (maxSkew 1), a third also across
# hostnames (maxSkew 1), a sixth with required hostname anti-affinity; 1,000 pods provisioned,
# then every Deployment scaled to 70 % and consolidation left to settle.
#
#   ADZE_E2E=1 e2e/bench/wide-deployments.sh
#
# The nodes. ~300 kubemark hollow kubelets do not fit on a 2-core machine (e2e/disruption.sh
# runs ~75 at most), so the nodes are the simulated cloud's own (`run --cloud-provider
# simulated` without --simulated-instance-dir): a NodeClaim's Node object is created
# --boot-delay after launch with the instance type's capacity and allocatable, its labels and
# taints, Ready; the provisioner's simulated kubelet (provisioner/src/kubelet.rs) posts Ready
# every 20 s, marks each pod bound to such a node Running and Ready (polling every 0.2 s), and
# finishes the deletion of its terminating pods (grace 0; the pods ask for none). Not emulated:
# container start-up (a pause container's second or two), kubelet admission (a pod the node
# cannot hold would be refused by a real kubelet; kube-scheduler binds within allocatable, so
# none is), the node's own Lease and the node lifecycle controller (off, as in the harness).
# Kinder than EC2 to Adze: a replacement is Ready 2 s after launch (BENCH_BOOT_DELAY) instead
# of ~40-60 s. Harder on Adze than a real cluster: that kubelet work runs in the provisioner's
# own process, on the same 2 cores as the control plane.
#
# Everything else is real: etcd, kube-apiserver, kube-controller-manager (Deployments,
# ReplicaSets), kube-scheduler (default profile) binding every pod, Adze's provisioner,
# disruption controller (default --disruption-poll-period 10s and
# --disruption-validation-period 15s) and termination (evictions through the Eviction API).
#
# Phases: the NodePool starts with consolidation off (consolidateAfter: Never, budget 100 %);
# the 30 Deployments are applied at once and timed to every pod bound and Running; then every
# Deployment is scaled to BENCH_SCALE % and the pool switched to consolidateAfter: 0s in the same
# moment. Settled: no disruption command started or proposed for BENCH_QUIET seconds (more
# than a pass: poll, decision, validation), nothing disrupting, no pod pending. The report (e2e/bench/wide-report.py) gives per phase the times, waves, commands per
# wave, nodes per command, nodes and $/h before and after.
#
# Environment: BENCH_PODS (1000; split over the 30 Deployments), BENCH_SCALE (70),
# BENCH_QUIET (60), BENCH_LIMIT (1200: seconds consolidation may take before the run is
# reported unsettled), BENCH_BOOT_DELAY (2s), BENCH_ARGS (extra `run` flags, e.g.
# "--disruption-validation-period 5s"), ADZE_E2E_PREBUILT=1 (use the binaries in
# ${CARGO_TARGET_DIR:-target}/release as they are), BENCH_BIN_DIR (look for them there
# instead, e.g. a debug build: slower decisions, so its times are upper bounds), ADZE_KEEP=1
# (keep the logs dir).
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR/..
. "$(dirname "$0")/../lib.sh"
e2e_enabled_or_skip "the wide-deployments benchmark"
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
pods=${BENCH_PODS:-1000} scale=${BENCH_SCALE:-70} quiet=${BENCH_QUIET:-60} limit=${BENCH_LIMIT:-1200}
boot=${BENCH_BOOT_DELAY:-2s}
[[ "$pods" =~ ^[0-9]+$ && "$pods" -ge 30 && "$pods" -le 5000 ]] || { echo "BENCH_PODS must be 30-5000"; exit 2; }
[[ "$scale" =~ ^[0-9]+$ && "$scale" -ge 1 && "$scale" -le 99 ]] || { echo "BENCH_SCALE must be 1-99"; exit 2; }
[[ "$quiet" =~ ^[0-9]+$ && "$limit" =~ ^[0-9]+$ ]] || { echo "BENCH_QUIET and BENCH_LIMIT are whole seconds"; exit 2; }

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
if [[ "${ADZE_E2E_PREBUILT:-0}" != 1 ]]; then
  # The simulated cloud needs the controllers, not the EC2 provider.
  nice -n 5 cargo build -q --release --locked -p adze-provisioner --no-default-features \
    --features controller --bin adze-provisioner || { echo "FAIL: cargo build"; exit 1; }
  nice -n 5 cargo build -q --release --locked -p adze-api --bin crdgen || { echo "FAIL: cargo build"; exit 1; }
fi
bins=${BENCH_BIN_DIR:-$target/release}
bin=$bins/adze-provisioner
crdgen=$bins/crdgen
[[ -x "$bin" && -x "$crdgen" ]] || { echo "FAIL: $bin or $crdgen missing"; exit 1; }

dir=$(mktemp -d /tmp/adze-wide.XXXXXX)
E2E_DIAG_LOGS="$dir/provisioner.log"
prov_pid= sampler_pid=
cleanup() {
  [[ -n "$sampler_pid" ]] && kill "$sampler_pid" 2>/dev/null
  [[ -n "$prov_pid" ]] && kill "$prov_pid" 2>/dev/null
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log"; fi
}
trap cleanup EXIT
control_plane_up "$dir"
"$crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh
adze_rbac simulated

# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bin" run --cloud-provider simulated \
  --boot-delay "$boot" --leader-elect=false --metrics-addr 127.0.0.1:0 --log-format json \
  ${BENCH_ARGS:-} >"$dir/provisioner.log" 2>&1 &
prov_pid=$!
wait_for 60 grep -q "cluster state synced" "$dir/provisioner.log" \
  || { fail "provisioner synced"; tail -n 20 "$dir/provisioner.log"; exit 1; }
metrics=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/provisioner.log" | head -n 1)
report() { "$root/e2e/bench/wide-report.py" "$@"; }

pool() { # consolidateAfter
  e2e_nodepool wide 100000 "" "{consolidateAfter: $1, budgets: [{nodes: \"100%\"}]}"
}
cpus=(100m 250m 500m 750m 1) mems=(128Mi 256Mi 512Mi 1Gi)
replicas() { echo $(( pods / 30 + ($1 < pods % 30 ? 1 : 0) )); }
deployment() { # index
  local d=$1 app; app=$(printf 'w%02d' "$1")
  local sel="labelSelector: {matchLabels: {app: $app}}"
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $app, namespace: wide}
spec:
  replicas: $(replicas "$d")
  selector: {matchLabels: {app: $app}}
  template:
    metadata: {labels: {app: $app}}
    spec:
      nodeSelector: {e2e-pool: wide}
      terminationGracePeriodSeconds: 0
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, $sel}
YAML
  (( d % 3 == 1 )) && echo "        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, $sel}"
  (( d % 6 == 2 )) && echo "      affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{$sel, topologyKey: kubernetes.io/hostname}]}}"
  cat <<YAML
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: ${cpus[d % 5]}, memory: ${mems[(d / 5) % 4]}}}
---
YAML
}
# Pods of namespace wide: "bound running total" (not terminating).
pod_counts() {
  k get pods -n wide -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp == null)]
    | "\([.[] | select(.spec.nodeName != null)] | length) \([.[] | select(.status.phase == "Running")] | length) \(length)"'
}
# Every 2 s: "epoch nodeclaims disrupting-or-deleting nodes".
sample() {
  while :; do
    local c n
    c=$(k get nodeclaims -o json 2>/dev/null | jq -r '"\(.items | length) \([.items[] | select(.metadata.deletionTimestamp != null
      or any(.status.conditions[]?; .type == "Disrupting" and .status == "True"))] | length)"') \
      && n=$(k get nodes --no-headers 2>/dev/null | wc -l) && echo "$(date +%s.%N) $c $n" >>"$dir/samples"
    sleep 2
  done
}
until_counts() { # SECONDS WANT-BOUND WANT-RUNNING WANT-TOTAL: polls every second
  local end=$(( $(date +%s) + $1 )) got
  while (( $(date +%s) < end )); do
    got=$(pod_counts 2>/dev/null) && [[ "$got" == "$2 $3 $4" ]] && return 0
    sleep 1
  done
  echo "pods (bound running total): ${got:-?}, wanted $2 $3 $4"; return 1
}
first_bound_all() { # SECONDS N: epoch when N pods were first bound
  local end=$(( $(date +%s) + $1 )) got
  while (( $(date +%s) < end )); do
    got=$(pod_counts 2>/dev/null) && [[ "${got%% *}" == "$2" ]] && { now; return 0; }
    sleep 1
  done
  return 1
}

# ---- 1. provision -----------------------------------------------------------------------------
k create namespace wide >/dev/null
pool Never | k apply -f - >/dev/null
for d in $(seq 0 29); do deployment "$d"; done >"$dir/deployments.yaml"
sample & sampler_pid=$!
echo "== 1. provision $pods pods (30 Deployments)"
t_apply=$(now)
k apply -f "$dir/deployments.yaml" >/dev/null
if t_bound=$(first_bound_all 900 "$pods"); then
  pass "all $pods pods bound $(elapsed "$t_apply" "$t_bound") s after the Deployments were applied"
else
  fail "all $pods pods bound within 900 s"; exit 1
fi
until_counts 300 "$pods" "$pods" "$pods" && t_running=$(now) \
  && pass "all $pods Running $(elapsed "$t_apply" "$t_running") s after" || { fail "all Running"; exit 1; }
# Provisioning quiet: no NodeClaim launching (an unused one is given back by emptiness later).
sleep 5
before=$(report cost "$KUBECONFIG" "$metrics")
echo "after provisioning: $before"

# ---- 2. scale to 70 %, consolidate ------------------------------------------------------------
target_pods=0
for d in $(seq 0 29); do target_pods=$(( target_pods + ($(replicas "$d") * scale + 50) / 100 )); done
echo "== 2. scale to $scale % ($target_pods pods), consolidateAfter 0s"
t_scale=$(now)
scalers=()
for d in $(seq 0 29); do
  k scale -n wide "$(printf 'deployment/w%02d' "$d")" --replicas=$(( ($(replicas "$d") * scale + 50) / 100 )) >/dev/null &
  scalers+=($!)
done
wait "${scalers[@]}"  # not the sampler
pool 0s | k apply -f - >/dev/null
until_counts 120 "$target_pods" "$target_pods" "$target_pods" && t_scaled=$(now) \
  && pass "scaled to $target_pods pods $(elapsed "$t_scale" "$t_scaled") s after" || fail "scaled to $target_pods pods"

# Settled: no command started or proposed for $quiet s, nothing disrupting or launching, no
# pod pending.
last_command() { # epoch of the last "disrupting:" line, or $t_scale
  local t; t=$(report last-command "$dir/provisioner.log") && [[ -n "$t" ]] && echo "$t" || echo "$t_scale"
}
calm() {
  local s; s=$(tail -n 1 "$dir/samples") || return 1
  read -r _ claims busy nodes <<<"$s"
  [[ "$busy" == 0 && "$claims" == "$nodes" ]] && count_is "$target_pods $target_pods $target_pods" pod_counts
}
settled=0
end=$(awk -v a="$t_scale" -v l="$limit" 'BEGIN{printf "%d", a + l}')
while (( $(date +%s) < end )); do
  sleep 5
  since=$(awk -v a="$(last_command)" -v b="$(now)" 'BEGIN{printf "%d", b - a}')
  if (( since >= quiet )) && calm; then settled=1; break; fi
done
t_end=$(now)
kill "$sampler_pid" 2>/dev/null; sampler_pid=
after=$(report cost "$KUBECONFIG" "$metrics")
echo "after consolidation: $after"
if (( settled )); then
  pass "consolidation settled (no command for $quiet s, nothing disrupting, no pod pending)"
else
  fail "consolidation settled within $limit s"
fi
check "provisioner still running" kill -0 "$prov_pid"
check "no panics in the provisioner log" absent panicked "$dir/provisioner.log"
report phases "$dir/provisioner.log" "$dir/samples" --apply "$t_apply" --bound "$t_bound" \
  --running "$t_running" --scale "$t_scale" --scaled "${t_scaled:-}" --end "$t_end" \
  --quiet "$quiet" --before "$before" --after "$after" --pods "$pods" --target "$target_pods"
echo "provisioner: $(cpu_secs "$prov_pid") CPU-s, peak RSS $(awk '/^VmHWM:/{print $2, $3}' "/proc/$prov_pid/status" 2>/dev/null)"
e2e_summary
