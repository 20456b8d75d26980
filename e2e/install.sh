#!/usr/bin/env bash
# End-to-end on a REAL node (issue 26): a Kubernetes 1.20 control plane (e2e/harness), one
# kubelet 1.20.2 + containerd 1.6 node (e2e/node/node.sh), and charts/adze installed with Helm
# so the chart's own pods run as containers from an image assembled without a container
# engine (e2e/node/build-images.sh). Then:
#   1. every Adze pod Running and Ready under its chart ServiceAccount, probes passed;
#      the agent found its node through the downward API;
#   2. a pending pod no node fits is provisioned by the in-cluster provisioner (simulated
#      cloud): a NodeClaim and a Node appear and the pod binds;
#   3. SIGTERM grace on the real kubelet through the agent's drain (a spot notice from
#      imds-sim): a container that traps SIGTERM finishes its N s of work, one that ignores it
#      is killed at terminationGracePeriodSeconds;
#   4. helm uninstall leaves no Adze pods, RBAC, webhooks or NodeClaims behind.
#
#   ADZE_E2E=1 e2e/install.sh        (root; installs its Debian packages itself)
#
# Values beyond the defaults, and why (a single host-sized node):
#   cloudProvider: simulated      the default (aws) needs an AWS account; NodeClaims become
#                                 Node objects instead of instances.
#   provisioner/extender.replicas: 1   two replicas with the chart's required hostname
#                                 anti-affinity cannot both run on one node.
#   agent.affinity (this node)    the default places the agent only on nodes Adze launched
#                                 (adze.sh/nodepool), where the provisioner may not run.
#   agent.imdsEndpoint            imds-sim on the node's loopback (no EC2 metadata service here).
# The image names and imagePullPolicy are the chart's defaults (adze:<appVersion>, IfNotPresent):
# nothing is pulled.
#
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. The node, the
# control plane and imds-sim are always torn down (EXIT trap); ADZE_KEEP=1 keeps the logs dir.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip "install e2e on a real kubelet"
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
ns=adze-system
release=adze
node=adze-e2e-node
[[ "$(id -u)" == 0 ]] || { echo "FAIL: a real kubelet and containerd need root"; exit 1; }

# Debian bookworm's packages, pinned (ADZE_NODE_PKGS overrides, e.g. after a point release).
pkgs=(${ADZE_NODE_PKGS:-containerd=1.6.20~ds1-1+deb12u3 runc=1.1.5+ds1-1+deb12u1
  containernetworking-plugins=1.1.1+ds1-3+b5 busybox-static=1:1.35.0-4+deb12u1+b1 iptables=1.8.9-2
  conntrack=1:1.4.7-1+b2})
missing=()
for p in "${pkgs[@]}"; do
  [[ "$(dpkg-query -W -f='${Version}' "${p%%=*}" 2>/dev/null)" == "${p#*=}" ]] || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null \
    || { echo "FAIL: apt-get install ${missing[*]}"; exit 1; }
fi

. charts/ci/helm-venv.sh
"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-kubelet.sh" || { echo "FAIL: kubelet build"; exit 1; }
kbin=${ADZE_CACHE:-$HOME/.cache/adze}/kubelet-1.20.2/bin
# ADZE_E2E_NO_BUILD=1 runs the binaries already in $target/release (as e2e/chart.sh).
if [[ "${ADZE_E2E_NO_BUILD:-0}" != 1 ]]; then
  "$harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
fi

dir=$(mktemp -d /tmp/adze-install-e2e.XXXXXX)
imds_pid=
cleanup() {
  [[ -n "$imds_pid" ]] && kill "$imds_pid" 2>/dev/null
  "$root/e2e/node/node.sh" down "$dir" >/dev/null 2>&1
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log"; fi
}
trap cleanup EXIT
# A CI timeout (TERM) or Ctrl-C must still tear the node down: containers, mounts and the
# network namespace outlive this script otherwise.
trap 'exit 143' TERM
trap 'exit 130' INT

t_img=$(date +%s.%N)
e2e/node/build-images.sh "$dir/images" "$target/release" "$kbin/pause" >"$dir/images.log" 2>&1 \
  || { cat "$dir/images.log"; echo "FAIL: image archives"; exit 1; }
echo "image archives assembled in $(elapsed "$t_img" "$(date +%s.%N)") s: $(tr '\n' ' ' <"$dir/images.log")"
adze_image=$(cat "$dir/images/adze.ref")

# The pods reach the API server through the kubernetes Service (kube-proxy DNATs it to the
# host end of the node's veth), so it must listen beyond loopback.
ADZE_APISERVER_EXTRA_ARGS="--bind-address 0.0.0.0 ${ADZE_APISERVER_EXTRA_ARGS:-}" control_plane_up "$dir"
t_node=$(date +%s.%N)
if ! e2e/node/node.sh up "$dir" "$node" "$dir"/images/{adze,busybox,pause}.tar >"$dir/node-up.log" 2>&1; then
  cat "$dir/node-up.log"; echo "FAIL: kubelet + containerd node up"; exit 1
fi
set -a; . "$dir/node/env"; set +a
echo "real node $node Ready in $(elapsed "$t_node" "$(date +%s.%N)") s"
pass "node $node registered by a kubelet with its own certificate (system:node:$node), Ready"
node_exec() { nsenter --net="/var/run/netns/$NODE_NETNS" "$@"; }

# imds-sim on the node's loopback: the agent (hostNetwork) polls it as it would EC2's IMDS.
# nsenter execs imds-sim, so $! is imds-sim itself (a function in the background would be a subshell).
nsenter --net="/var/run/netns/$NODE_NETNS" "$target/release/imds-sim" --port-file "$dir/imds.port" >"$dir/imds.log" 2>&1 &
imds_pid=$!
wait_for 10 test -s "$dir/imds.port" || { echo "FAIL: imds-sim did not start"; exit 1; }
imds_port=$(cat "$dir/imds.port")
sim() { node_exec curl -sf -X POST "http://127.0.0.1:$imds_port/_sim/$1" -d "${2:-{\}}"; }

# ---- 1. helm install: the chart's pods as containers -------------------------------------
helmpy() { "$helm_python" charts/ci/helm.py "$@"; }
# 1.20 has no CEL: the CRDs without x-kubernetes-validations go in first (as e2e/chart.sh).
"$target/release/crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh crd/ec2nodeclasses.aws.adze.sh
cat >"$dir/values.yaml" <<YAML
cloudProvider: simulated
provisioner: {replicas: 1}
extender: {replicas: 1}
agent:
  imdsEndpoint: http://127.0.0.1:$imds_port
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$node]}]
YAML
t0=$(date +%s.%N)
check "helm install charts/adze (default image $adze_image, pullPolicy IfNotPresent)" helmpy install "$release" "$ns" charts/adze "$dir/values.yaml"
adze_pods() { kj pods -n "$ns"; }
all_ready() {
  adze_pods | jqe '(.items | length) == 3 and all(.items[]; .status.phase == "Running"
    and any(.status.conditions[]?; .type == "Ready" and .status == "True"))' >/dev/null
}
wait_for 180 all_ready
echo "install -> all Adze pods Ready: $(elapsed "$t0" "$(date +%s.%N)") s"
adze_pods >"$dir/pods.json"
jq -r '.items[] | "\(.metadata.name) \(.status.phase) sa=\(.spec.serviceAccountName) node=\(.spec.nodeName) restarts=\([.status.containerStatuses[]?.restartCount] | add)"' "$dir/pods.json"
check "provisioner, extender and agent pods Running and Ready on the real node" all_ready
for c in provisioner extender agent; do
  check "$c pod runs under the chart's ServiceAccount adze-$c, image $adze_image (imported; no registry is reachable)" jqe --arg c "$c" --arg img "$adze_image" \
    'any(.items[]; (.metadata.labels["app.kubernetes.io/component"] == $c) and .spec.serviceAccountName == "adze-\($c)"
       and .spec.nodeName == "'"$node"'" and (.status.containerStatuses[0].image | test($img)))' "$dir/pods.json"
done
check "the chart's probes are in the pods: readiness+liveness (provisioner, extender), liveness (agent)" jqe \
  '(.items | length) == 3 and all(.items[]; .spec.containers[0].livenessProbe != null and (.spec.containers[0].readinessProbe != null or .metadata.labels["app.kubernetes.io/component"] == "agent"))' "$dir/pods.json"
check "readiness probes passed (provisioner /readyz, extender's Lease): Ready, no restarts (liveness never failed)" jqe \
  '(.items | length) == 3 and all(.items[]; (.status.containerStatuses | length) > 0 and all(.status.containerStatuses[]; .ready == true and .restartCount == 0))' "$dir/pods.json"
# By process name (comm, 15 characters): a command-line pattern would match this check's shell.
# Only the node's containers: their cgroups sit under the node's cgroup root (/adze-e2e-*,
# e2e/node/node.sh), while suites running beside this one (CI's lanes) run the same binaries
# as plain processes.
node_pids() { local p; for p in $(pgrep -x "$1"); do grep -q ':/adze-e2e-' "/proc/$p/cgroup" 2>/dev/null && echo "$p"; done; return 0; }
as_65532() { local c p; for c in adze-provisione adze-extender adze-agent; do
  p=$(node_pids "$c"); [[ -n "$p" ]] || return 1
  for p in $p; do [[ "$(stat -c %u "/proc/$p")" == 65532 ]] || return 1; done; done; }
check "the three containers run as the chart's non-root user 65532" as_65532
agent_log() { cat /var/log/pods/"${ns}"_adze-agent-*/agent/*.log 2>/dev/null; }
check "agent found its node via the downward API (ADZE_NODE_NAME=spec.nodeName=$node)" bash -c \
  "$(declare -f agent_log); ns=$ns; agent_log | grep 'adze-agent starting' | grep -q '$node'"
imds_polled() { node_exec curl -sf "http://127.0.0.1:$imds_port/_sim/stats" | jqe '.token_requests > 0' >/dev/null; }
wait_for 30 imds_polled
check "agent polls IMDS (imds-sim on the node) with IMDSv2 tokens" imds_polled

# ---- 2. provisioning by the in-cluster provisioner ---------------------------------------
cpus=$(kj node "$node" | jq -r '.status.allocatable.cpu')
want=$(( ${cpus%m} + 2 ))
k create namespace web >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
  limits: {cpu: "1000"}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: web}
spec:
  containers:
    - name: c
      image: docker.io/adze-e2e/busybox:e2e
      imagePullPolicy: IfNotPresent
      command: [sleep, "3600"]
      resources: {requests: {cpu: "$want"}}
YAML
t0=$(date +%s.%N)
big_node() { k -n web get pod big -o jsonpath='{.spec.nodeName}'; }
wait_for 120 bash -c "[ -n \"\$(kubectl --kubeconfig $KUBECONFIG -n web get pod big -o jsonpath='{.spec.nodeName}')\" ]"
echo "pending pod (cpu $want; node $node has $cpus) -> bound: $(elapsed "$t0" "$(date +%s.%N)") s"
bn=$(big_node)
check "a NodeClaim was created for the pod no node fits" bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -ge 1 ]"
check "the pod bound to the new Node ($bn), not to $node" bash -c "[ -n '$bn' ] && [ '$bn' != '$node' ] && kubectl --kubeconfig $KUBECONFIG get node '$bn' -o json | jqe '.metadata.labels[\"adze.sh/nodepool\"] == \"default\"' >/dev/null"
prov_log() { cat /var/log/pods/"${ns}"_adze-provisioner-*/provisioner/*.log 2>/dev/null; }
check "the in-cluster provisioner launched it (its container log)" bash -c "$(declare -f prov_log); ns=$ns; prov_log | grep -qi 'nodeclaim'"

# Capacity goes before the drain below evicts the provisioner (its pod then stays Pending on
# the cordoned node), as with Karpenter before an uninstall: the NodePool and NodeClaims are
# deleted and the in-cluster provisioner releases their finalizers.
k -n web delete pod big --wait=false >/dev/null 2>&1
k delete nodepool default --wait=false >/dev/null 2>&1
k delete nodeclaims --all --wait=false >/dev/null 2>&1
wait_for 120 count_is 0 bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l"
check "NodeClaims removed by the in-cluster provisioner before the uninstall (finalizers released)" count_is 0 bash -c "kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l"

# ---- 3. SIGTERM grace on the real kubelet, through the agent's drain ---------------------
# graceful: traps SIGTERM, writes a marker, works N s more, exits 0 (grace 30 > N).
# stubborn: ignores SIGTERM (the trap only notes it, then "alive" every second) and is killed
# at its grace, G s. Markers go to a hostPath; the shell's traps run between 1 s sleeps.
N=5; G=8
mkdir -p "$dir/markers"
grace_pod() { # NAME GRACE SCRIPT
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: web}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: $2
  containers:
    - name: c
      image: docker.io/adze-e2e/busybox:e2e
      imagePullPolicy: IfNotPresent
      command: [/bin/sh, -c, '$3']
      volumeMounts: [{name: m, mountPath: /m}]
  volumes: [{name: m, hostPath: {path: $dir/markers, type: Directory}}]
---
YAML
}
# shellcheck disable=SC2016 # expanded by the container's shell
graceful_sh='on_term() { echo term $(date +%s) >>/m/graceful; sleep @N@; echo exit $(date +%s) >>/m/graceful; exit 0; }; trap on_term TERM; echo up >/m/graceful; while true; do sleep 1 & wait $!; done'
# shellcheck disable=SC2016
stubborn_sh='t=0; on_term() { echo term $(date +%s) >>/m/stubborn; t=1; }; trap on_term TERM; echo up >/m/stubborn; while true; do sleep 1 & wait $!; [ $t = 1 ] && echo alive $(date +%s) >>/m/stubborn; done'
{ grace_pod graceful 30 "${graceful_sh//@N@/$N}"; grace_pod stubborn "$G" "$stubborn_sh"; } | k apply -f - >/dev/null
running() { kj pod -n web "$1" | jqe '.status.phase == "Running"' >/dev/null; }
wait_for 60 running graceful; wait_for 60 running stubborn
check "busybox pods (graceful, stubborn) Running on $node" bash -c "grep -qx up $dir/markers/graceful && grep -qx up $dir/markers/stubborn"
uid_g=$(k -n web get pod graceful -o jsonpath='{.metadata.uid}'); uid_s=$(k -n web get pod stubborn -o jsonpath='{.metadata.uid}')
t0=$(date +%s.%N)
sim spot '{"deadline_seconds": 120}' >/dev/null
# Poll every 0.2 s: when each pod is evicted (deletionTimestamp set) and gone, and the last
# status the kubelet reported for it (its container's exit code and finish time).
t_del_g=; t_del_s=; t_gone_g=; t_gone_s=; end=$(( $(date +%s) + 90 ))
while (( $(date +%s) < end )) && [[ -z "$t_gone_g" || -z "$t_gone_s" ]]; do
  pj=$(kj pods -n web 2>/dev/null) || { sleep 0.2; continue; }
  for p in graceful stubborn; do
    u=$([[ $p == graceful ]] && echo "$uid_g" || echo "$uid_s")
    one=$(jq -c --arg u "$u" '.items[] | select(.metadata.uid == $u)' <<<"$pj")
    if [[ -z "$one" ]]; then st=gone; else
      printf '%s\n' "$one" >"$dir/last-$p.json"
      st=$(jq -r 'if .metadata.deletionTimestamp then "terminating" else "running" end' <<<"$one")
    fi
    if [[ $p == graceful ]]; then
      [[ $st != running && -z "$t_del_g" ]] && t_del_g=$(date +%s.%N)
      [[ $st == gone && -z "$t_gone_g" ]] && t_gone_g=$(date +%s.%N)
    else
      [[ $st != running && -z "$t_del_s" ]] && t_del_s=$(date +%s.%N)
      [[ $st == gone && -z "$t_gone_s" ]] && t_gone_s=$(date +%s.%N)
    fi
  done
  sleep 0.2
done
echo "spot notice -> graceful evicted $(elapsed "$t0" "${t_del_g:-0}") s, gone $(elapsed "${t_del_g:-0}" "${t_gone_g:-0}") s after; stubborn evicted $(elapsed "$t0" "${t_del_s:-0}") s, gone $(elapsed "${t_del_s:-0}" "${t_gone_s:-0}") s after"
echo "markers: graceful: $(tr '\n' ' ' <"$dir/markers/graceful"); stubborn: $(tr '\n' ' ' <"$dir/markers/stubborn")"
term_state() { jq -c '.status.containerStatuses[0].state.terminated // .status.containerStatuses[0].lastState.terminated // {} | {exitCode, finishedAt}' "$dir/last-$1.json" 2>/dev/null; }
echo "last container state: graceful $(term_state graceful); stubborn $(term_state stubborn)"
marker() { awk -v k="$2" '$1 == k {v = $2} END {print v}' "$dir/markers/$1"; } # last value of key
finished() { date -d "$(jq -r '(.status.containerStatuses[0].state.terminated // {}).finishedAt // empty' "$dir/last-$1.json")" +%s 2>/dev/null; }
check "the agent drained the real node (tainted adze.sh/interrupted, cordoned)" bash -c \
  "kubectl --kubeconfig $KUBECONFIG get node $node -o json | jqe '.spec.unschedulable == true and any(.spec.taints[]?; .key == \"adze.sh/interrupted\")' >/dev/null"
tg=$(marker graceful term); xg=$(marker graceful exit)
check "graceful: SIGTERM reached the container (marker) and it finished its ${N} s of work (term $tg, exit $xg)" \
  test -n "$tg" -a -n "$xg" -a "$(( ${xg:-0} - ${tg:-0} ))" -ge "$N"
check "graceful: exited 0 on its own (last status the kubelet reported)" bash -c "[ \"\$(jq -r '.status.containerStatuses[0].state.terminated.exitCode' $dir/last-graceful.json)\" = 0 ]"
check "graceful: the pod took >= ${N} s from eviction to gone, under its 30 s grace" awk -v a="${t_del_g:-0}" -v b="${t_gone_g:-0}" -v n="$N" \
  'BEGIN{d=b-a; exit !(a > 0 && b > 0 && d >= n && d < 30)}'
ts=$(marker stubborn term); as=$(marker stubborn alive); fs=$(finished stubborn)
check "stubborn: SIGTERM reached it and was ignored (term $ts, still alive at $as)" \
  test -n "$ts" -a -n "$as" -a "$(( ${as:-0} - ${ts:-0} ))" -ge "$(( G - 2 ))"
check "stubborn: SIGKILLed at its ${G} s grace (exit 137, finished $(( ${fs:-0} - ${ts:-0} )) s after SIGTERM)" bash -c \
  "[ \"\$(jq -r '.status.containerStatuses[0].state.terminated.exitCode' $dir/last-stubborn.json)\" = 137 ] && [ -n '$fs' ] && [ -n '$ts' ] && d=\$(( $fs - $ts )) && [ \$d -ge $(( G - 1 )) ] && [ \$d -le $(( G + 2 )) ]"
check "the agent evicted them (its container log)" bash -c "$(declare -f agent_log); ns=$ns; agent_log | grep -q 'evicted'"

# ---- 4. uninstall ---------------------------------------------------------------------------
check "helm uninstall" helmpy uninstall "$release" "$ns"
wait_for 90 count_is 0 count k -n "$ns" get pods -o name
check "no Adze pods left (containers stopped on the node)" bash -c \
  "$(declare -f node_pids); [ \"\$(count kubectl --kubeconfig $KUBECONFIG -n $ns get pods -o name)\" = 0 ] && [ -z \"\$(node_pids adze-provisione)\$(node_pids adze-extender)\$(node_pids adze-agent)\" ]"  # empty-input-ok: no process of the node is the assertion; the pod count is read first
sel=app.kubernetes.io/instance=$release
left=$(k get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations,priorityclasses -l "$sel" -o name 2>&1;
  k -n "$ns" get all,roles,rolebindings,serviceaccounts,secrets,configmaps,leases,poddisruptionbudgets -l "$sel" -o name 2>&1)
echo "left with label $sel: ${left:-nothing}"
check "no RBAC, webhooks, workloads, Secrets or ConfigMaps of the release left (by label)" test -z "$left"
# By name too (a resource the chart forgot to label would escape the selector): only what the
# namespace and the control plane create themselves, and the components' Leases, remain.
left=$(k get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations -o name | grep -i adze;
  k -n "$ns" get all,roles,rolebindings,serviceaccounts,secrets,configmaps,poddisruptionbudgets.v1beta1.policy -o name \
    | grep -Ev '^(serviceaccount/default|secret/default-token-[a-z0-9]+|configmap/kube-root-ca.crt)$')
echo "left in $ns or cluster-wide named adze: ${left:-nothing}"
check "nothing of the release left by name either" test -z "$left"
check "no NodeClaims or NodePools left (no finalizer stuck)" bash -c \
  "[ \"\$(count kubectl --kubeconfig $KUBECONFIG get nodeclaims,nodepools -o name)\" = 0 ]"
echo "left by design: the CRDs ($(k get crd -o name | grep -c 'adze.sh') adze.sh CRDs; Helm never deletes crds/), the namespace $ns, the Leases the components took ($(k -n "$ns" get leases -o name | tr '\n' ' '))"

e2e_summary
