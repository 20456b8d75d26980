#!/usr/bin/env bash
# Adze on kind, for users with Docker: a kind cluster whose kube-scheduler calls the Adze
# extender, the image built from the repository's Dockerfile and loaded into kind, Adze
# installed with `helm install` and the simulated cloud, then the scenarios of e2e/run.sh.
#
#   e2e/kind/run.sh            # create cluster "adze", build, load, install, run scenarios
#   ADZE_KIND_KEEP=1 e2e/kind/run.sh   # keep the cluster afterwards
#
# Needs docker, kind, helm and kubectl on PATH. It cannot run on the project's CI machines
# (no container engine); charts/ci/check.sh validates cluster.yaml, scheduler-config.yaml
# and values.yaml against the chart instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cluster=${ADZE_KIND_CLUSTER:-adze}
image=adze:dev
for tool in docker kind helm kubectl jq; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 0; }
done
passed=0; failed=0
pass() { echo "PASS: $*"; passed=$((passed+1)); }
fail() { echo "FAIL: $*"; failed=$((failed+1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
wait_for() { local limit=$1; shift; local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do (( $(date +%s) >= end )) && return 1; sleep 1; done; }
count_is() { [[ "$("${@:2}")" == "$1" ]]; }
cleanup() { [[ "${ADZE_KIND_KEEP:-0}" == 1 ]] || kind delete cluster --name "$cluster" >/dev/null 2>&1 || true; }
trap cleanup EXIT

config=$(mktemp /tmp/adze-kind.XXXXXX.yaml)
sed "s|@ROOT@|$root|g" e2e/kind/cluster.yaml >"$config"
kind create cluster --name "$cluster" --config "$config" --wait 120s
docker build -t "$image" .
kind load docker-image "$image" --name "$cluster"

# kind's own clusters serve CEL, so the chart's CRDs (crds/) go in as they are.
helm install adze charts/adze --namespace adze-system --create-namespace -f e2e/kind/values.yaml --wait --timeout 5m
check "provisioner and extender Ready" kubectl -n adze-system wait --for=condition=Available deploy --all --timeout=120s
check "kube-scheduler reaches the extender (its Service has endpoints)" \
  bash -c "kubectl -n adze-system get endpoints adze-extender -o jsonpath='{.subsets[0].addresses[0].ip}' | grep -q ."

nodepool() { # name cpu-limit
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
  limits: {cpu: "$2"}
YAML
}
deployment() { # namespace name replicas cpu memory pool
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
      nodeSelector: {e2e-pool: $6}
      terminationGracePeriodSeconds: 0
      containers:
        - {name: pause, image: registry.k8s.io/pause:3.9, resources: {requests: {cpu: "$4", memory: "$5"}}}
YAML
}
running_pods() { kubectl get pods -n "$1" --field-selector=status.phase=Running -o name | wc -l; }
claims() { kubectl get nodeclaims -o name | wc -l; }

echo "== 30 pods, NodePool default"
kubectl create namespace web
nodepool default 1000 | kubectl apply -f -
deployment web web 30 1 1Gi default | kubectl apply -f -
wait_for 120 count_is 30 running_pods web
check "all 30 pods Running on simulated nodes" count_is 30 running_pods web
check "NodeClaims created with nominations for all 30 pods" bash -c \
  "kubectl get nodeclaims -o json | jq '[.items[].metadata.annotations[\"adze.sh/nominated-pods\"] | fromjson | length] | add == 30' | grep -qx true"
check "the extender bound the pods (Scheduled events from its binding)" bash -c \
  "kubectl -n adze-system logs deploy/adze-extender | grep -q bound"

echo "== provisioner pod killed with NodeClaims in flight"
before=$(claims)
kubectl -n web scale deployment/web --replicas=45
wait_for 60 bash -c "[ \$(kubectl get nodeclaims -o name | wc -l) -gt $before ]"
kubectl -n adze-system delete pod -l app.kubernetes.io/component=provisioner --grace-period=0 --force
inflight=$(claims)
wait_for 180 count_is 45 running_pods web
check "after the restart all 45 pods Running" count_is 45 running_pods web
sleep 5
check "no duplicate launches after the restart ($inflight NodeClaims)" count_is "$inflight" claims

echo "== NodePool limited to 8 cpu, 20 pods x 1 cpu"
kubectl create namespace batch
nodepool limited 8 | kubectl apply -f -
deployment batch job 20 1 1Gi limited | kubectl apply -f -
sleep 20
cpu=$(kubectl get nodeclaims -l adze.sh/nodepool=limited -o json | jq '[.items[].status.capacity.cpu // "0" | tonumber] | add // 0')
check "launches stop at the limit (cpu $cpu <= 8)" awk -v c="$cpu" 'BEGIN{exit !(c <= 8 && c > 0)}'

check "helm upgrade" helm upgrade adze charts/adze -n adze-system -f e2e/kind/values.yaml --set provisioner.maxInstanceTypes=20 --wait
check "helm uninstall" helm uninstall adze -n adze-system --wait
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
