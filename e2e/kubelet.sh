#!/usr/bin/env bash
# End-to-end test with real kubelet code on the nodes: kubemark hollow nodes (the kubelet over a
# fake container runtime, e2e/harness/build-kubemark.sh) instead of Node objects written by the
# test. `adze-provisioner run --cloud-provider simulated --simulated-instance-dir DIR` launches
# an instance by writing its record; e2e/harness/hollow-node.sh boots a hollow kubelet for each
# record, authenticating with its own client certificate (system:node:NAME) under the Node
# authorizer and NodeRestriction, and stops it when the record goes. The node lifecycle
# controller runs (node-monitor-grace-period 20s) so a dead kubelet turns its Node NotReady.
# Skips unless ADZE_E2E=1.
#
#   ADZE_E2E=1 e2e/kubelet.sh
#
# 1. a pending pod provisioned end to end: NodeClaim -> record -> kubelet registers (providerID)
#    -> Ready -> pod bound and Running (reported by the kubelet); launch-to-Ready time, RSS and
#    CPU of a hollow node printed
# 2. the registered Node's allocatable (computed by the kubelet) equals the NodeClaim's
# 3. labels kubelet may not set: a pool's node-restriction.kubernetes.io label reaches the Node
#    through registration; a kubelet given it is refused by NodeRestriction (no Node at all);
#    a pool asking for another kubernetes.io label is refused at validation, naming the path
# 4. a node whose kubelet dies mid-drain: it goes NotReady, the drain stops waiting for its pods
#    a minute after their deletion time, the instance is terminated, no pod is lost
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. ADZE_KEEP=1
# keeps the logs dir.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
t_build=$(now)
"$harness/build-kubemark.sh" 2>"/tmp/adze-kubemark-build.$$.log" \
  || { cat "/tmp/adze-kubemark-build.$$.log"; echo "FAIL: kubemark build"; exit 1; }
rm -f "/tmp/adze-kubemark-build.$$.log"
echo "kubemark build step: $(elapsed "$t_build" "$(now)") s"
"$harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
bin=$target/release/adze-provisioner
crdgen=$target/release/crdgen

dir=$(mktemp -d /tmp/adze-kubelet.XXXXXX)
E2E_DIAG_LOGS="$dir/provisioner.log $dir/fleet.log"  # tailed by e2e_snapshot on a failure
instances=$dir/instances
prov_pid= fleet_pid= hold_pid=
cleanup() {
  [[ -n "$prov_pid" ]] && kill "$prov_pid" 2>/dev/null
  [[ -n "$fleet_pid" ]] && kill "$fleet_pid" 2>/dev/null
  [[ -n "$hold_pid" ]] && kill "$hold_pid" 2>/dev/null
  "$harness/hollow-node.sh" stop-all "$dir" >/dev/null 2>&1
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log"; fi
}
trap cleanup EXIT
# The node lifecycle controller on (the harness default leaves it off for Node objects nobody
# heartbeats); everything else as the other suites.
ADZE_NODE_LIFECYCLE=1 control_plane_up "$dir"
mkdir -p "$instances"

"$crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh crd/ec2nodeclasses.aws.adze.sh
check "CRDs installed and established" k get crd nodeclaims.adze.sh
adze_rbac simulated

KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bin" run --cloud-provider simulated \
  --simulated-instance-dir "$instances" --disruption-poll-period 2s --disruption-validation-period 5s \
  >>"$dir/provisioner.log" 2>&1 &
prov_pid=$!
"$harness/hollow-node.sh" watch "$dir" "$instances" >>"$dir/fleet.log" 2>&1 &
fleet_pid=$!
wait_for 30 grep -q "cluster state synced" "$dir/provisioner.log"
check "provisioner started with --simulated-instance-dir and synced its watches" grep -q "cluster state synced" "$dir/provisioner.log"

# nodepool NAME LABELS-FLOW-MAP [EXTRA-TEMPLATE-SPEC-LINE]
nodepool() {
  cat <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: $2}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: aws.adze.sh/instance-category, operator: In, values: [c, m, r]}
        - {key: aws.adze.sh/instance-generation, operator: Gt, values: ["4"]}
      ${3:-}
  disruption: {consolidateAfter: Never}
  limits: {cpu: "100"}
YAML
}
# deployment NS NAME REPLICAS POOL [EXTRA-POD-SPEC-LINE...]; $CONTAINER_EXTRA: a container line
deployment() {
  local ns=$1 name=$2 replicas=$3 pool=$4; shift 4
  local extra="" l; for l in "$@"; do extra+="      $l"$'\n'; done
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $name, namespace: $ns}
spec:
  replicas: $replicas
  selector: {matchLabels: {app: $name}}
  template:
    metadata: {labels: {app: $name}}
    spec:
      nodeSelector: {e2e-pool: $pool}
      tolerations: [{key: dedicated, operator: Equal, value: hollow, effect: NoSchedule}]
$extra      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: 250m, memory: 128Mi}}
          ${CONTAINER_EXTRA:-}
YAML
}
running_ready() { # NS APP: pods Running, Ready, not terminating
  k get pods -n "$1" -l app="$2" -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null)
    | select(.status.phase == "Running") | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
node_ready() { k get node "$1" -o json | jqe '.status.conditions[] | select(.type == "Ready") | .status == "True"'; }
# Quantities as numbers, so "2" == "2000m" and "7901Mi" == "8284798976".
qty() {
  python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", sys.argv[1])
units = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
print(round(float(m.group(1)) * units[m.group(2)], 3))' "$1"
}
export -f qty

# ---- 1. a pending pod, end to end through a real kubelet -------------------------------------
echo "== 1. pending pod -> NodeClaim -> hollow kubelet registers -> Ready -> pod Running"
k create namespace web >/dev/null
nodepool hollow '{e2e-pool: hollow, node-restriction.kubernetes.io/team: a}' \
  'taints: [{key: dedicated, value: hollow, effect: NoSchedule}]' | k apply -f - >/dev/null
t0=$(now)
deployment web web 1 hollow | k apply -f - >/dev/null
wait_for 60 bash -c "[[ -n \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=hollow -o name)\" ]]"
claim=$(k get nodeclaims -l adze.sh/nodepool=hollow -o jsonpath='{.items[0].metadata.name}')
check "a NodeClaim was created for the pending pod ($claim)" test -n "$claim"
wait_for 30 test -f "$instances/$claim.json"
check "the simulated cloud wrote the instance record, and created no Node itself" \
  bash -c "test -f '$instances/$claim.json' && absent 'simulated instance booted' '$dir/provisioner.log'"
t_launch=$(now)
wait_for 90 node_ready "$claim"
t_ready=$(now)
check "the hollow kubelet registered Node $claim and it turned Ready" node_ready "$claim"
launch_to_ready=$(elapsed "$t_launch" "$t_ready")
echo "instance record written -> Node Ready: $launch_to_ready s (pod created -> record: $(elapsed "$t0" "$t_launch") s)"
check "the Node was registered by a kubelet (v1.20.2, fake runtime), not by Adze" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $claim -o json | jqe '.status.nodeInfo.kubeletVersion == \"v1.20.2\" and (.status.nodeInfo.containerRuntimeVersion | startswith(\"fakeRuntime://\"))'"
pid_claim=$(k get nodeclaim "$claim" -o jsonpath='{.status.providerID}')
check "its providerID is the instance's ($pid_claim)" \
  bash -c "[[ \"\$(kubectl --kubeconfig $KUBECONFIG get node $claim -o jsonpath='{.spec.providerID}')\" == '$pid_claim' ]]"
wait_for 60 bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaim $claim -o json | jqe '.status.nodeName == \"$claim\" and any(.status.conditions[]; .type == \"Initialized\" and .status == \"True\")'"
check "the NodeClaim registered (providerID match) and initialized" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaim $claim -o json | jqe '.status.nodeName == \"$claim\" and any(.status.conditions[]; .type == \"Initialized\" and .status == \"True\")'"
check "the kubelet registered with the pool's taint (--register-with-taints)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $claim -o json | jqe 'any(.spec.taints[]?; .key == \"dedicated\" and .value == \"hollow\")'"
wait_for 60 count_is 1 running_ready web web
t_running=$(now)
check "the pod is bound to $claim and Running/Ready as its kubelet reports" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get pods -n web -l app=web -o json | jqe '.items[0] | .spec.nodeName == \"$claim\" and .status.phase == \"Running\" and (.status.containerStatuses[0].state.running != null)'"
echo "pod created -> Running on a hollow node: $(elapsed "$t0" "$t_running") s"
# Cost of one hollow node: RSS and CPU share over 10 s of steady state.
s1=$("$harness/hollow-node.sh" stats "$dir" "$claim" 2>/dev/null); sleep 10
s2=$("$harness/hollow-node.sh" stats "$dir" "$claim" 2>/dev/null)
rss_mb=$(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' <<<"$s2" | awk '{printf "%.0f", $1/1024}')
cpu_pct=$(awk -v a="${s1##*cpu_s=}" -v b="${s2##*cpu_s=}" 'BEGIN{printf "%.2f", (b-a)*10}')
echo "hollow node cost: RSS $rss_mb MB, CPU $cpu_pct % of a core (10 s steady state; launch -> Ready $launch_to_ready s)"
check "the hollow node's resource use was measured" test -n "$rss_mb"

# ---- 2. allocatable: the kubelet's arithmetic equals the planner's ----------------------------
echo "== 2. Node allocatable (kubelet) == NodeClaim allocatable (Adze's plan)"
node_json=$(k get node "$claim" -o json); claim_json=$(k get nodeclaim "$claim" -o json)
itype=$(jq -r '.metadata.labels["node.kubernetes.io/instance-type"]' <<<"$claim_json")
for field in capacity allocatable; do
  for r in cpu memory ephemeral-storage pods; do
    nv=$(jq -r --arg r "$r" --arg f "$field" '.status[$f][$r] // ""' <<<"$node_json")
    cv=$(jq -r --arg r "$r" --arg f "$field" '.status[$f][$r] // ""' <<<"$claim_json")
    echo "  $itype $field $r: node $nv, nodeclaim $cv"
    check "$field $r of the registered node equals what Adze planned ($itype: $cv)" \
      bash -c "[[ -n '$nv' && -n '$cv' && \"\$(qty '$nv')\" == \"\$(qty '$cv')\" ]]"
  done
done
rec_args=$(tr '\n' ' ' <"$dir/hollow/$claim/args")
echo "  kubelet flags from the record: $rec_args"

# ---- 3. labels kubelet may not set -----------------------------------------------------------
echo "== 3. labels the kubelet / NodeRestriction refuse"
check "the pool's node-restriction.kubernetes.io/team label is on the Node (set at registration)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $claim -o json | jqe '.metadata.labels[\"node-restriction.kubernetes.io/team\"] == \"a\"'"
check "... and was not passed to the kubelet (user data leaves it out)" absent node-restriction "$dir/hollow/$claim/args"
for label in node-restriction.kubernetes.io/team=a node-role.kubernetes.io/worker=; do
  rogue=rogue-$(tr -dc a-z </dev/urandom | head -c 5)
  "$harness/hollow-node.sh" start "$dir" "$rogue" --labels "$label" >/dev/null 2>&1
  check "a kubelet given --node-labels $label refuses to start, as kubelet and e2e/emulation do (no Node $rogue)" \
    bash -c "grep -q \"unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \[${label%%=*}\]\" '$dir/hollow/$rogue/kubelet.log' && ! kubectl --kubeconfig $KUBECONFIG get node $rogue 2>/dev/null"
done
# NodeRestriction: with its own credentials, a node may not give itself such a label either.
node_kc=$dir/hollow/$claim/kubeconfig
kubectl --kubeconfig "$node_kc" label node "$claim" node-restriction.kubernetes.io/team=b --overwrite >"$dir/self-label.out" 2>&1
check "NodeRestriction refuses the node relabelling itself node-restriction.kubernetes.io/team" \
  grep -q "is not allowed to modify labels: node-restriction.kubernetes.io/team" "$dir/self-label.out"
kubectl --kubeconfig "$node_kc" label node "$claim" e2e-self=yes >/dev/null 2>&1
check "... while the same node may set a label outside the restricted domains (the credentials work)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $claim -o json | jqe '.metadata.labels[\"e2e-self\"] == \"yes\"'"
k create namespace badlabel >/dev/null
nodepool badlabel '{e2e-pool: badlabel, node-role.kubernetes.io/worker: "yes"}' | k apply -f - >/dev/null
deployment badlabel b 1 badlabel | k apply -f - >/dev/null
wait_for 30 bash -c "kubectl --kubeconfig $KUBECONFIG get nodepool badlabel -o json | jqe 'any(.status.conditions[]?; .type == \"ValidationSucceeded\" and .status == \"False\")'"
k get nodepool badlabel -o json | jq -r '.status.conditions[]? | select(.type == "ValidationSucceeded") | .message' >"$dir/badlabel.msg"
echo "  NodePool badlabel: $(cat "$dir/badlabel.msg")"
check "a pool asking for node-role.kubernetes.io/worker is refused at validation, naming the field path" \
  bash -c "grep -qF 'spec.template.metadata.labels[node-role.kubernetes.io/worker]' '$dir/badlabel.msg' && grep -q restricted '$dir/badlabel.msg'"
sleep 5
check "... and nothing is launched for it (no NodeClaim, its pod Pending)" \
  bash -c "[[ -z \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=badlabel -o name)\" ]] && kubectl --kubeconfig $KUBECONFIG get pods -n badlabel -o json | jqe '.items[0].status.phase == \"Pending\"'"

# ---- 4. the kubelet dies mid-drain -------------------------------------------------------------
echo "== 4. NodeClaim deleted; its kubelet killed while the drain waits on a preStop hook"
# A preStop hook the kubelet calls over HTTP and that never answers: the pods stay terminating
# (for their 20 s grace) while the kubelet lives, so the drain is visibly in progress.
hold_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        sys.stderr.write("hold: %s\n" % self.path)
        sys.stderr.flush()
        time.sleep(600)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$hold_port" 2>>"$dir/hold.log" &
hold_pid=$!
k create namespace drain >/dev/null
nodepool drain '{e2e-pool: drain}' 'taints: [{key: dedicated, value: hollow, effect: NoSchedule}]' | k apply -f - >/dev/null
CONTAINER_EXTRA="lifecycle: {preStop: {httpGet: {host: 127.0.0.1, port: $hold_port, path: /hold}}}" \
  deployment drain slow 2 drain "terminationGracePeriodSeconds: 20" | k apply -f - >/dev/null
wait_for 120 count_is 2 running_ready drain slow
check "2 pods with a preStop hook Running on a hollow node" count_is 2 running_ready drain slow
victim=$(k get pods -n drain -l app=slow -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .spec.nodeName] | unique | if length == 1 then .[0] else "" end')
check "the 2 pods with the hook run together on one node ($victim)" test -n "$victim"
before=$(k get pods -n drain -l app=slow -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name] | sort | join(" ")')
t0=$(now)
k delete nodeclaim "$victim" --wait=false >/dev/null
wait_for 30 grep -q "hold:" "$dir/hold.log"
check "the drain evicted the pods and the kubelet is running their preStop hook" grep -q "hold:" "$dir/hold.log"
check "the pods are terminating, not gone (the drain is in progress)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get pods -n drain -o json | jqe '[.items[] | select(.spec.nodeName == \"$victim\" and .metadata.deletionTimestamp != null)] | length == 2'"
"$harness/hollow-node.sh" stop "$dir" "$victim" --kill >/dev/null
t_kill=$(now)
echo "killed the kubelet of $victim $(elapsed "$t0" "$t_kill") s after deleting its NodeClaim"
wait_for 60 bash -c "! kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.status.conditions[] | select(.type == \"Ready\") | .status == \"True\"'"
check "the Node went NotReady (node lifecycle controller, grace 20 s): $(elapsed "$t_kill" "$(now)") s" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.status.conditions[] | select(.type == \"Ready\") | .status != \"True\"' || ! kubectl --kubeconfig $KUBECONFIG get node $victim"
wait_for 240 bash -c "! kubectl --kubeconfig $KUBECONFIG get nodeclaim $victim"
t_done=$(now)
check "the provisioner still finished: NodeClaim $victim released ($(elapsed "$t0" "$t_done") s after deletion)" bash -c "! kubectl --kubeconfig $KUBECONFIG get nodeclaim $victim"
check "it said why it stopped waiting (StuckTerminatingPods)" grep -q "stuck terminating\|terminating over" "$dir/provisioner.log"
check "the instance was terminated (its record removed)" test ! -e "$instances/$victim.json"
wait_for 60 bash -c "! kubectl --kubeconfig $KUBECONFIG get node $victim"
check "the Node $victim is gone" bash -c "! kubectl --kubeconfig $KUBECONFIG get node $victim"
wait_for 120 count_is 2 running_ready drain slow
check "no pod lost: 2 replicas Running/Ready on a replacement node" \
  bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pods -n drain -l app=slow -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null and .status.phase == \"Running\" and .spec.nodeName != \"$victim\")] | length') == 2 ]]"
after=$(k get pods -n drain -l app=slow -o json | jq -r '[.items[] | .metadata.name] | sort | join(" ")')
echo "  pods before: $before; after: $after"
wait_for 90 bash -c "[[ -z \"\$(kubectl --kubeconfig $KUBECONFIG get pods -n drain -o json | jq -r '.items[] | select(.spec.nodeName == \"$victim\") | .metadata.name')\" ]]"
check "the stuck pods were cleaned up with their Node (pod GC)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get pods -n drain -o json | jqe '[.items[] | select(.spec.nodeName == \"$victim\")] | length == 0'"

# ---- 5. one node starting 100 pods at once ---------------------------------------------------
# Kubemark 1.20's fake OS layer wrote a map from every pod worker unguarded: a node starting
# several pods at once could die of "fatal error: concurrent map writes" (seen in e2e/run.sh).
# The harness's kubemark patch locks it. The race is timing-dependent: an unpatched kubemark
# survived three idle rounds of this burst too (it died in 1 of ~10 loaded run.sh runs), so
# this shows a node absorbing a burst, not the lock itself; the lock is right by construction.
echo "== 5. a hollow node starting 100 pods at once stays up"
"$harness/hollow-node.sh" start "$dir" burst-node --cpu 64 --memory 256Gi --max-pods 110 \
  --labels e2e-pool=burst --taints dedicated=hollow:NoSchedule >/dev/null
wait_for 60 node_ready burst-node
check "node burst-node (64 cpu, max 110 pods) registered and Ready" node_ready burst-node
k create namespace burst >/dev/null
deployment burst many 100 burst | k apply -f - >/dev/null
wait_for 180 count_is 100 running_ready burst many
check "100 pods started at once Running and Ready on burst-node" count_is 100 running_ready burst many
check "... and its kubelet is still up, no Go fatal error in its log" \
  bash -c "'$harness/hollow-node.sh' stats '$dir' burst-node >/dev/null && absent 'panic:|fatal error:' '$dir/hollow/burst-node/kubelet.log'"
k delete namespace burst --wait=false >/dev/null

check "provisioner still running" kill -0 "$prov_pid"
check "no panics in the provisioner log" absent panicked "$dir/provisioner.log"
check "no hollow kubelet panicked or died of a Go runtime fatal error" bash -c "absent 'panic:|fatal error:' '$dir'/hollow/*/kubelet.log"
rbac_audit
e2e_summary
