#!/usr/bin/env bash
# End-to-end test of termination and disruption (`adze-provisioner run --cloud-provider
# simulated --simulated-instance-dir DIR`) against a real Kubernetes 1.20 control plane
# (e2e/harness). The nodes are kubemark hollow nodes (real kubelet code over a fake container
# runtime, e2e/harness/hollow-node.sh), one per instance record the simulated cloud writes,
# each authenticating as system:node:NAME; the node lifecycle controller runs
# (node-monitor-grace-period 20s), as in e2e/kubelet.sh. Pods are run, and terminated, by those
# kubelets. Skips unless ADZE_E2E=1. Standalone: its own control plane in its own temp dir.
#
# Section 6's drift rollout runs a fleet of 20 nodes (50 with ADZE_E2E_BENCH=1: ~75 hollow
# nodes at once with the replacements in flight and the earlier sections' nodes): the suite
# raises /proc/sys/fs/inotify/max_user_instances and max_user_watches while it runs (as root)
# and puts the old values back on exit.
#
#   ADZE_E2E=1 e2e/disruption.sh
#   ADZE_E2E=1 ADZE_E2E_BENCH=1 e2e/disruption.sh   # the 50-node rollout docs/benchmarks.md reports
#   ADZE_E2E=1 ADZE_E2E_FLEET=N e2e/disruption.sh   # a fleet of N (10-200)
#
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. The control
# plane and the provisioner are always torn down (EXIT trap); ADZE_KEEP=1 keeps the logs dir.
# Built binaries are looked up in ${CARGO_TARGET_DIR:-target}/release.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
t_suite=$(now)

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-kubemark.sh" 2>"/tmp/adze-kubemark-build.$$.log" \
  || { cat "/tmp/adze-kubemark-build.$$.log"; echo "FAIL: kubemark build"; exit 1; }
rm -f "/tmp/adze-kubemark-build.$$.log"
"$harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
bin=$target/release/adze-provisioner
crdgen=$target/release/crdgen

dir=$(mktemp -d /tmp/adze-disruption.XXXXXX)
E2E_DIAG_LOGS="$dir/provisioner.log $dir/hollow-watch.log"  # tailed by e2e_snapshot on a failure
instances=$dir/instances
prov_pid= watch_pid=
samplers=()
cleanup() {
  for s in "${samplers[@]}"; do kill "$s" 2>/dev/null; done
  [[ -n "$prov_pid" ]] && kill "$prov_pid" 2>/dev/null
  [[ -n "$watch_pid" ]] && kill -- "-$watch_pid" 2>/dev/null
  # Every hollow kubelet this run started, killed at once (one `stop` each takes minutes for
  # ~70 of them on a loaded machine).
  "$harness/hollow-node.sh" stop-all "$dir" >/dev/null 2>&1
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  inotify_restore
  echo "suite wall time: $(elapsed "$t_suite" "$(now)") s"
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log"; fi
}
trap cleanup EXIT
inotify_raise max_user_instances 1024
inotify_raise max_user_watches 524288
# The node lifecycle controller on (the harness default leaves it off for Node objects nobody
# heartbeats), as e2e/kubelet.sh.
ADZE_NODE_LIFECYCLE=1 control_plane_up "$dir"
mkdir -p "$instances"

# No leader election: this suite runs one replica and kills it on purpose (section 3); with
# ~75 hollow kubelets on 2 cores the API server can take longer than the 10 s renew deadline,
# and a provisioner that lost its Lease exits (as it should) with nothing here to restart it.
# e2e/run.sh covers leader election.
PROV_ARGS=(--leader-elect=false --disruption-poll-period 2s --disruption-validation-period "${ADZE_E2E_VALIDATION:-5s}" --metrics-addr 127.0.0.1:0)
start_provisioner() {
  KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bin" run --cloud-provider simulated \
    --simulated-instance-dir "$instances" "${PROV_ARGS[@]}" >>"$dir/provisioner.log" 2>&1 &
  prov_pid=$!
}
stop_provisioner() { kill "$prov_pid" 2>/dev/null; wait "$prov_pid" 2>/dev/null; prov_pid=; }
gone() { ! k get "$@" >/dev/null 2>&1; }
# Pods of app $2 in namespace $1 that a PodDisruptionBudget counts healthy: Ready, not terminating.
ready_pods() {
  k get pods -n "$1" -l app="$2" -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null)
    | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
# sample NS APP FILE: appends ready_pods every ~0.2 s until killed.
sample() { while :; do ready_pods "$1" "$2" >>"$3" 2>/dev/null; sleep 0.2; done; }
min_of() { sort -n "$1" | head -1; }
busiest_node() { # the node holding most pods of namespace $1
  k get pods -n "$1" -o json | jq -r '[.items[] | select(.spec.nodeName != null) | .spec.nodeName]
    | group_by(.) | max_by(length) | .[0]'
}

"$crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh crd/ec2nodeclasses.aws.adze.sh
check "CRDs installed and established" k get crd nodeclaims.adze.sh
# After the CRDs: Helm then skips the chart's crds/ (CEL rules a 1.20 API server lacks).
adze_rbac simulated

# nodepool NAME [EXTRA-TEMPLATE-SPEC-LINE] [DISRUPTION-FLOW-MAP]. By default consolidation is
# off (consolidateAfter: Never) so a scenario's nodes are only disrupted when it asks.
nodepool() { e2e_nodepool "$1" 1000 "${2:-}" "${3:-"{consolidateAfter: Never}"}"; }
deployment() { # namespace name replicas cpu memory pool [one-per-node]
  local apart=
  # One replica per node (hostname anti-affinity): each node holds exactly one of them.
  [[ "${7:-}" == one-per-node ]] && apart="affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: $2}}, topologyKey: kubernetes.io/hostname}]}}"
  e2e_deployment "$1" "$2" "$3" "$4" "$5" e2e-pool "$6" "$apart"
}
pdb() { # namespace app minAvailable — policy/v1beta1: the 1.20 apiserver has no policy/v1
  cat <<YAML
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: $2, namespace: $1}
spec:
  minAvailable: $3
  selector: {matchLabels: {app: $2}}
YAML
}

start_provisioner
# One hollow kubelet per instance record; stopped (SIGTERM) when the record goes.
# In a session of its own, so cleanup stops it with the starts it has in flight.
setsid "$harness/hollow-node.sh" watch "$dir" "$instances" >>"$dir/hollow-watch.log" 2>&1 &
watch_pid=$!
wait_for 30 grep -q "cluster state synced" "$dir/provisioner.log"
check "provisioner started with --simulated-instance-dir and synced its watches" grep -q "cluster state synced" "$dir/provisioner.log"
hollow_running() { local p n=0; for p in "$dir"/hollow/*/pid; do [[ -e "$p" ]] && kill -0 "$(cat "$p")" 2>/dev/null && n=$((n+1)); done; echo "$n"; }

# ---- 1. deleting a NodeClaim drains its node honouring a PDB, then terminates it -------------
echo "== 1. delete a NodeClaim: drain with a PDB (minAvailable 6 of 8), terminate"
k create namespace drain >/dev/null
nodepool drain | k apply -f - >/dev/null
pdb drain web 6 | k apply -f - >/dev/null
deployment drain web 8 1 1Gi drain | k apply -f - >/dev/null
wait_for 120 count_is 8 ready_pods drain web
check "8 pods Ready on hollow nodes" count_is 8 ready_pods drain web
check "... Running as their kubelets report (fake runtime), on Nodes the kubelets registered" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get pods -n drain -l app=web -o json | jqe '[.items[] | select(.status.phase == \"Running\" and .status.containerStatuses[0].state.running != null)] | length == 8' && kubectl --kubeconfig $KUBECONFIG get nodes -l e2e-pool=drain -o json | jqe '.items | length > 0 and all(.status.nodeInfo.kubeletVersion == \"v1.20.2\")'"
wait_for 30 bash -c "kubectl --kubeconfig $KUBECONFIG get pdb -n drain web -o json | jqe '.status.disruptionsAllowed == 2'"
victim=$(busiest_node drain)
on_victim=$(k get pods -n drain -o json | jq --arg n "$victim" '[.items[] | select(.spec.nodeName == $n)] | length')
echo "deleting nodeclaim $victim (holds $on_victim of the 8 pods)"
check "the node carries the termination finalizer" bash -c "kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.metadata.finalizers | index(\"adze.sh/termination\")'"
sample drain web "$dir/drain.samples" & samplers+=($!)
t0=$(now)
k delete nodeclaim "$victim" --wait=false >/dev/null
wait_for 20 bash -c "kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.spec.taints[]? | select(.key==\"adze.sh/disrupted\" and .effect==\"NoSchedule\")'"
check "node tainted adze.sh/disrupted:NoSchedule" bash -c "kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.spec.taints[]? | select(.key==\"adze.sh/disrupted\")' || ! kubectl --kubeconfig $KUBECONFIG get node $victim"
wait_for 240 gone nodeclaim "$victim"
t1=$(now)
kill "${samplers[-1]}" 2>/dev/null
echo "nodeclaim deleted -> drained, instance terminated, released: $(elapsed "$t0" "$t1") s ($on_victim pods)"
check "nodeclaim $victim terminated and released" gone nodeclaim "$victim"
check "node $victim removed" gone node "$victim"
min=$(min_of "$dir/drain.samples")
echo "PDB minAvailable 6: fewest Ready pods seen $min over $(wc -l <"$dir/drain.samples") samples"
check "PDB never violated during the drain (min Ready $min >= 6)" test "$min" -ge 6
check "evictions went through the Eviction API (Evicted events)" bash -c "kubectl --kubeconfig $KUBECONFIG get events -n drain --field-selector reason=Evicted -o name | grep -q ."
if (( on_victim > 2 )); then
  check "the PDB refused some evictions (429 retried, not forced)" grep -q "refused by a PodDisruptionBudget" "$dir/provisioner.log"
fi
check "no pod force-deleted" absent force-deleted "$dir/provisioner.log"
wait_for 120 count_is 8 ready_pods drain web
check "all 8 pods Ready again elsewhere" count_is 8 ready_pods drain web

# ---- 2. terminationGracePeriod: a PDB that never allows is overridden only after it --------
echo "== 2. terminationGracePeriod 15s with a PDB that allows nothing"
k create namespace grace >/dev/null
nodepool grace "terminationGracePeriod: 15s" | k apply -f - >/dev/null
pdb grace hold 3 | k apply -f - >/dev/null
deployment grace hold 3 1 1Gi grace | k apply -f - >/dev/null
wait_for 120 count_is 3 ready_pods grace hold
check "3 pods Ready" count_is 3 ready_pods grace hold
gvictim=$(busiest_node grace)
t0=$(now)
k delete nodeclaim "$gvictim" --wait=false >/dev/null
sleep 10
check "after 10 s (grace 15 s) the pods are still there, evictions refused" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaim $gvictim && absent force-deleted '$dir/provisioner.log'"
# The grace period runs from the claim's deletionTimestamp, which the API server records in
# whole seconds: up to 1 s before the script's t0.
gdeleted=$(date -d "$(k get nodeclaim "$gvictim" -o jsonpath='{.metadata.deletionTimestamp}')" +%s)
wait_for 60 gone nodeclaim "$gvictim"
t1=$(now)
echo "nodeclaim deleted -> released after force-deleting at the grace period: $(elapsed "$t0" "$t1") s"
check "after the grace period the pods were force-deleted and the node terminated" \
  bash -c "grep -q 'force-deleted' '$dir/provisioner.log' && ! kubectl --kubeconfig $KUBECONFIG get nodeclaim $gvictim"
check "not released before the grace period (15 s from deletionTimestamp $gdeleted)" awk -v a="$gdeleted" -v b="$t1" 'BEGIN{exit !(b-a >= 15)}'

# ---- 3. a crash mid-drain resumes ------------------------------------------------------------
echo "== 3. kill -9 during a drain, restart: the drain resumes"
k create namespace resume >/dev/null
nodepool resume | k apply -f - >/dev/null
pdb resume r 5 | k apply -f - >/dev/null
deployment resume r 6 1 1Gi resume | k apply -f - >/dev/null
wait_for 120 count_is 6 ready_pods resume r
rvictim=$(busiest_node resume)
sample resume r "$dir/resume.samples" & samplers+=($!)
k delete nodeclaim "$rvictim" --wait=false >/dev/null
wait_for 20 bash -c "kubectl --kubeconfig $KUBECONFIG get events -n resume --field-selector reason=Evicted -o name | grep -q ."
kill -9 "$prov_pid"; wait "$prov_pid" 2>/dev/null; prov_pid=
echo "killed during the drain of $rvictim"
start_provisioner
t_restart=$(now)
wait_for 240 gone nodeclaim "$rvictim"
echo "restarted -> the drain resumed and $rvictim was released $(elapsed "$t_restart" "$(now)") s later"
kill "${samplers[-1]}" 2>/dev/null
check "after restart the drain finished and $rvictim was released" gone nodeclaim "$rvictim"
check "its node removed" gone node "$rvictim"
rmin=$(min_of "$dir/resume.samples")
check "PDB (minAvailable 5) held across the crash (min Ready $rmin)" test "$rmin" -ge 5
wait_for 120 count_is 6 ready_pods resume r
check "all 6 pods Ready again" count_is 6 ready_pods resume r

# ---- 4-7. disruption ---------------------------------------------------------------------------
pool_claims() { k get nodeclaims -l adze.sh/nodepool="$1" -o name | wc -l; }
pool_claim_names() { k get nodeclaims -l adze.sh/nodepool="$1" -o json | jq -r '[.items[].metadata.name] | sort | join(" ")'; }
# NodeClaims of pool $1 being disrupted now (deleting or marked Disrupting).
disrupting() {
  k get nodeclaims -l adze.sh/nodepool="$1" -o json | jq '[.items[] | select(.metadata.deletionTimestamp != null
    or any(.status.conditions[]?; .type == "Disrupting" and .status == "True"))] | length'
}
sample_disrupting() { while :; do disrupting "$1" >>"$2" 2>/dev/null; sleep 0.3; done; }
max_of() { sort -n "$1" | tail -1; }
# pinned NAMESPACE NAME POOL [ANNOTATION-KEY [APART-FROM-APP]]: one do-not-disrupt pod, kept
# off the nodes of pods labelled app=APART-FROM-APP when given.
pinned() {
  local apart=
  [[ -n "${5:-}" ]] && apart="affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: $5}}, topologyKey: kubernetes.io/hostname}]}}"
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: {app: $2}, annotations: {${4:-adze.sh/do-not-disrupt}: "true"}}
spec:
  nodeSelector: {e2e-pool: $3}
  terminationGracePeriodSeconds: 0
  $apart
  containers:
    - name: pause
      image: registry.k8s.io/pause:3.9
      resources: {requests: {cpu: "1", memory: 1Gi}}
YAML
}

echo "== 4. consolidation: 30 replicas -> 5 (PDB minAvailable 4, a do-not-disrupt pod); forceful expireAfter; a closed budget"
k create namespace consol >/dev/null
nodepool consol "" '{consolidateAfter: 5s, budgets: [{nodes: "100%"}]}' | k apply -f - >/dev/null
# Expiration and a closed budget run alongside: the same controller handles every pool.
# Expiry is forceful (Karpenter v1): the expire pool's budget allows nothing and its node is
# annotated do-not-disrupt, and it is replaced all the same. The frozen pool never expires
# (an expiring one would be replaced whatever its budget): its closed budget alone keeps its
# underutilized nodes.
k create namespace expire >/dev/null
nodepool expire "expireAfter: 60s" '{consolidateAfter: Never, budgets: [{nodes: "0"}]}' | k apply -f - >/dev/null
k create namespace frozen >/dev/null
nodepool frozen "expireAfter: Never" '{consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "* * * * *", duration: 1h}]}' | k apply -f - >/dev/null
deployment expire e 1 1 1Gi expire | k apply -f - >/dev/null
deployment frozen f 4 1 1Gi frozen | k apply -f - >/dev/null
pdb consol web 4 | k apply -f - >/dev/null
pinned consol pinned consol | k apply -f - >/dev/null
# Karpenter's key protects as well (workloads migrated from Karpenter keep it): a pod carrying
# only that key, on a node of its own apart from the pinned pod's, so nothing else keeps it.
pinned consol kpinned consol karpenter.sh/do-not-disrupt pinned | k apply -f - >/dev/null
deployment consol web 30 1 1Gi consol | k apply -f - >/dev/null
# A static pool (spec.replicas) beside them: nodes without pods, consolidation on at once with
# a 100% budget, and it must keep them all.
k apply -f - >/dev/null <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: 2
  template:
    metadata: {labels: {e2e-pool: fixed}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidateAfter: 0s, budgets: [{nodes: "100%"}]}
  limits: {nodes: "3"}
YAML
fixed_nodes() { k get nodepool fixed -o jsonpath='{.status.nodes}'; }
wait_for 60 count_is 2 fixed_nodes
check "static pool: replicas 2 -> 2 launched NodeClaims with no pods (status.nodes $(fixed_nodes))" count_is 2 pool_claims fixed
k scale nodepool/fixed --replicas=3 >/dev/null
wait_for 60 count_is 3 fixed_nodes
check "static pool: kubectl scale --replicas=3 -> a third NodeClaim (status.nodes $(fixed_nodes))" count_is 3 pool_claims fixed
fixed_names=$(pool_claim_names fixed)
# A 1.20 API server does not run the CEL rule against removing spec.replicas: the controller
# refuses the change (condition and Event naming the field) and keeps treating the pool as
# static (not consolidated, although its nodes are empty and consolidateAfter is 0s).
k patch nodepool fixed --type json -p '[{"op":"remove","path":"/spec/replicas"}]' >/dev/null
fixed_refused() {
  k get nodepool fixed -o json | jqe '.status.kind == "Static" and any(.status.conditions[]?;
    .type == "ValidationSucceeded" and .status == "False" and .reason == "ReplicasChanged"
    and (.message | startswith("spec.replicas: cannot be removed from a static NodePool")))'
}
wait_for 30 fixed_refused
check "static pool: removing spec.replicas is refused (ValidationSucceeded=False ReplicasChanged, naming spec.replicas)" fixed_refused
fixed_event() {
  k get events -A --field-selector reason=ReplicasChanged -o json | jqe \
    '[.items[] | select(.involvedObject.kind == "NodePool" and .involvedObject.name == "fixed" and (.message | test("spec.replicas")))] | length > 0'
}
wait_for 30 fixed_event
check "static pool: a ReplicasChanged Event on the NodePool names spec.replicas" fixed_event
sleep 8
check "static pool: refused, its 3 empty nodes are not consolidated as a dynamic pool's would be" test "$(pool_claim_names fixed)" == "$fixed_names"
k patch nodepool fixed --type merge -p '{"spec":{"replicas":3}}' >/dev/null
fixed_valid() { k get nodepool fixed -o json | jqe 'any(.status.conditions[]?; .type == "ValidationSucceeded" and .status == "True")'; }
wait_for 30 fixed_valid
check "static pool: replicas restored -> accepted again" fixed_valid
wait_for 240 count_is 30 ready_pods consol web
wait_for 60 count_is 1 ready_pods consol pinned
wait_for 60 count_is 1 ready_pods consol kpinned
wait_for 60 count_is 4 ready_pods frozen f
wait_for 60 count_is 1 ready_pods expire e
check "30 web pods, the pinned pod, the expire and frozen pods Ready" count_is 30 ready_pods consol web
expire_first=$(pool_claim_names expire)
k annotate nodeclaim "$expire_first" adze.sh/do-not-disrupt=true >/dev/null
frozen_first=$(pool_claim_names frozen)
pinned_node=$(k get pod -n consol pinned -o jsonpath='{.spec.nodeName}')
pinned_uid=$(k get pod -n consol pinned -o jsonpath='{.metadata.uid}')
kpinned_where=$(k get pod -n consol kpinned -o jsonpath='{.metadata.uid} {.spec.nodeName}')
before=$(pool_claims consol)
cpu_before=$(k get nodeclaims -l adze.sh/nodepool=consol -o json | jq '[.items[].status.capacity.cpu | tonumber] | add')
echo "consol pool: $before NodeClaims, $cpu_before cpu; pinned pod on $pinned_node, karpenter.sh-pinned pod on ${kpinned_where#* }"
check "the karpenter.sh/do-not-disrupt pod is not on the adze.sh/do-not-disrupt pod's node" test "${kpinned_where#* }" != "$pinned_node"
k scale -n frozen deployment/f --replicas=1 >/dev/null
sample consol web "$dir/consol.samples" & samplers+=($!)
# A pod nothing can ever place (5,000 cpus) stays pending throughout; it must not stop disruption.
k create namespace stuck >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: stuck}
spec:
  nodeSelector: {e2e-pool: consol}
  containers:
    - name: pause
      image: registry.k8s.io/pause:3.9
      resources: {requests: {cpu: "5000", memory: 1Gi}}
YAML
huge_unschedulable() {
  k get pod -n stuck huge -o json | jqe '.spec.nodeName == null and any(.status.conditions[]?; .type == "PodScheduled" and .reason == "Unschedulable")'
}
wait_for 30 huge_unschedulable
log_mark=$(wc -l <"$dir/provisioner.log")
consol_acted() { tail -n +"$((log_mark+1))" "$dir/provisioner.log" | grep -c "disrupting: .*consol-" >/dev/null; }
t0=$(now)
k scale -n consol deployment/web --replicas=5 >/dev/null
wait_for 120 consol_acted
t_first=$(now)
echo "scaled 30 -> 5 -> first disruption acted on after $(elapsed "$t0" "$t_first") s (consolidateAfter 5s + validation ${ADZE_E2E_VALIDATION:-5s} + poll 2s)"
# Settled: the pool's claim count unchanged for 30 s and nothing disrupting.
stable() {
  local a b; a=$(pool_claim_names consol); sleep 30; b=$(pool_claim_names consol)
  [[ "$a" == "$b" && "$(disrupting consol)" == 0 ]]
}
wait_for 400 stable
t_done=$(now)
kill "${samplers[-1]}" 2>/dev/null
after=$(pool_claims consol)
cpu_after=$(k get nodeclaims -l adze.sh/nodepool=consol -o json | jq '[.items[].status.capacity.cpu | tonumber] | add')
echo "consolidated: $before -> $after NodeClaims, $cpu_before -> $cpu_after cpu, settled $(elapsed "$t0" "$t_done") s after the scale-down (incl. 30 s stability window)"
tail -n +"$((log_mark+1))" "$dir/provisioner.log" | grep -E "disrupting: .*consol-" | sed -E 's/^.*(disrupting: )/  \1/' | awk 'NR<=8'
check "consolidation acted within consolidateAfter + validation + 20 s" awk -v a="$t0" -v b="$t_first" 'BEGIN{exit !(b-a <= 5+5+2+20)}'
check "fewer nodes after consolidation ($before -> $after)" test "$after" -lt "$before"
check "a pod no NodePool can place stayed pending and did not hold consolidation back" huge_unschedulable
check "capacity shrank ($cpu_before -> $cpu_after cpu)" awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN{exit !(b < a)}'
cmin=$(min_of "$dir/consol.samples")
check "PDB minAvailable 4 never violated (min Ready $cmin)" test "$cmin" -ge 4
check "5 web pods Ready" count_is 5 ready_pods consol web
check "do-not-disrupt pod untouched (same pod, same node $pinned_node)" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pod -n consol pinned -o jsonpath='{.metadata.uid} {.spec.nodeName}') == '$pinned_uid $pinned_node' ]]"
check "karpenter.sh/do-not-disrupt pod untouched (same pod, same node: $kpinned_where)" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pod -n consol kpinned -o jsonpath='{.metadata.uid} {.spec.nodeName}') == '$kpinned_where' ]]"
check "disruption events name the reason and the saving" bash -c "kubectl --kubeconfig $KUBECONFIG get events -A --field-selector reason=Disrupting -o json | jqe '[.items[].message | select(test(\"saves|costs\"))] | length > 0'"
# The pinned pod's node would be consolidated but for its pod: a DisruptionBlocked event says so.
pinned_blocked() {
  k get events -A --field-selector reason=DisruptionBlocked -o json | jqe --arg n "$pinned_node" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $n and (.message | test("pod consol/pinned is annotated adze.sh/do-not-disrupt")))] | length > 0'
}
wait_for 30 pinned_blocked
check "a DisruptionBlocked event on $pinned_node names the pinned pod and its annotation" pinned_blocked
check "static pool kept its 3 empty nodes through consolidation (same NodeClaims)" test "$(pool_claim_names fixed)" == "$fixed_names"

wait_for 180 bash -c "[[ \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=expire -o json | jq -r '[.items[].metadata.name] | sort | join(\" \")')\" != '$expire_first' ]]"
wait_for 180 count_is 1 ready_pods expire e
check "expireAfter 60s: node $expire_first replaced despite budget nodes 0 and do-not-disrupt" bash -c "! kubectl --kubeconfig $KUBECONFIG get nodeclaim $expire_first"
check "an Expired event names the expiry" bash -c "kubectl --kubeconfig $KUBECONFIG get events -A --field-selector reason=Expired -o json | jqe '[.items[] | select(.involvedObject.name == \"$expire_first\" and (.message | test(\"expireAfter\")))] | length > 0' >/dev/null"
check "the expired node's pod Ready on its replacement" count_is 1 ready_pods expire e
check "closed budget (nodes 0, window open): frozen pool untouched though underutilized" \
  bash -c "[[ \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=frozen -o json | jq -r '[.items[].metadata.name] | sort | join(\" \")')\" == '$frozen_first' ]]"
check "frozen pool has no disrupting nodeclaim" count_is 0 disrupting frozen
# consolidateAfter must survive a restart: the last pod event is kept on each NodeClaim.
recorded() { kubectl --kubeconfig "$KUBECONFIG" get nodeclaims -l adze.sh/nodepool=frozen -o json |
  jqe '.items | length > 0 and all(.status.lastPodEventTime? | type == "string")' >/dev/null; }
wait_for 30 recorded
check "NodeClaims record status.lastPodEventTime (what a restarted provisioner starts from)" recorded

echo "== 5. drift: change the NodePool template -> every node replaced, one at a time (budget nodes 1)"
k create namespace drift >/dev/null
nodepool drift "" '{consolidateAfter: Never, budgets: [{nodes: "1"}]}' | k apply -f - >/dev/null
deployment drift d 3 1 1Gi drift one-per-node | k apply -f - >/dev/null
wait_for 120 count_is 3 ready_pods drift d
drift_first=$(pool_claim_names drift)
# Replacement names may repeat a deleted claim's name; uids tell the claims apart.
pool_claim_uids() { k get nodeclaims -l adze.sh/nodepool="$1" -o json | jq -r '[.items[].metadata.uid] | sort | join(" ")'; }
drift_first_uids=$(pool_claim_uids drift)
echo "drift pool: $drift_first"
# Widening a requirement drifts nothing (Karpenter v1: requirements drift by compatibility).
k patch nodepool drift --type json -p '[{"op": "replace", "path": "/spec/template/spec/requirements/2/values", "value": ["c", "m", "r", "t"]}]' >/dev/null
sleep 10
drifted_claims() { k get nodeclaims -l adze.sh/nodepool="$1" -o json | jq '[.items[] | select(any(.status.conditions[]?; .type == "Drifted" and .status == "True"))] | length'; }
check "widening a requirement drifts no node (Drifted on none)" count_is 0 drifted_claims drift
check "widening a requirement replaces no node (same nodeclaims)" test "$(pool_claim_uids drift)" == "$drift_first_uids"
sample_disrupting drift "$dir/drift.samples" & samplers+=($!)
t0=$(now)
k patch nodepool drift --type merge -p '{"spec":{"template":{"metadata":{"labels":{"e2e-version":"2"}}}}}' >/dev/null
drift_reason() { k get nodeclaims -l adze.sh/nodepool=drift -o json | jqe '[.items[].status.conditions[]? | select(.type == "Drifted" and .status == "True" and .reason == "NodePoolDrifted")] | length > 0'; }
wait_for 30 drift_reason
check "a template label change sets Drifted=True, reason NodePoolDrifted" drift_reason
replaced() { [[ $(k get nodes -l e2e-pool=drift,e2e-version=2 -o name | wc -l) == 3 && $(pool_claims drift) == 3 && "$(disrupting drift)" == 0 ]]; }
wait_for 400 replaced
t1=$(now)
kill "${samplers[-1]}" 2>/dev/null
echo "template changed -> all 3 nodes replaced in $(elapsed "$t0" "$t1") s; now $(pool_claim_names drift)"
check "all drift nodes replaced by nodes with the new template" replaced
now_uids=$(pool_claim_uids drift)
check "none of the original nodeclaims left (by uid)" bash -c "for u in $drift_first_uids; do [[ ' $now_uids ' != *' '\$u' '* ]] || exit 1; done"
dmax=$(max_of "$dir/drift.samples")
check "budget nodes 1 never exceeded (max disrupting at once $dmax)" test "$dmax" -le 1
# The last replaced node's pod is evicted as its NodeClaim goes: it is rescheduled and started
# on a new node a few seconds after `replaced` holds.
wait_for 60 count_is 3 ready_pods drift d
check "3 pods Ready after the drift (within 60 s of the last replacement)" count_is 3 ready_pods drift d

# ---- 6. a drift rollout of 50 nodes under a 20 % budget: in waves, not node by node -----------
# The fleet: 20 nodes in CI (a rollout of 4 at a time beside the other lane's suites), 50 as a
# benchmark (ADZE_E2E_BENCH=1, the figure docs/benchmarks.md reports; ~75 hollow kubelets at the peak).
fleet_n=${ADZE_E2E_FLEET:-$([[ "${ADZE_E2E_BENCH:-0}" == 1 ]] && echo 50 || echo 20)}
[[ "$fleet_n" =~ ^[0-9]+$ ]] && (( fleet_n >= 10 && fleet_n <= 200 )) \
  || { echo "FAIL: ADZE_E2E_FLEET=$fleet_n: a node count from 10 to 200"; exit 1; }
# The budget's 20 %, rounded up as the budget rounds it.
fleet_allowed=$(( (fleet_n * 20 + 99) / 100 ))
echo "== 6. drift rollout: $fleet_n nodes, budget 20 % ($fleet_allowed) -> several replacements in flight at once"
# One pod per node (hostname anti-affinity), so every node is replaced, none deleted.
k create namespace fleet >/dev/null
nodepool fleet "" '{consolidateAfter: Never, budgets: [{nodes: "20%"}]}' | k apply -f - >/dev/null
# What the machine pays for it: hollow kubelets running, their summed RSS, available memory,
# load average, every 5 s from here to the end of the rollout.
host_sample() {
  while :; do
    local p rss=0 n=0
    for p in "$dir"/hollow/*/pid; do
      [[ -e "$p" ]] || continue
      local r; r=$(awk '/^VmRSS:/{print $2}' "/proc/$(cat "$p")/status" 2>/dev/null) || continue
      [[ -n "$r" ]] && { rss=$((rss + r)); n=$((n+1)); }
    done
    echo "$n $((rss / 1024)) $(awk '/^MemAvailable:/{printf "%d", $2/1024}' /proc/meminfo) $(cut -d' ' -f1 /proc/loadavg)" >>"$dir/host.samples"
    sleep 5
  done
}
host_sample & samplers+=($!)
n_before=$(hollow_running)
echo "before the fleet: $n_before hollow nodes running; $(awk '/^MemAvailable:/{printf "%d", $2/1024}' /proc/meminfo) MB available, load $(cut -d' ' -f1 /proc/loadavg)"
t_up=$(now)
deployment fleet f "$fleet_n" 100m 64Mi fleet one-per-node | k apply -f - >/dev/null
wait_for 900 count_is "$fleet_n" ready_pods fleet f
echo "$fleet_n pods created -> Ready on $fleet_n new hollow nodes: $(elapsed "$t_up" "$(now)") s"
check "$fleet_n pods Ready on $fleet_n nodes" bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=fleet -o name | wc -l) == $fleet_n ]] && [[ \$(kubectl --kubeconfig $KUBECONFIG get pods -n fleet -l app=f -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null and any(.status.conditions[]?; .type == \"Ready\" and .status == \"True\"))] | length') == $fleet_n ]]"
fleet_first_uids=$(pool_claim_uids fleet)
# Each sample: disrupting claims, and initialized claims (what the budget's 20 % is of).
fleet_sample() {
  while :; do
    k get nodeclaims -l adze.sh/nodepool=fleet -o json 2>/dev/null | jq -r '[
      ([.items[] | select(.metadata.deletionTimestamp != null
         or any(.status.conditions[]?; .type == "Disrupting" and .status == "True"))] | length),
      ([.items[] | select(any(.status.conditions[]?; .type == "Initialized" and .status == "True"))] | length)
      ] | "\(.[0]) \(.[1])"' >>"$dir/fleet.samples"
    sleep 0.3
  done
}
fleet_sample & samplers+=($!)
wave_mark=$(wc -l <"$dir/provisioner.log")
t0=$(now)
k patch nodepool fleet --type merge -p '{"spec":{"template":{"metadata":{"labels":{"e2e-version":"2"}}}}}' >/dev/null
fleet_replaced() { [[ $(k get nodes -l e2e-pool=fleet,e2e-version=2 -o name | wc -l) == "$fleet_n" && $(pool_claims fleet) == "$fleet_n" && "$(disrupting fleet)" == 0 ]]; }
wait_for 1500 fleet_replaced
t1=$(now)
kill "${samplers[-1]}" "${samplers[-2]}" 2>/dev/null
check "all $fleet_n nodes replaced by nodes with the new template" fleet_replaced
now_uids=$(pool_claim_uids fleet)
check "none of the $fleet_n original nodeclaims left (by uid)" bash -c "for u in $fleet_first_uids; do [[ ' $now_uids ' != *' '\$u' '* ]] || exit 1; done"
# Waves: passes that started commands, and how many each started.
tail -n +"$((wave_mark+1))" "$dir/provisioner.log" | sed 's/\x1b\[[0-9;]*m//g' | grep -o 'disruption wave: [0-9]* command' | grep -o '[0-9]*' >"$dir/fleet.waves" || true
waves=$(wc -l <"$dir/fleet.waves")
widest=$(max_of "$dir/fleet.waves")
fmax=$(awk '{print $1}' "$dir/fleet.samples" | sort -n | tail -1)
# The budget is 20 % of the pool's initialized nodes at that moment, rounded up.
over=$(awk '{ allowed = int(($2 * 20 + 99) / 100); if ($1 > allowed) n++ } END { print n + 0 }' "$dir/fleet.samples")
echo "$fleet_n-node drift rollout: $(elapsed "$t0" "$t1") s in $waves waves (commands per wave: $(paste -sd, "$dir/fleet.waves")); at most $fmax nodes disrupting at once"
# With kubelets that take seconds to boot (several at once, on a loaded machine), old nodes
# finish at staggered times and each pass fills the slots freed since the last: more and
# narrower waves than with instant Nodes (20 nodes: 12 waves of 4,1,3,1,1,2,1,1,2,1,2,1
# measured here; 50 nodes: 16 waves of 1-10; on simulated Nodes 5-8 waves of 2-10). So "not
# one at a time" is: one pass started the budget's whole width, that many were in flight at
# once, and there were fewer passes than nodes.
check "the rollout ran in waves of several nodes ($waves waves, widest $widest, max $fmax in flight; budget $fleet_allowed), not $fleet_n one at a time" \
  bash -c "[[ $waves -ge 1 && $waves -lt $fleet_n && ${widest:-0} -ge $fleet_allowed && ${fmax:-0} -ge $fleet_allowed ]]"
check "the 20 % budget was never exceeded ($over of $(wc -l <"$dir/fleet.samples") samples over; max $fmax at once)" test "$over" -eq 0
# As in the drift above: the last replaced node's pod is rescheduled and started on a new node
# a few seconds after the rollout's end (its kubelet starting it on a loaded machine).
wait_for 60 count_is "$fleet_n" ready_pods fleet f
check "$fleet_n pods Ready after the rollout (within 60 s of the last replacement)" count_is "$fleet_n" ready_pods fleet f
# Peak cost of the hollow fleet over the scale-up and rollout.
read -r h_n h_rss h_avail h_load <<<"$(awk 'NR == 1 || $1 > n { n = $1; r = $2 } { if (NR == 1 || $3 < a) a = $3; if ($4 > l) l = $4 } END { print n + 0, r + 0, a + 0, l + 0 }' "$dir/host.samples")"
echo "hollow fleet at its peak: $h_n kubelets, $h_rss MB RSS together; lowest MemAvailable $h_avail MB; highest load average $h_load ($(wc -l <"$dir/host.samples") samples, 5 s apart)"
check "the machine held the whole fleet at once: $h_n hollow kubelets >= the $fleet_n + the $n_before of the earlier sections" test "$h_n" -ge "$((fleet_n + n_before))"

echo "== 7. node repair: a node condition unhealthy past its toleration -> rebooted, still unhealthy, replaced (off by default; budgeted: 20 % guard, then held by a budget of 0 for Unhealthy until it is raised; --reboot-for-repair); an EC2 status check failing -> EC2StatusImpaired on the Node, rebooted, then replaced"
# KernelReady (the EKS node monitoring agent's condition; tolerated 30m) rather than Ready:
# the kubelet owns Ready (and its pressure conditions) and rewrites an injected Ready=False on
# its next status update (checked below), while a condition type it does not own is carried
# through its status patches untouched. An unhealthy Ready is what a dead kubelet gives (the
# node lifecycle controller sets Unknown; e2e/kubelet.sh section 4), with its transition time
# now, so the 30 m toleration cannot be run out here. Conditions are set through the status
# subresource with the admin token (kubectl 1.20 has no --subresource), KernelReady's
# lastTransitionTime 31 minutes ago.
node_condition() { # NODE TYPE STATUS SECONDS-AGO
  local since; since=$(date -u -d "@$(( $(date +%s) - $4 ))" +%Y-%m-%dT%H:%M:%SZ)
  curl -fsS --max-time 5 --cacert "$ADZE_CA_CERT" -H "Authorization: Bearer $ADZE_TOKEN" -X PATCH \
    -H 'Content-Type: application/strategic-merge-patch+json' -o /dev/null "$APISERVER/api/v1/nodes/$1/status" \
    --data "{\"status\":{\"conditions\":[{\"type\":\"$2\",\"status\":\"$3\",\"reason\":\"E2eInjected\",\"message\":\"e2e/disruption.sh\",\"lastTransitionTime\":\"$since\",\"lastHeartbeatTime\":\"$since\"}]}}"
}
k create namespace repair >/dev/null
# Repair is budgeted (Karpenter v1.15): the pool's budget for reason Unhealthy is 0 until the
# guard has been checked, then raised to 1.
repair_budget() { echo "{consolidateAfter: Never, budgets: [{nodes: \"$1\", reasons: [Unhealthy]}]}"; }
nodepool repair "" "$(repair_budget 0)" | k apply -f - >/dev/null
# A PDB that allows no eviction: repair's drain does not wait for it, budgeted or not.
pdb repair r 5 | k apply -f - >/dev/null
deployment repair r 5 1 1Gi repair one-per-node | k apply -f - >/dev/null
# Pool ec2, beside it: EC2 status checks (7b). Its own 5 nodes, so each pool's 20 % guard
# counts its own.
k create namespace ec2 >/dev/null
nodepool ec2 | k apply -f - >/dev/null
pdb ec2 e 5 | k apply -f - >/dev/null
deployment ec2 e 5 1 1Gi ec2 one-per-node | k apply -f - >/dev/null
# Pool tf, beside them (7c): static, 2 replicas at its limits.nodes of 2, so no replacement can
# be launched while an unhealthy node of it exists: capacity-constrained, terminate-first.
k create namespace tf >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: tf}
spec:
  replicas: 2
  template:
    metadata: {labels: {e2e-pool: tf}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: aws.adze.sh/instance-category, operator: In, values: [c, m, r]}
  disruption: {consolidateAfter: Never, budgets: [{nodes: "1", reasons: [Unhealthy]}]}
  limits: {nodes: "2"}
YAML
deployment tf t 2 100m 128Mi tf one-per-node | k apply -f - >/dev/null
wait_for 120 count_is 5 ready_pods repair r
check "5 pods Ready on 5 nodes of the repair pool" count_is 5 pool_claims repair
wait_for 120 count_is 5 ready_pods ec2 e
check "5 pods Ready on 5 nodes of the ec2 pool" count_is 5 pool_claims ec2
wait_for 120 count_is 2 ready_pods tf t
check "2 pods Ready on the 2 nodes of the static pool tf (limits.nodes 2)" count_is 2 pool_claims tf
read -r sick_a sick_b _ <<<"$(pool_claim_names repair)"
check "KernelReady=False (31m ago) set on $sick_a through the status subresource" node_condition "$sick_a" KernelReady False 1860
kernel_false() { k get node "$1" -o json | jqe '[.status.conditions[] | select(.type == "KernelReady" and .status == "False")] | length == 1'; }
# Make the kubelet write its status (1.20 patches it only on a change or every 5 min): an
# injected Ready=False is a change to undo. When Ready is True again the kubelet has patched
# the node's status, and KernelReady must have come through that patch.
ready_status() { k get node "$1" -o json | jq -r '.status.conditions[] | select(.type == "Ready") | "\(.status) \(.reason)"'; }
t_inj=$(now)
check "Ready=False injected on $sick_a through the status subresource" node_condition "$sick_a" Ready False 0
k get node "$sick_a" -o json | jq -r '.status.conditions[] | select(.type == "Ready") | .reason' >"$dir/ready-injected.reason"
wait_for 90 bash -c "[[ \"\$(kubectl --kubeconfig $KUBECONFIG get node $sick_a -o json | jq -r '.status.conditions[] | select(.type == \"Ready\") | .status + \" \" + .reason')\" == 'True KubeletReady' ]]"
echo "injected Ready=False (read back: $(cat "$dir/ready-injected.reason")) -> the kubelet's Ready=True back after $(elapsed "$t_inj" "$(now)") s"
# The kubelet may answer within the read-back above (its 10 s status tick can fall right after
# the injection), so the proof that it rewrote our False is Ready's transition time: the
# kubelet's True is stamped at or after the injection, while the node's own Ready dates from its
# boot minutes earlier.
ready_back_after() { # NODE EPOCH-SECONDS
  k get node "$1" -o json | jqe --argjson t "$2" \
    '[.status.conditions[] | select(.type == "Ready" and .status == "True" and .reason == "KubeletReady" and (.lastTransitionTime | fromdateiso8601) >= $t)] | length == 1'
}
check "the real kubelet overwrote the injected Ready=False on its next status update (now: $(ready_status "$sick_a"), since the injection)" \
  ready_back_after "$sick_a" "${t_inj%.*}"
check "the injected KernelReady=False survived that status update of the real kubelet" kernel_false "$sick_a"
check "... with its own transition time (31 m ago), not restamped" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $sick_a -o json | jqe --argjson now $(date +%s) '.status.conditions[] | select(.type == \"KernelReady\") | (\$now - (.lastTransitionTime | fromdateiso8601)) >= 1800'"
check "repair is off by default (no --node-repair): $sick_a kept after 10 s" k get nodeclaim "$sick_a"
node_condition "$sick_b" KernelReady False 1860
# 7b's impairment starts here, so its 2 minutes run out while 7 goes on: imp_a's instance
# reachability check fails from now (the simulated cloud reads a record's statusChecks; the
# record is replaced whole, through a dot-file neither the cloud nor the hollow-node watch
# reads), and imp_b has KernelReady False 31 m: 2 of the pool's 5 unhealthy, the guard holds.
read -r imp_a imp_b imp_c _ <<<"$(pool_claim_names ec2)"
impair() { # NODE SINCE-EPOCH
  local since; since=$(date -u -d "@$2" +%Y-%m-%dT%H:%M:%SZ)
  jq --arg s "$since" '.statusChecks = [{kind: "instance", status: "failed", impairedSince: $s}, {kind: "system", status: "passed"}]' \
    "$instances/$1.json" >"$instances/.$1.tmp" && mv "$instances/.$1.tmp" "$instances/$1.json"
}
t_imp=$(date +%s)
check "$imp_a's instance record: instance reachability failed since now" impair "$imp_a" "$t_imp"
node_condition "$imp_b" KernelReady False 1860
# 7c's node: due at once, rebooted first by the repair provisioner started below.
read -r tf_a tf_b _ <<<"$(pool_claim_names tf)"
check "KernelReady=False (31m ago) set on $tf_a (pool tf)" node_condition "$tf_a" KernelReady False 1860
# Every ~2 s: is imp_a's NodeClaim alive, deleting or gone (checked against the 2 minutes).
claim_state() {
  local d; d=$(k get nodeclaim "$1" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null) || { echo gone; return; }
  if [[ -z "$d" ]]; then echo alive; else echo deleting; fi
}
( while :; do echo "$(date +%s) $(claim_state "$imp_a")"; sleep 2; done ) >>"$dir/imp.samples" 2>/dev/null &
samplers+=($!)
stop_provisioner
# Budgeted repair (the default since Karpenter v1.15; --legacy-node-repair is the forceful
# mode outside budgets, unit-tested) with a reboot first (--reboot-for-repair, Karpenter's
# RebootForRepair): what steps 7 and 7b check. The simulated cloud's reboot mends nothing.
PROV_ARGS+=(--node-repair --reboot-for-repair)
start_provisioner
# The reboot's record on the NodeClaim, as epoch seconds.
rebooted_at() {
  local at; at=$(k get nodeclaim "$1" -o jsonpath='{.metadata.annotations.adze\.sh/repair-rebooted-at}') && [[ -n "$at" ]] && date -d "$at" +%s
}
rebooted_event() { # NODE: a Rebooted event on its Node
  k get events -A --field-selector reason=Rebooted -o json | jqe --arg a "$1" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("its instance is rebooted first \\(reboot-for-repair\\)")))] | length > 0'
}
# Repair waits 20 minutes after a reboot before it replaces a node still unhealthy; rather than
# wait, the record is moved back past that wait (the controller reads it at every pass).
reboot_wait_over() { # NODE
  local at; at=$(date -u -d "@$(( $(rebooted_at "$1") - 1205 ))" +%Y-%m-%dT%H:%M:%SZ)
  k annotate nodeclaim "$1" --overwrite "adze.sh/repair-rebooted-at=$at" >/dev/null
}
repair_blocked() {
  k get events -A --field-selector reason=RepairBlocked -o json | jqe --arg a "$sick_a" --arg b "$sick_b" \
    '[.items[] | select(.involvedObject.kind == "Node" and (.involvedObject.name == $a or .involvedObject.name == $b)
      and (.message | test("more than 20% of the nodes of nodepool repair are unhealthy \\(2 of 5; at most 1 may be\\)")))] | length > 0'
}
wait_for 60 repair_blocked
check "--node-repair, 2 of 5 unhealthy: a RepairBlocked event names the 20 % guard (2 of 5, 1 allowed)" repair_blocked
sleep 6
check "guard: neither unhealthy node repaired ($sick_a, $sick_b kept)" k get nodeclaim "$sick_a" "$sick_b"
node_condition "$sick_b" KernelReady True 0
budget_blocked() {
  k get events -A --field-selector reason=RepairBlocked -o json | jqe --arg a "$sick_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("^reboot blocked: node condition KernelReady has been False for 3[0-9]m.*but the disruption budget of nodepool repair allows no more Unhealthy disruptions now$")))] | length > 0'
}
wait_for 60 budget_blocked
check "$sick_b healed, 1 of 5 unhealthy: a RepairBlocked event on $sick_a names the pool's budget for Unhealthy (nodes: 0)" budget_blocked
check "budget 0: $sick_a kept" k get nodeclaim "$sick_a"
t0=$(now)
nodepool repair "" "$(repair_budget 1)" | k apply -f - >/dev/null
wait_for 60 rebooted_event "$sick_a"
echo "budget raised to 1 -> $sick_a rebooted $(elapsed "$t0" "$(now)") s later"
check "budget raised to 1: a Rebooted event on $sick_a (reboot first, not replaced)" rebooted_event "$sick_a"
check "... the reboot recorded on its NodeClaim (adze.sh/repair-rebooted-at)" rebooted_at "$sick_a"
sleep 6
check "rebooted and still unhealthy (the reboot mended nothing): $sick_a kept during the wait" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaim $sick_a >/dev/null && [[ -z \$(kubectl --kubeconfig $KUBECONFIG get nodeclaim $sick_a -o jsonpath='{.metadata.deletionTimestamp}') ]]"
check "... KernelReady still False on $sick_a" kernel_false "$sick_a"
t0=$(now)
reboot_wait_over "$sick_a"
wait_for 120 gone nodeclaim "$sick_a"
echo "reboot's 20 minutes over (record moved back) -> $sick_a's NodeClaim gone $(elapsed "$t0" "$(now)") s later"
check "still unhealthy after the reboot's wait: $sick_a's NodeClaim deleted" gone nodeclaim "$sick_a"
repaired_event() {
  k get events -A --field-selector reason=Disrupting -o json | jqe --arg a "$sick_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("node condition KernelReady has been False for 3[0-9]m.*repaired within the NodePool.s disruption budget for Unhealthy")))] | length > 0'
}
check "a Disrupting event on node $sick_a names the condition, for how long, and the budget" repaired_event
wait_for 120 count_is 5 ready_pods repair r
check "its pod Ready again on a replacement, although the PDB allowed no eviction (5 Ready, 5 NodeClaims)" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pods -n repair -l app=r -o json | jq '[.items[] | select(.spec.nodeName == \"$sick_a\")] | length') == 0 && \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=repair -o name | wc -l) == 5 ]]"
check "the healed node $sick_b is kept" k get nodeclaim "$sick_b"

echo "== 7b. node repair: EC2 status checks ($imp_a instance reachability failed since $(elapsed "$t_imp" "$(now)") s ago)"
ec2_is() { # NODE STATUS REASON: the Node's one EC2StatusImpaired condition says so
  k get node "$1" -o json | jqe --arg s "$2" --arg r "$3" \
    '[.status.conditions[] | select(.type == "EC2StatusImpaired")] | length == 1 and .[0].status == $s and .[0].reason == $r'
}
ec2_since() { k get node "$1" -o json | jq -r '.status.conditions[] | select(.type == "EC2StatusImpaired") | .lastTransitionTime | fromdateiso8601'; }
wait_for 60 ec2_is "$imp_a" True ReachabilityFailed
check "EC2StatusImpaired=True (ReachabilityFailed) written on $imp_a's Node" ec2_is "$imp_a" True ReachabilityFailed
check "... its lastTransitionTime is the record's impairedSince ($t_imp), not when it was read" count_is "$t_imp" ec2_since "$imp_a"
check "EC2StatusImpaired=False (NoImpairmentReported) on a healthy node of the pool ($imp_c)" ec2_is "$imp_c" False NoImpairmentReported
# The kubelet's status update must carry it through, as KernelReady above.
t_inj=$(now)
check "Ready=False injected on $imp_a" node_condition "$imp_a" Ready False 0
wait_for 90 bash -c "[[ \"\$(kubectl --kubeconfig $KUBECONFIG get node $imp_a -o json | jq -r '.status.conditions[] | select(.type == \"Ready\") | .status + \" \" + .reason')\" == 'True KubeletReady' ]]"
echo "injected Ready=False on $imp_a -> the kubelet's Ready=True back after $(elapsed "$t_inj" "$(now)") s"
check "the kubelet rewrote Ready on $imp_a (now: $(ready_status "$imp_a"))" count_is "True KubeletReady" ready_status "$imp_a"
ec2_kept() { ec2_is "$imp_a" True ReachabilityFailed && count_is "$t_imp" ec2_since "$imp_a"; }
check "EC2StatusImpaired=True survived that status update, its transition time unchanged" ec2_kept
imp_blocked() {
  k get events -A --field-selector reason=RepairBlocked -o json | jqe --arg a "$imp_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("^repair blocked: EC2 status check instance status reachability has been failing for [0-9]+m[0-9]*s? \\(tolerated for 2m\\).*more than 20% of the nodes of nodepool ec2 are unhealthy \\(2 of 5; at most 1 may be\\)")))] | length > 0'
}
wait_for 150 imp_blocked
echo "RepairBlocked on $imp_a $(elapsed "$t_imp" "$(now)") s after impairedSince"
check "past 2 minutes, 2 of 5 unhealthy (EC2StatusImpaired and KernelReady): a RepairBlocked event on $imp_a (2 of 5, 1 allowed)" imp_blocked
check "guard: $imp_a and $imp_b kept" k get nodeclaim "$imp_a" "$imp_b"
t_heal=$(now)
node_condition "$imp_b" KernelReady True 0
wait_for 60 rebooted_event "$imp_a"
check "1 of 5 unhealthy: $imp_a rebooted first (a Rebooted event)" rebooted_event "$imp_a"
check "... its NodeClaim kept, the reboot recorded on it" rebooted_at "$imp_a"
reboot_wait_over "$imp_a"
wait_for 120 gone nodeclaim "$imp_a"
echo "$imp_b healed -> $imp_a's NodeClaim gone $(elapsed "$t_heal" "$(now)") s later, $(elapsed "$t_imp" "$(now)") s after impairedSince"
check "1 of 5 unhealthy: $imp_a's NodeClaim deleted" gone nodeclaim "$imp_a"
imp_repaired_event() {
  k get events -A --field-selector reason=Disrupting -o json | jqe --arg a "$imp_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("unhealthy: EC2 status check instance status reachability has been failing for [0-9]+m[0-9]*s? \\(tolerated for 2m\\); repaired within the NodePool.s disruption budget")))] | length > 0'
}
check "a Disrupting event on node $imp_a names the failing check and for how long" imp_repaired_event
# Not before its 2 minutes: alive at ~60 s, and in every sample before 118 s.
alive_at_60() { awk -v t="$t_imp" '$1 >= t + 55 && $1 <= t + 70 && $2 == "alive" { n++ } END { exit !(n > 0) }' "$dir/imp.samples"; }
never_early() { awk -v t="$t_imp" '$1 < t + 118 { n++; if ($2 != "alive") bad++ } END { exit !(n > 10 && bad == 0) }' "$dir/imp.samples"; }
check "$imp_a's NodeClaim was still there 55-70 s after impairedSince" alive_at_60
check "... and in every sample before 118 s ($(awk -v t="$t_imp" '$1 < t + 118' "$dir/imp.samples" | wc -l) samples)" never_early
wait_for 120 count_is 5 ready_pods ec2 e
check "its pod Ready again on a replacement, although the PDB allowed no eviction (5 Ready, 5 NodeClaims)" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pods -n ec2 -l app=e -o json | jq '[.items[] | select(.spec.nodeName == \"$imp_a\")] | length') == 0 && \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=ec2 -o name | wc -l) == 5 ]]"
check "the healed node $imp_b is kept" k get nodeclaim "$imp_b"
prov_url=$(grep -o 'on http://[0-9.:]*' "$dir/provisioner.log" | tail -n 1 | sed 's/^on //')
check "adze_disruption_decisions_total{decision=replace,reason=Unhealthy,...,termination_mode=forceful} is 2 ($sick_a and $imp_a, each replaced first)" \
  bash -c "curl -fsS '$prov_url/metrics' | grep -qx 'adze_disruption_decisions_total{decision=\"replace\",reason=\"Unhealthy\",consolidation_policy=\"none\",termination_mode=\"forceful\"} 2'"
check "adze_repair_reboots_total{result=accepted} is 1 in each pool (repair, ec2, tf)" \
  bash -c "curl -fsS '$prov_url/metrics' | grep -x 'adze_repair_reboots_total{nodepool=\"\(repair\|ec2\|tf\)\",result=\"accepted\"} 1' | wc -l | grep -qx 3"

echo "== 7c. terminate-first repair: static pool tf at its limits.nodes (2 of 2) -> rebooted, still unhealthy, held without --terminate-first-drift; with it deleted first, then refilled"
t_tf=$(now)
# Rebooted by the provisioner of 7 (budget 1 for Unhealthy; 1 of 2 unhealthy is within the
# 20 % guard, rounded up), long since.
tf_rebooted() { rebooted_event "$tf_a" && rebooted_at "$tf_a" >/dev/null; }
check "$tf_a rebooted first (a Rebooted event), the reboot recorded on its NodeClaim" tf_rebooted
reboot_wait_over "$tf_a"
tf_blocked() {
  k get events -A --field-selector reason=RepairBlocked -o json | jqe --arg a "$tf_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("^repair blocked: node condition KernelReady has been False for [0-9]+m.*but its static NodePool is at limits.nodes \\(2\\) and cannot launch a replacement first")))] | length > 0'
}
wait_for 60 tf_blocked
check "reboot's wait over, without --terminate-first-drift: a RepairBlocked event on $tf_a names limits.nodes (2)" tf_blocked
check "... $tf_a kept, not deleting" \
  bash -c "[[ -z \$(kubectl --kubeconfig $KUBECONFIG get nodeclaim $tf_a -o jsonpath='{.metadata.deletionTimestamp}') ]]"
# Every ~0.3 s: the pool's NodeClaims, how many are new (neither tf_a nor tf_b), and whether
# tf_a still exists.
tf_sample() {
  k get nodeclaims -l adze.sh/nodepool=tf -o json | jq -r --arg a "$tf_a" --arg b "$tf_b" \
    '"\(.items | length) \([.items[] | select(.metadata.name != $a and .metadata.name != $b)] | length) \([.items[] | select(.metadata.name == $a)] | length)"'
}
( while :; do s=$(tf_sample 2>/dev/null) && echo "$s"; sleep 0.3; done ) >>"$dir/tf.samples" &
samplers+=($!)
stop_provisioner
PROV_ARGS+=(--terminate-first-drift)
start_provisioner
t0=$(now)
wait_for 120 gone nodeclaim "$tf_a"
echo "restarted with --terminate-first-drift -> $tf_a's NodeClaim gone $(elapsed "$t0" "$(now)") s later"
check "with --terminate-first-drift: $tf_a's NodeClaim deleted" gone nodeclaim "$tf_a"
tf_event() {
  k get events -A --field-selector reason=Disrupting -o json | jqe --arg a "$tf_a" \
    '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $a
      and (.message | test("^delete node " + $a + " .*node condition KernelReady has been False for [0-9]+m.*repaired within the NodePool.s disruption budget for Unhealthy")))] | length > 0'
}
check "a Disrupting event on node $tf_a: deleted, nothing launched beside it (delete node ...), for KernelReady, within the budget for Unhealthy" tf_event
wait_for 120 count_is 2 ready_pods tf t
kill "${samplers[-1]}" 2>/dev/null
echo "$tf_a deleted first -> 2 pods Ready on 2 nodes again $(elapsed "$t0" "$(now)") s after the restart; 7c took $(elapsed "$t_tf" "$(now)") s"
check "refilled by the pool's scaler: 2 NodeClaims, 2 pods Ready, none on $tf_a" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pods -n tf -l app=t -o json | jq '[.items[] | select(.spec.nodeName == \"$tf_a\")] | length') == 0 && \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=tf -o name | wc -l) == 2 ]]"
check "the healthy node $tf_b is kept" k get nodeclaim "$tf_b"
read -r tf_n tf_max tf_early tf_with <<<"$(awk 'NF == 3 { n++; if ($1 > m) m = $1; if ($2 > 0 && $3 > 0) e++; if ($3 > 0) w++ } END { print n + 0, m + 0, e + 0, w + 0 }' "$dir/tf.samples")"
check "the pool never exceeded limits.nodes 2 (max $tf_max NodeClaims in $tf_n samples)" bash -c "[[ $tf_n -gt 10 && $tf_max -le 2 ]]"
check "no new NodeClaim of the pool existed while $tf_a did ($tf_early of $tf_n samples did)" test "$tf_early" -eq 0
# The gap between the delete and the refill can be shorter than one sample (the scaler runs
# every 2 s), so it is not asserted; the samples must start while $tf_a still existed.
check "... sampled from before the deletion ($tf_with samples with $tf_a)" test "$tf_with" -gt 0
prov_url=$(grep -o 'on http://[0-9.:]*' "$dir/provisioner.log" | tail -n 1 | sed 's/^on //')
check "adze_disruption_decisions_total{decision=delete,reason=Unhealthy,...} is 1 (the restarted provisioner's one repair, nothing launched first)" \
  bash -c "curl -fsS '$prov_url/metrics' | grep -E '^adze_disruption_decisions_total\\{decision=\"delete\",reason=\"Unhealthy\",[^}]*\} 1$' | wc -l | grep -qx 1"

check "provisioner still running" kill -0 "$prov_pid"
check "no panics in provisioner log" absent panicked "$dir/provisioner.log"
check "no hollow kubelet panicked or died of a Go runtime fatal error" bash -c "absent 'panic:|fatal error:' '$dir'/hollow/*/kubelet.log"
check "no hollow kubelet failed to start for a record" absent FAILED "$dir/hollow-watch.log"
rbac_audit
e2e_summary
