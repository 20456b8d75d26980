#!/usr/bin/env bash
# End-to-end test of the node agent (adze-agent) against a real Kubernetes 1.20 control plane
# (e2e/harness): nodes played by kubemark hollow kubelets (real kubelet code over a fake
# container runtime, each with its own system:node:NAME certificate) that e2e/harness/
# hollow-node.sh boots for every instance record `adze-provisioner run --cloud-provider
# simulated --simulated-instance-dir DIR` writes, with the node lifecycle controller on; one
# agent process per node (under the chart's agent ServiceAccount), each on its own IMDS
# simulator (imds-sim), and the provisioner polling a real SQS interruption queue on moto
# (aws/ci/moto-server.sh). Evictions are carried out by the kubelets (grace periods apply), so
# the drain and replacement times it prints include a real node's boot. Skips unless ADZE_E2E=1.
#
#   ADZE_E2E=1 e2e/agent.sh
#
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. Everything it
# starts is stopped in an EXIT trap; ADZE_KEEP=1 keeps the logs dir.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
DEADLINE=${ADZE_E2E_SPOT_DEADLINE:-120}

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-kubemark.sh" 2>"/tmp/adze-kubemark-build.$$.log" \
  || { cat "/tmp/adze-kubemark-build.$$.log"; echo "FAIL: kubemark build"; exit 1; }
rm -f "/tmp/adze-kubemark-build.$$.log"
"$root/e2e/harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
bin=$target/release

dir=$(mktemp -d /tmp/adze-e2e-agent.XXXXXX)
E2E_DIAG_LOGS="$dir/provisioner.log $dir/fleet.log"  # tailed by e2e_snapshot on a failure
instances=$dir/instances
pids=()
prov_pid=
fleet_pid=
MOTO_PID=
cleanup() {
  # -CONT first: a stopped process (section 8's hung agent) would hold a SIGTERM pending forever.
  for p in "${pids[@]}" $prov_pid $MOTO_PID; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  [[ -n "${sampler:-}" ]] && kill "$sampler" 2>/dev/null
  # The watcher first, so it starts no kubelet for a record; then every hollow node it started.
  [[ -n "$fleet_pid" ]] && kill "$fleet_pid" 2>/dev/null && wait "$fleet_pid" 2>/dev/null
  "$harness/hollow-node.sh" stop-all "$dir" >/dev/null 2>&1
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log" "$dir.scheduler.yaml"; fi
}
trap cleanup EXIT
# kube-scheduler 1.20 given --config ignores --port=0 and binds 0.0.0.0:10251, which collides
# with any other control plane on the machine; a config naming a free loopback port does not.
sched_cfg="$dir.scheduler.yaml"
insecure_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$sched_cfg" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
healthzBindAddress: 127.0.0.1:$insecure_port
metricsBindAddress: 127.0.0.1:$insecure_port
YAML
export ADZE_SCHEDULER_CONFIG="${ADZE_SCHEDULER_CONFIG:-$sched_cfg}"
# The node lifecycle controller on (the harness default leaves it off for Node objects nobody
# heartbeats), as in e2e/kubelet.sh: a kubelet that stops turns its Node NotReady.
ADZE_NODE_LIFECYCLE=1 control_plane_up "$dir"
mkdir -p "$instances"
claims() { k get nodeclaims -o name 2>/dev/null | wc -l; }
ready_web() {
  k get pods -n web -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null and .status.phase == "Running"
    and any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
pods_on() { # node: web pods still on it (terminating included)
  count k get pods -n web --field-selector "spec.nodeName=$1" -o name
}
has_taint() { k get node "$1" -o json | jqe --arg k "$2" 'any(.spec.taints[]?; .key == $k)' >/dev/null; }
agent_ready() { k get node "$1" -o json | jqe 'any(.status.conditions[]?; .type == "AdzeAgentReady" and .status == "True")' >/dev/null; }
agent_not_ready() { k get node "$1" -o json | jqe 'any(.status.conditions[]?; .type == "AdzeAgentReady" and .status == "False")' >/dev/null; }
sim() { curl -sf -X POST "http://127.0.0.1:${port[$1]}/_sim/$2" -d "${3:-{\}}"; }
imds_stat() { curl -sf "http://127.0.0.1:${port[$1]}/_sim/stats" | jq -r ".$2"; } # node field

# The SQS path: EventBridge would deliver interruption events to this queue; here the test does.
. "$root/aws/ci/moto-server.sh"
moto_start "$dir/moto.log" || { echo "FAIL: moto"; exit 1; }
sqs() { # create NAME | send URL BODY | depth URL (visible + in flight)
  "$MOTO_PYTHON" - "$@" <<'PY'
import os, sys, boto3
c = boto3.client("sqs", endpoint_url=os.environ["ADZE_AWS_ENDPOINT"], region_name="us-east-1")
op, arg = sys.argv[1], sys.argv[2]
if op == "create":
    # A short visibility timeout: a message whose NodeClaim update lost a race comes back soon.
    print(c.create_queue(QueueName=arg, Attributes={"VisibilityTimeout": "5"})["QueueUrl"])
elif op == "send":
    c.send_message(QueueUrl=arg, MessageBody=sys.argv[3])
elif op == "depth":
    a = c.get_queue_attributes(QueueUrl=arg, AttributeNames=["All"])["Attributes"]
    print(int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"]))
PY
}
queue=$(sqs create adze-interruptions)
check "SQS interruption queue created on moto" test -n "$queue"

"$bin/crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh
adze_rbac simulated
# Consolidation is proven in e2e/disruption.sh; here it would add replacement NodeClaims
# the checks below count, so this suite runs it as a dry run (decisions logged, not acted on).
KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bin/adze-provisioner" run --disruption-dry-run --cloud-provider simulated \
  --simulated-instance-dir "$instances" --metrics-addr 127.0.0.1:0 \
  --interruption-queue adze-interruptions --aws-endpoint "$ADZE_AWS_ENDPOINT" --region us-east-1 >>"$dir/provisioner.log" 2>&1 &
prov_pid=$!
# One hollow kubelet per instance record, stopped when the record goes (instance terminated).
"$harness/hollow-node.sh" watch "$dir" "$instances" >>"$dir/fleet.log" 2>&1 &
fleet_pid=$!
wait_for 30 grep -q "polling the interruption queue" "$dir/provisioner.log"
check "provisioner started" grep -q "cluster state synced" "$dir/provisioner.log"
check "provisioner polls the SQS queue with the simulated cloud" grep -q "polling the interruption queue" "$dir/provisioner.log"

# Two-vCPU nodes and 800m pods: two pods per node, so six replicas make three nodes.
k apply -f - >/dev/null <<'YAML'
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    metadata: {labels: {e2e-pool: spot}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: aws.adze.sh/instance-category, operator: In, values: [c, m]}
        - {key: aws.adze.sh/instance-size, operator: In, values: [large]}
  limits: {cpu: "100"}
YAML
k create namespace web >/dev/null
t_deploy=$(now)
k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {e2e-pool: spot}
      terminationGracePeriodSeconds: 5
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: 800m, memory: 256Mi}}
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: web, namespace: web}
spec:
  minAvailable: 5
  selector: {matchLabels: {app: web}}
YAML
wait_for 300 count_is 6 ready_web
echo "deployment created -> 6 pods Ready on hollow nodes: $(elapsed "$t_deploy" "$(now)") s"
check "6 web pods Running and Ready" count_is 6 ready_web
mapfile -t nodes < <(k get nodes -l e2e-pool=spot -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
echo "hollow nodes: ${nodes[*]}"
check "several nodes (${#nodes[@]})" test "${#nodes[@]}" -ge 3
by_kubelets() { # every spot Node was registered by a kubelet (v1.20.2 over kubemark's fake
  # runtime) from an instance record, and the simulated cloud created no Node itself
  local n; n=$(k get nodes -l e2e-pool=spot -o json | jq '[.items[] | select(.status.nodeInfo.kubeletVersion == "v1.20.2"
    and (.status.nodeInfo.containerRuntimeVersion | startswith("fakeRuntime://")))] | length')
  [[ "$n" == "${#nodes[@]}" ]] || return 1
  for n in "${nodes[@]}"; do [[ -f "$instances/$n.json" ]] || return 1; done
  absent 'simulated instance booted' "$dir/provisioner.log"
}
check "every node was registered by a hollow kubelet from its instance record" by_kubelets

# One IMDS simulator and one agent per node. The agent's readiness also checks its node's
# container runtime socket, as the DaemonSet's does: the hollow kubelet's fake runtime. (Not
# --kubelet-healthz: a hollow kubelet serves no /healthz, see e2e/harness/hollow-node.sh.)
declare -A port agent_pid hport
start_agent() { # node
  [[ -n "${hport[$1]:-}" ]] || hport[$1]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin/adze-agent" --node-name "$1" --kubeconfig "$AGENT_KUBECONFIG" \
    --imds-endpoint "http://127.0.0.1:${port[$1]}" --imds-timeout 500ms --heartbeat 5s \
    --runtime-socket "$dir/hollow/$1/runtime.sock" \
    --health-addr "127.0.0.1:${hport[$1]}" \
    >>"$dir/agent-$1.log" 2>&1 &
  agent_pid[$1]=$!; pids+=("$!")
}
attach() { # node: its own IMDS simulator, then its agent
  "$bin/imds-sim" --port-file "$dir/imds-$1.port" >"$dir/imds-$1.log" 2>&1 &
  pids+=("$!")
  wait_for 10 test -s "$dir/imds-$1.port"
  port[$1]=$(cat "$dir/imds-$1.port")
  start_agent "$1"
}
# A node with web pods and no agent yet.
fresh_node() {
  for n in $(k get nodes -l e2e-pool=spot -o jsonpath='{.items[*].metadata.name}'); do
    [[ -z "${port[$n]:-}" && "$(pods_on "$n")" -gt 0 ]] && { echo "$n"; return; }
  done
}
for n in "${nodes[@]}"; do attach "$n"; done
ok=1; for n in "${nodes[@]}"; do wait_for 60 agent_ready "$n" || ok=0; done
check "every node reports AdzeAgentReady=True" test "$ok" = 1
first=${nodes[0]}
check "agent /healthz answers ok (the DaemonSet's liveness probe)" bash -c "curl -sf http://127.0.0.1:${hport[$first]}/healthz | grep -qx ok"
agent_metrics=$(curl -sf "http://127.0.0.1:${hport[$first]}/metrics")
metrics_ok() { grep -Eq '^adze_agent_imds_polls_total [1-9]' <<<"$agent_metrics" && grep -qx 'adze_agent_ready 1' <<<"$agent_metrics"; }
check "agent /metrics: IMDS polls counted, ready gauge 1" metrics_ok

# ---- 1. spot notice with a 2-minute deadline --------------------------------------------
victim=$(k get pods -n web -o jsonpath='{.items[0].spec.nodeName}')
on_victim=$(pods_on "$victim")
c0=$(claims)
echo "== spot notice on $victim ($on_victim web pods), deadline ${DEADLINE}s"
( while true; do echo "$(ready_web)"; sleep 0.5; done >"$dir/pdb-samples" ) &
sampler=$!
t0=$(now)
sim "$victim" spot "{\"deadline_seconds\": $DEADLINE}" >/dev/null
wait_for 30 has_taint "$victim" adze.sh/interrupted; t_taint=$(now)
# The session token expires mid-drain: the agent must fetch a new one and drain on.
tokens0=$(imds_stat "$victim" token_requests); unauth0=$(imds_stat "$victim" unauthorized)
echo "tokens expired with $(pods_on "$victim") web pods still on $victim"
sim "$victim" expire-tokens >/dev/null
wait_for 60 bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt $c0 ]"; t_claim=$(now)
new_node_ready() { # a spot Node not in the first set, Ready (its kubelet says so)
  k get nodes -l e2e-pool=spot -o json | jqe --arg old " ${nodes[*]} " '[.items[] | select(.metadata.name as $n | $old | contains(" " + $n + " ") | not)
    | select(any(.status.conditions[]; .type == "Ready" and .status == "True"))] | length > 0' >/dev/null; }
wait_for 180 new_node_ready; t_node=$(now)
wait_for "$DEADLINE" count_is 0 pods_on "$victim"; t_gone=$(now)
wait_for 120 count_is 6 ready_web; t_moved=$(now)
echo "notice -> taint: $(elapsed "$t0" "$t_taint") s; -> replacement NodeClaim: $(elapsed "$t0" "$t_claim") s; -> replacement Node Ready (hollow kubelet): $(elapsed "$t0" "$t_node") s; -> last pod gone (node drained): $(elapsed "$t0" "$t_gone") s; -> 6 pods Ready again (pods moved): $(elapsed "$t0" "$t_moved") s"
check "node tainted adze.sh/interrupted:NoSchedule within 5 s" awk -v a="$t0" -v b="$t_taint" 'BEGIN{exit !(b-a <= 5)}'
check "node cordoned" bash -c "kubectl --kubeconfig $KUBECONFIG get node $victim -o json | jqe '.spec.unschedulable == true' >/dev/null"
check "its NodeClaim is Interrupted=True (SpotInterruption, deadline in the message)" bash -c \
  "kubectl --kubeconfig $KUBECONFIG get nodeclaims -o json | jqe --arg p \"\$(kubectl --kubeconfig $KUBECONFIG get node $victim -o jsonpath='{.spec.providerID}')\" \
   'any(.items[] | select(.status.providerID == \$p) | .status.conditions[]; .type == \"Interrupted\" and .status == \"True\" and .reason == \"SpotInterruption\" and (.message | test(\"T[0-9:]+Z\")))' >/dev/null"
check "replacement NodeClaim created within 15 s of the notice" awk -v a="$t0" -v b="$t_claim" 'BEGIN{exit !(b-a <= 15)}'
check "every pod left $victim before the deadline" awk -v a="$t0" -v b="$t_gone" -v d="$DEADLINE" 'BEGIN{exit !(b-a < d)}'
tokens1=$(imds_stat "$victim" token_requests); unauth1=$(imds_stat "$victim" unauthorized)
echo "IMDS on $victim during the drain: token requests $tokens0 -> $tokens1, 401s $unauth0 -> $unauth1"
check "token expired mid-drain: a 401, then a new token" test "$unauth1" -gt "$unauth0" -a "$tokens1" -gt "$tokens0"
wait_for 120 count_is 6 ready_web
kill "$sampler" 2>/dev/null; sampler=
check "all 6 pods Running and Ready again, none on $victim" count_is 0 pods_on "$victim"
check "6 pods Ready after the drain" count_is 6 ready_web
min_ready=$(sort -n "$dir/pdb-samples" | head -1)
echo "PDB minAvailable 5: lowest Ready count sampled during the drain: $min_ready ($(wc -l <"$dir/pdb-samples") samples)"
check "PDB respected (never fewer than 5 Ready)" test "$min_ready" -ge 5
sleep 3
check "exactly one replacement NodeClaim ($((c0+1)))" count_is "$((c0+1))" claims
check "the notice was acted on once" count_is 1 grep -c "notice: tainting" "$dir/agent-$victim.log"
check "evictions emptied the node ($(grep -c 'evicted' "$dir/agent-$victim.log") logged; the agent has no pod delete)" grep -q 'evicted' "$dir/agent-$victim.log"

# ---- 2. agent killed mid-drain, token expired, then restarted ---------------------------
second=""
for n in "${nodes[@]}"; do [[ "$n" != "$victim" && "$(pods_on "$n")" -gt 0 ]] && { second=$n; break; }; done
echo "== agent on $second killed mid-drain and restarted"
c1=$(claims)
sim "$second" spot "{\"deadline_seconds\": $DEADLINE}" >/dev/null
wait_for 30 has_taint "$second" adze.sh/interrupted
kill -9 "${agent_pid[$second]}"; wait "${agent_pid[$second]}" 2>/dev/null
left=$(pods_on "$second")
echo "killed the agent right after it tainted $second; $left web pods still there"
sim "$second" expire-tokens >/dev/null
sleep 2
start_agent "$second"
wait_for "$DEADLINE" count_is 0 pods_on "$second"
check "restarted agent resumed the drain recorded on the node" grep -q "resuming drain" "$dir/agent-$second.log"
check "every pod left $second" count_is 0 pods_on "$second"
check "the restarted agent did not act on the notice again" count_is 1 grep -c "notice: tainting" "$dir/agent-$second.log"
wait_for 180 count_is 6 ready_web
check "6 pods Ready after the second drain" count_is 6 ready_web
check "one replacement for the second node too ($((c1+1)) NodeClaims)" count_is "$((c1+1))" claims

# ---- 3. IMDS returns 503 for a full minute: readiness false, agent survives, recovers ----
third=""
for n in "${nodes[@]}"; do [[ "$n" != "$victim" && "$n" != "$second" ]] && { third=$n; break; }; done
OUTAGE=${ADZE_E2E_IMDS_OUTAGE:-60}
echo "== IMDS on $third returns 503 for ${OUTAGE} s"
pid_before=${agent_pid[$third]}
faulted0=$(imds_stat "$third" faulted)
t0=$(now)
sim "$third" fault "{\"kind\": \"unavailable\", \"seconds\": $OUTAGE}" >/dev/null
wait_for 15 agent_not_ready "$third"
echo "IMDS 503 -> AdzeAgentReady=False after $(elapsed "$t0" "$(now)") s"
check "readiness turns false while IMDS fails" agent_not_ready "$third"
# Sample through the outage: the agent stays up and keeps reporting not ready.
alive=1; stayed=1
while awk -v a="$t0" -v b="$(now)" -v d="$OUTAGE" 'BEGIN{exit !(b-a < d-3)}'; do
  kill -0 "$pid_before" 2>/dev/null || alive=0
  agent_ready "$third" && stayed=0
  sleep 2
done
check "agent process up through the ${OUTAGE} s outage (pid $pid_before)" test "$alive" = 1
check "readiness stayed false through the outage" test "$stayed" = 1
wait_for 60 agent_ready "$third"
echo "IMDS 503 for ${OUTAGE} s -> AdzeAgentReady=True again $(elapsed "$t0" "$(now)") s after the fault began"
check "readiness recovers once IMDS is back" agent_ready "$third"
check "no crash loop: same agent process, started once" bash -c "kill -0 $pid_before && [ ${agent_pid[$third]} = $pid_before ] && [ \$(grep -c 'adze-agent starting' $dir/agent-$third.log) = 1 ]"
faulted1=$(imds_stat "$third" faulted)
echo "IMDS requests answered 503 during the outage: $((faulted1 - faulted0))"
check "the agent kept polling (with backoff) through the outage" test "$((faulted1 - faulted0))" -ge 5
check "node not cordoned by an IMDS outage" bash -c "kubectl --kubeconfig $KUBECONFIG get node $third -o json | jqe '.spec.unschedulable != true' >/dev/null"

# ---- 4. footprint of an idle agent (polling every second) ------------------------------
echo "== footprint of the idle agent on $third over 30 s"
fp=$("$root/agent/scripts/footprint.sh" "${agent_pid[$third]}" 30)
echo "adze-agent footprint: $fp"
rss=$(sed -E 's/.*rss_kib=([0-9]+).*/\1/' <<<"$fp")
check "agent RSS under 20 MiB ($rss KiB)" test "$rss" -lt 20480

# ---- 5. the same interruption also arriving through SQS -----------------------------------
# The EventBridge "EC2 Spot Instance Interruption Warning" for the node's instance goes to the
# real queue the provisioner polls while the node's IMDS raises the notice: one replacement, the
# notice handled once by the agent, no pod lost, the message deleted.
echo "== a malformed message on the interruption queue"
sqs send "$queue" 'not an EventBridge event'
wait_for 30 grep -q "dropping malformed interruption message" "$dir/provisioner.log"
check "malformed message dropped and logged" grep -q "dropping malformed interruption message" "$dir/provisioner.log"
wait_for 30 count_is 0 sqs depth "$queue"
check "malformed message deleted from the queue" count_is 0 sqs depth "$queue"
malformed_metric() {
  local url; url=$(grep -o 'on http://[0-9.:]*' "$dir/provisioner.log" | tail -n 1 | sed 's/^on //')
  # whole body first: grep -q closing the pipe early fails curl under pipefail
  local body; body=$(curl -fsS "$url/metrics") && grep -qx 'adze_interruption_messages_total{result="malformed"} 1' <<<"$body"; }
wait_for 10 malformed_metric
check "/metrics counts it: adze_interruption_messages_total{result=\"malformed\"} 1" malformed_metric
c2=$(claims)
pid3=$(k get node "$third" -o jsonpath='{.spec.providerID}')
instance3=${pid3##*/}
echo "== interruption of $third (providerID $pid3) through SQS and IMDS at once"
event=$(jq -nc --arg id "$instance3" --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{version: "0", id: "e2e-spot-1",
  "detail-type": "EC2 Spot Instance Interruption Warning", source: "aws.ec2", account: "123456789012", time: $t,
  region: "us-east-1", resources: ["arn:aws:ec2:us-east-1:123456789012:instance/" + $id],
  detail: {"instance-id": $id, "instance-action": "terminate"}}')
t0=$(now)
sqs send "$queue" "$event" &
sender=$!
sim "$third" spot "{\"deadline_seconds\": $DEADLINE}" >/dev/null
wait "$sender"
wait_for 60 grep -q "marked NodeClaim interrupted.*$instance3" "$dir/provisioner.log"
check "the SQS loop survived the malformed message and marked $third's NodeClaim" grep -q "marked NodeClaim interrupted.*$instance3" "$dir/provisioner.log"
wait_for 30 count_is 0 sqs depth "$queue"
check "the interruption message was deleted from the queue" count_is 0 sqs depth "$queue"
wait_for "$DEADLINE" count_is 0 pods_on "$third"; t_gone=$(now)
check "every pod left $third" count_is 0 pods_on "$third"
wait_for 180 count_is 6 ready_web; t_moved=$(now)
echo "SQS + IMDS notice -> last pod gone from $third (node drained): $(elapsed "$t0" "$t_gone") s; -> 6 pods Ready again (pods moved): $(elapsed "$t0" "$t_moved") s"
check "no pod lost: 6 Ready" count_is 6 ready_web
sleep 3
check "exactly one replacement for the doubly reported interruption ($((c2+1)) NodeClaims)" count_is "$((c2+1))" claims
check "the agent acted on the notice once" count_is 1 grep -c "notice: tainting" "$dir/agent-$third.log"

# ---- 6. scheduled maintenance: drain before NotBefore, canceled -> uncordon ---------------
maint=$(fresh_node)
if [[ -n "$maint" ]]; then
  echo "== scheduled maintenance on $maint (NotBefore in 5 min, inside the 10 min lead), then canceled"
  # The startup taint a NodePool would put on new nodes, lifted by the agent once healthy.
  k taint node "$maint" adze.sh/agent-not-ready=:NoSchedule >/dev/null
  attach "$maint"
  wait_for 60 agent_ready "$maint"
  wait_for 15 bash -c "! kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe 'any(.spec.taints[]?; .key == \"adze.sh/agent-not-ready\")' >/dev/null"
  check "healthy agent removes the startup taint adze.sh/agent-not-ready" bash -c "! kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe 'any(.spec.taints[]?; .key == \"adze.sh/agent-not-ready\")' >/dev/null"
  sim "$maint" maintenance '{"event_id": "instance-event-e2e", "state": "active", "not_before_seconds": 300}' >/dev/null
  wait_for 30 bash -c "kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe '.spec.unschedulable == true' >/dev/null"
  check "maintenance within the lead cordons the node" bash -c "kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe '.spec.unschedulable == true' >/dev/null"
  check "maintenance does not mark the node interrupted" bash -c "! kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe 'any(.spec.taints[]?; .key == \"adze.sh/interrupted\")' >/dev/null"
  wait_for 180 count_is 0 pods_on "$maint"
  check "maintenance drains the node" count_is 0 pods_on "$maint"
  sim "$maint" maintenance '{"event_id": "instance-event-e2e", "state": "canceled", "not_before_seconds": 300}' >/dev/null
  wait_for 30 bash -c "kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe '.spec.unschedulable != true' >/dev/null"
  check "canceled maintenance uncordons the node" bash -c "kubectl --kubeconfig $KUBECONFIG get node $maint -o json | jqe '.spec.unschedulable != true' >/dev/null"
  wait_for 180 count_is 6 ready_web
  check "6 pods Ready after the maintenance drain" count_is 6 ready_web
else
  fail "no replacement node with web pods for the maintenance scenario"
fi

# ---- 7. a PDB that never allows an eviction: the agent evicts, never deletes ---------------
# The agent has no pod delete (issue 25): a pod its PDB still holds at the deadline stops with
# the instance. Here the simulated instance outlives the deadline, so the pods stay, the agent
# keeps asking, and once the PDB allows it the evictions go through.
last=$(fresh_node)
if [[ -n "$last" ]]; then
  attach "$last"
  wait_for 60 agent_ready "$last"
  short=25
  before=$(pods_on "$last")
  echo "== PDB blocks every eviction (minAvailable 6); spot notice on $last ($before web pods) with a ${short}s deadline"
  k patch pdb -n web web --type merge -p '{"spec": {"minAvailable": 6}}' >/dev/null
  t0=$(now)
  sim "$last" spot "{\"deadline_seconds\": $short}" >/dev/null
  sleep $((short + 10))
  check "pods the PDB holds are not deleted at the deadline: $(pods_on "$last") of $before still on $last $(elapsed "$t0" "$(now)") s after the notice" \
    bash -c "[ $before -gt 0 ] && [ \$(kubectl --kubeconfig $KUBECONFIG get pods -n web --field-selector spec.nodeName=$last -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null)] | length') = $before ]"
  check "the agent said the deadline passed with the PDB still refusing" grep -q "deadline passed and a PodDisruptionBudget still refuses" "$dir/agent-$last.log"
  k patch pdb -n web web --type merge -p '{"spec": {"minAvailable": 5}}' >/dev/null
  wait_for 180 count_is 0 pods_on "$last"
  check "once the PDB allows it, evictions empty $last" count_is 0 pods_on "$last"
  wait_for 180 count_is 6 ready_web
  check "6 pods Ready again" count_is 6 ready_web
else
  fail "no node with web pods left for the deadline scenario"
fi

# ---- 8. a hung agent: its condition goes stale, the provisioner drains an SQS-interrupted node
# SIGSTOP: the agent stops heartbeating but AdzeAgentReady stays True. Once lastHeartbeatTime is
# older than AGENT_STALE_AFTER_SECS (60) the provisioner no longer counts on the agent, so the
# EventBridge warning through SQS alone (a hung agent reads no IMDS) has it drain the node itself.
hung=$(fresh_node)
if [[ -n "$hung" ]]; then
  attach "$hung"
  wait_for 60 agent_ready "$hung"
  stale() { # node: AdzeAgentReady still True, its heartbeat more than 60 s old
    k get node "$1" -o json | jqe --argjson now "$(date +%s)" 'any(.status.conditions[]?;
      .type == "AdzeAgentReady" and .status == "True" and $now - (.lastHeartbeatTime | fromdateiso8601) > 60)' >/dev/null; }
  echo "== agent on $hung hung (SIGSTOP), then its interruption through SQS only"
  kill -STOP "${agent_pid[$hung]}"; t0=$(now)
  wait_for 90 stale "$hung"; t_stale=$(now)
  echo "hang -> AdzeAgentReady still True, heartbeat older than 60 s: $(elapsed "$t0" "$t_stale") s"
  check "the hung agent's condition stays True and goes stale" stale "$hung"
  pid4=$(k get node "$hung" -o jsonpath='{.spec.providerID}'); instance4=${pid4##*/}
  claim4=$(k get nodeclaims -o json | jq -r --arg p "$pid4" '.items[] | select(.status.providerID == $p) | .metadata.name')
  before=$(k get nodeclaims -o name)
  new_claim() { comm -13 <(sort <<<"$before") <(k get nodeclaims -o name | sort) | grep -q .; }
  event=$(jq -nc --arg id "$instance4" --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{version: "0", id: "e2e-spot-2",
    "detail-type": "EC2 Spot Instance Interruption Warning", source: "aws.ec2", account: "123456789012", time: $t,
    region: "us-east-1", resources: ["arn:aws:ec2:us-east-1:123456789012:instance/" + $id],
    detail: {"instance-id": $id, "instance-action": "terminate"}}')
  t1=$(now)
  sqs send "$queue" "$event"
  wait_for 60 grep -q "marked NodeClaim interrupted.*$instance4" "$dir/provisioner.log"
  check "the provisioner marked NodeClaim $claim4 interrupted (SQS)" grep -q "marked NodeClaim interrupted.*$instance4" "$dir/provisioner.log"
  wait_for 60 new_claim
  check "a replacement NodeClaim was created" new_claim
  wait_for "$DEADLINE" count_is 0 pods_on "$hung"; t_gone=$(now)
  echo "SQS send -> last pod gone from $hung: $(elapsed "$t1" "$t_gone") s"
  check "every pod left $hung" count_is 0 pods_on "$hung"
  check "the provisioner drained it itself (no live agent on the node)" grep -q "no node agent on its node.*$claim4" "$dir/provisioner.log"
  wait_for 30 count_is 0 sqs depth "$queue"
  check "the interruption message was deleted from the queue" count_is 0 sqs depth "$queue"
  wait_for 180 count_is 6 ready_web
  echo "SQS send -> 6 pods Ready again (pods moved off $hung): $(elapsed "$t1" "$(now)") s"
  check "no pod lost: 6 Ready" count_is 6 ready_web
  kill -9 "${agent_pid[$hung]}"; wait "${agent_pid[$hung]}" 2>/dev/null
  unset "hport[$hung]" # section 9 scrapes a live agent
else
  fail "no node with web pods left for the hung-agent scenario"
fi

# ---- 9. the chart's dashboard and alerts query only metrics the programs serve ------------
# The one suite with a provisioner and agents up; an extender joins for its scrape (it needs
# only the API server). Its families are all printed with a `# TYPE` line before any sample,
# so a scrape now covers counters nothing has bumped. --source also holds the scrapes against
# the names the Rust source registers.
echo "== metrics the chart's dashboard and PrometheusRule use, against live /metrics"
ext_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
KUBECONFIG=$EXTENDER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bin/adze-extender" --listen "127.0.0.1:$ext_port" >>"$dir/extender.log" 2>&1 &
pids+=("$!")
wait_for 60 curl -sf "http://127.0.0.1:$ext_port/readyz"
prov_url=$(grep -o 'on http://[0-9.:]*' "$dir/provisioner.log" | tail -n 1 | sed 's/^on //')
curl -fsS "$prov_url/metrics" >"$dir/scrape-provisioner.prom"
curl -fsS "http://127.0.0.1:$ext_port/metrics" >"$dir/scrape-extender.prom"
for n in "${!hport[@]}"; do curl -fsS "http://127.0.0.1:${hport[$n]}/metrics" >"$dir/scrape-agent.prom" && break; done
check "every metric the dashboard and alerts query is served live (charts/ci/metrics-used.py)" \
  python3 "$root/charts/ci/metrics-used.py" --list --source "$root" "$dir"/scrape-{provisioner,extender,agent}.prom

check "no hollow kubelet panicked or died of a Go runtime fatal error" bash -c "absent 'panic:|fatal error:' '$dir'/hollow/*/kubelet.log"
rbac_audit
e2e_summary
