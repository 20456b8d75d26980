#!/usr/bin/env bash
# End-to-end: install Adze THROUGH THE CHART (charts/adze) into a real Kubernetes 1.20 control
# plane (e2e/harness) with the simulated cloud, prove the chart's RBAC is enough, then
# upgrade and uninstall. Skips unless ADZE_E2E=1.
#
# No kubelet runs containers here, so the chart's Deployments never start. Instead the
# locally built adze-provisioner runs with a kubeconfig holding the chart's provisioner
# ServiceAccount token and the chart Deployment's own arguments, and must provision a
# pending Deployment with nothing but that ServiceAccount's permissions.
#
#   ADZE_E2E=1 e2e/chart.sh
#
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. The control
# plane and the provisioner are always torn down (EXIT trap); ADZE_KEEP=1 keeps the logs dir.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip "chart e2e"
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
target=${CARGO_TARGET_DIR:-$root/target}
ns=adze-system
release=adze

. charts/ci/helm-venv.sh
"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$root/e2e/harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
bin=$target/release/adze-provisioner

dir=$(mktemp -d /tmp/adze-chart-e2e.XXXXXX)
prov_pid=
cleanup() {
  [[ -n "$prov_pid" ]] && kill "$prov_pid" 2>/dev/null && wait "$prov_pid" 2>/dev/null
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir" "$dir.up.log" "$dir.scheduler.yaml"; fi
}
trap cleanup EXIT
. charts/ci/scheduler-config.sh
control_plane_up "$dir"
# shellcheck disable=SC2154 # helm_python comes from charts/ci/helm-venv.sh
helmpy() { "$helm_python" charts/ci/helm.py "$@"; }

# 1.20 has no CEL: the CRDs without x-kubernetes-validations go in first; Helm then skips
# the chart's crds/ (it never overwrites an existing CRD).
"$target/release/crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh crd/ec2nodeclasses.aws.adze.sh

# ---- install -----------------------------------------------------------------------------
cat >"$dir/values.yaml" <<'YAML'
cloudProvider: simulated
simulated: {bootDelay: 3s}
provisioner: {logFormat: text}
YAML
t0=$(date +%s.%N)
check "helm install (simulated cloud) through helm-sdkpy" helmpy install "$release" "$ns" charts/adze "$dir/values.yaml"
echo "install took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
check "provisioner Deployment, extender Deployment + Service, agent DaemonSet created" \
  k -n "$ns" get deploy/adze-provisioner deploy/adze-extender svc/adze-extender ds/adze-agent
check "PodDisruptionBudgets served as policy/v1beta1 on 1.20" k -n "$ns" get poddisruptionbudgets.v1beta1.policy adze-provisioner adze-extender

# ---- a kubeconfig from the chart's ServiceAccount -----------------------------------------
wait_for 30 bash -c "[ -n \"\$(kubectl --kubeconfig $KUBECONFIG -n $ns get sa adze-provisioner -o jsonpath='{.secrets[0].name}')\" ]"
secret=$(k -n "$ns" get sa adze-provisioner -o jsonpath='{.secrets[0].name}')
token=$(k -n "$ns" get secret "$secret" -o jsonpath='{.data.token}' | base64 -d)
sa_kubeconfig=$dir/provisioner.kubeconfig
cat >"$sa_kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$APISERVER", certificate-authority: "$dir/ca.crt"}}]
users: [{name: adze-provisioner, user: {token: "$token"}}]
contexts: [{name: e2e, context: {cluster: e2e, user: adze-provisioner, namespace: $ns}}]
current-context: e2e
YAML
chmod 600 "$sa_kubeconfig"
sa() { kubectl --kubeconfig "$sa_kubeconfig" "$@"; }
check "the ServiceAccount may create NodeClaims and evict pods" \
  bash -c "[ \"\$(kubectl --kubeconfig $sa_kubeconfig auth can-i create nodeclaims.adze.sh)\" = yes ] && [ \"\$(kubectl --kubeconfig $sa_kubeconfig auth can-i create pods --subresource=eviction -A)\" = yes ]"
check "least privilege: it may not read secrets, bind pods or write its own RBAC" \
  bash -c "[ \"\$(kubectl --kubeconfig $sa_kubeconfig auth can-i list secrets -A)\" = no ] && [ \"\$(kubectl --kubeconfig $sa_kubeconfig auth can-i create pods --subresource=binding -A)\" = no ] && [ \"\$(kubectl --kubeconfig $sa_kubeconfig auth can-i create clusterroles 2>/dev/null)\" = no ]"

# ---- the chart's own arguments, run by the local binary -----------------------------------
mapfile -t chart_args < <(k -n "$ns" get deploy adze-provisioner -o json | jq -r '.spec.template.spec.containers[0].args[]')
supported=$("$bin" run --help)
args=()
for a in "${chart_args[@]}"; do
  flag=${a%%=*}
  if [[ "$flag" != --* ]] || grep -q -- "$flag" <<<"$supported"; then args+=("$a"); else echo "note: this build has no $flag yet; not passed"; fi
done
# Consolidation (proven in e2e/disruption.sh) would add NodeClaims this suite counts: dry run,
# which still reads PDBs and NodePools through the chart's RBAC.
args+=(--disruption-dry-run)
echo "running: adze-provisioner ${args[*]}"
POD_NAME=adze-provisioner-e2e POD_NAMESPACE=$ns KUBECONFIG=$sa_kubeconfig "$bin" "${args[@]}" >>"$dir/provisioner.log" 2>&1 &
prov_pid=$!
wait_for 60 grep -q "cluster state synced" "$dir/provisioner.log"
check "provisioner synced its watches with the chart's ServiceAccount" grep -q "cluster state synced" "$dir/provisioner.log"

k create namespace web >/dev/null
k apply -f - >/dev/null <<'YAML'
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
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: "1", memory: 1Gi}}
YAML
running() { k get pods -n web --field-selector=status.phase=Running -o name | wc -l; }
claims() { k get nodeclaims -o name | wc -l; }
wait_for 60 bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt 0 ]"
check "NodeClaims created for the pending pods ($(claims))" bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt 0 ]"
wait_for 120 count_is 10 running
check "all 10 pods bound and Running on simulated nodes (nodes, node status, pod status writes allowed)" count_is 10 running
# Pods can run on a node a moment before the lifecycle writes Initialized: wait for it.
all_initialized() { kj nodeclaims | jqe '(.items | length) as $n | [.items[] | select(.status.conditions[]? | .type=="Initialized" and .status=="True")] | length == $n and $n > 0' >/dev/null; }
wait_for 30 all_initialized
check "every NodeClaim Initialized" all_initialized
check "Nominated events written by the ServiceAccount" bash -c "kubectl --kubeconfig $KUBECONFIG get events -n web --field-selector reason=Nominated -o name | grep -q ."
check "no RBAC denial in the provisioner log" bash -c "! grep -qiE 'forbidden|is not allowed|Unauthorized' '$dir/provisioner.log'"
check "no panics in the provisioner log" bash -c "! grep -q panicked '$dir/provisioner.log'"
kill "$prov_pid" 2>/dev/null; wait "$prov_pid" 2>/dev/null; prov_pid=

# ---- upgrade ------------------------------------------------------------------------------
check "helm upgrade with a changed setting" helmpy upgrade "$release" "$ns" charts/adze "$dir/values.yaml" --set-json '{"provisioner":{"maxInstanceTypes":20,"replicas":3}}'
check "upgrade reached the cluster (3 replicas, --max-instance-types=20)" bash -c \
  "kubectl --kubeconfig $KUBECONFIG -n $ns get deploy adze-provisioner -o json | jqe '.spec.replicas == 3 and (.spec.template.spec.containers[0].args | index(\"--max-instance-types=20\"))'"
check "upgrade to values the schema rejects fails with the field named" bash -c \
  "! '$helm_python' charts/ci/helm.py upgrade $release $ns charts/adze '$dir/values.yaml' --set-json '{\"cloudProvider\":\"gcp\"}' 2>'$dir/bad-upgrade.err' && grep -q cloudProvider '$dir/bad-upgrade.err'"

check "a value renamed by the flag convention (extender.logJson) is refused, named" bash -c \
  "! '$helm_python' charts/ci/helm.py upgrade $release $ns charts/adze '$dir/values.yaml' --set-json '{\"extender\":{\"logJson\":true}}' 2>'$dir/renamed.err' && grep -q logJson '$dir/renamed.err'"
check "every container is given --log-format (one flag for the three binaries)" bash -c \
  "kubectl --kubeconfig $KUBECONFIG -n $ns get deploy/adze-provisioner deploy/adze-extender ds/adze-agent -o json | jqe '[.items[].spec.template.spec.containers[0].args | any(startswith(\"--log-format=\"))] | all and length == 3'"
# The upgrade guide's CRD step (docs/upgrade.md): Helm never upgrades crds/, so the CRDs are
# applied first, server-side, over live objects.
check "CRD upgrade step: server-side apply over the live CRDs" bash -c \
  "'$target/release/crdgen' --without-cel | kubectl --kubeconfig $KUBECONFIG apply --server-side --force-conflicts -f - >/dev/null"
check "NodePools and NodeClaims still read after the CRD step" bash -c \
  "kubectl --kubeconfig $KUBECONFIG get nodepools,nodeclaims -o name | grep -q nodeclaim"

# ---- uninstall ----------------------------------------------------------------------------
check "helm uninstall" helmpy uninstall "$release" "$ns"
check "uninstall removed the workloads and RBAC" bash -c \
  "! kubectl --kubeconfig $KUBECONFIG -n $ns get deploy/adze-provisioner 2>/dev/null && ! kubectl --kubeconfig $KUBECONFIG get clusterrole adze-provisioner 2>/dev/null"
check "uninstall kept the CRDs and the NodeClaims (capacity is not torn down by an uninstall)" \
  bash -c "kubectl --kubeconfig $KUBECONFIG get crd nodeclaims.adze.sh >/dev/null && [ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt 0 ]"
check "the old ServiceAccount token no longer reads NodeClaims" bash -c "! kubectl --kubeconfig $sa_kubeconfig get nodeclaims >/dev/null 2>&1"

# ---- least privilege (issue 25): what the extender's and the agent's identities may not do --
# A second release of the chart, in its own namespace, so these checks stand apart from the
# install/upgrade/uninstall above. Permissions are asked two ways: `kubectl auth can-i --as`
# (admin impersonation: what RBAC says) and real requests with each ServiceAccount's own token
# (what the apiserver does: 403). The agent's own-node admission policy needs 1.30+: here it is
# proven only that `agent.admissionPolicy` takes effect (auto leaves it out on 1.20, enabled
# renders it and the 1.20 apiserver refuses the kind); its CEL runs in
# api/tests/agent_admission_policy.rs.
lp_ns=adze-lp
lp=lp
check "[least privilege] chart installs with agent.admissionPolicy=auto on 1.20 (no ValidatingAdmissionPolicy rendered)" \
  helmpy install "$lp" "$lp_ns" charts/adze "$dir/values.yaml"
check "[least privilege] agent.admissionPolicy=enabled renders the policy: a 1.20 apiserver refuses the kind, named" bash -c \
  "! '$helm_python' charts/ci/helm.py install lp-vap adze-lp-vap charts/adze '$dir/values.yaml' --set-json '{\"agent\":{\"admissionPolicy\":\"enabled\"}}' >'$dir/vap.err' 2>&1 && grep -q ValidatingAdmissionPolicy '$dir/vap.err'"
check "[least privilege] agent.admissionPolicy=bogus is refused, named" bash -c \
  "! '$helm_python' charts/ci/helm.py install lp-bad adze-lp-bad charts/adze '$dir/values.yaml' --set-json '{\"agent\":{\"admissionPolicy\":\"bogus\"}}' >'$dir/vap-bad.err' 2>&1 && grep -q admissionPolicy '$dir/vap-bad.err'"
can() { k auth can-i --as="system:serviceaccount:$lp_ns:$lp-adze-$1" "${@:2}" 2>/dev/null; }
check_can() { local who=$1 want=$2; shift 2; local got; got=$(can "$who" "$@"); [[ "$got" == "$want" ]] || { echo "      $who: can-i $* said '$got', want '$want'"; return 1; }; }
for verb in patch update delete; do
  check "[least privilege] extender: may not $verb pods (any namespace)" check_can extender no "$verb" pods -A
done
check "[least privilege] extender: may still create Events" check_can extender yes create events -n web
check "[least privilege] extender: may still bind pods" check_can extender yes create pods --subresource=binding -n web
check "[least privilege] extender: may still watch pods" check_can extender yes watch pods -A
check "[least privilege] provisioner: may watch Events (the extender's signal)" check_can provisioner yes watch events -A
check "[least privilege] agent: may not delete pods (any namespace)" check_can agent no delete pods -A
check "[least privilege] agent: may still evict pods" check_can agent yes create pods --subresource=eviction -A
check "[least privilege] agent: may still patch Nodes (its own only with the 1.30+ policy)" check_can agent yes patch nodes
check "[least privilege] agent: may still write NodeClaim status (its own only with the 1.30+ policy)" check_can agent yes patch nodeclaims.adze.sh --subresource=status
# Real requests with each ServiceAccount's token (1.20 creates token Secrets for them).
sa_token() {
  local s
  s=$(k -n "$lp_ns" get sa "$lp-adze-$1" -o jsonpath='{.secrets[0].name}')
  [[ -n "$s" ]] && k -n "$lp_ns" get secret "$s" -o jsonpath='{.data.token}' | base64 -d
}
as_sa() { local who=$1; shift; kubectl --server "$APISERVER" --certificate-authority "$dir/ca.crt" --token "$(sa_token "$who")" "$@"; }
wait_for 30 bash -c "[ -n \"\$(kubectl --kubeconfig $KUBECONFIG -n $lp_ns get sa $lp-adze-agent -o jsonpath='{.secrets[0].name}')\" ]"
victim=$(k get pods -n web -o jsonpath='{.items[0].metadata.name}')
victim_uid=$(k get pods -n web -o jsonpath='{.items[0].metadata.uid}')
victim_node=$(k get pods -n web -o jsonpath='{.items[0].spec.nodeName}')
echo "victim pod: web/$victim (uid $victim_uid) on node ${victim_node:-none}"
check "[least privilege] a pod to aim at exists" test -n "$victim"
as_sa extender -n web patch pod "$victim" --type merge -p '{"metadata":{"annotations":{"pwned":"yes"}}}' >"$dir/lp-patch.out" 2>&1
check "[least privilege] extender token: patching an arbitrary pod is refused with 403 Forbidden" \
  grep -q 'Forbidden' "$dir/lp-patch.out"
check "[least privilege] ... and the pod is unchanged" \
  bash -c "kubectl --kubeconfig $KUBECONFIG -n web get pod $victim -o json | jqe '.metadata.annotations.pwned == null'"
as_sa extender -n web create -f - >"$dir/lp-event.out" 2>&1 <<YAML
apiVersion: v1
kind: Event
metadata: {name: "$victim.$victim_uid", namespace: web}
involvedObject: {apiVersion: v1, kind: Pod, namespace: web, name: "$victim", uid: "$victim_uid"}
reason: FailedEveryNode
message: least-privilege check
type: Normal
source: {component: adze-extender}
YAML
check "[least privilege] extender token: the FailedEveryNode Event on a pod is created (its signal needs no pod write)" \
  grep -q created "$dir/lp-event.out"
check "[least privilege] provisioner token: lists it by the field selector it watches with" bash -c \
  "kubectl --server '$APISERVER' --certificate-authority '$dir/ca.crt' --token '$(sa_token provisioner)' get events -A --field-selector reason=FailedEveryNode,source=adze-extender -o json | jqe '[.items[] | select(.involvedObject.uid == \"$victim_uid\")] | length == 1'"
as_sa agent -n web delete pod "$victim" --wait=false >"$dir/lp-delete.out" 2>&1
check "[least privilege] agent token: deleting a pod (on any node, its own or not) is refused with 403 Forbidden" \
  grep -q 'Forbidden' "$dir/lp-delete.out"
check "[least privilege] ... and the pod is still there, not terminating" bash -c \
  "kubectl --kubeconfig $KUBECONFIG -n web get pod $victim -o json | jqe '.metadata.deletionTimestamp == null and .metadata.uid == \"$victim_uid\"'"
check "[least privilege] agent token: cordoning a node is allowed by RBAC (its own node only with the 1.30+ policy)" bash -c \
  "[ -z '$victim_node' ] || kubectl --server '$APISERVER' --certificate-authority '$dir/ca.crt' --token '$(sa_token agent)' patch node '$victim_node' --type merge -p '{\"metadata\":{\"annotations\":{\"adze.sh/lp-check\":\"1\"}}}' >/dev/null"
check "[least privilege] uninstall the second release" helmpy uninstall "$lp" "$lp_ns"

e2e_summary
