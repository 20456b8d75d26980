#!/usr/bin/env bash
# Adze on kind: a kind cluster, Adze's image built and loaded into it, charts/adze installed with
# `helm install` (the chart's defaults plus e2e/kind/values.yaml: simulated cloud, one replica
# each, the chart's own kube-scheduler calling the extender), then:
#   1. a pending workload is provisioned: a NodeClaim and a Node created by Adze;
#   2. its pods bound to the node launched for them and Running; the extender was called;
#   3. scaled down: the emptied node is consolidated (NodeClaim and Node removed);
#   4. `helm uninstall` leaves no Adze pods, RBAC, webhooks or NodeClaims.
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on any failure.
#
#   e2e/kind/run.sh                       Docker if its daemon answers, else podman
#   ADZE_KIND_ENGINE=docker e2e/kind/run.sh
#   ADZE_KIND_ENGINE=podman e2e/kind/run.sh   (root; what CI runs)
#   ADZE_KIND_KEEP=1 e2e/kind/run.sh      docker: keep the cluster (podman: keep the logs)
#
# docker: needs docker, kind, helm, kubectl and jq; kind's default node image is pulled and the
# image is built from the repository's Dockerfile (what a user does).
# podman: pulls nothing. Installs its Debian packages (podman, mmdebstrap, ...; kind from
# Debian's unstable suite, unpacked into ~/.cache/adze without touching apt's configuration),
# builds Kubernetes 1.20.2 with e2e/harness, assembles the node image (e2e/kind/node-image.sh)
# and Adze's image (e2e/node/build-images.sh) without a registry. podman keeps all its state
# (storage, networks) in a directory of this run, the cluster runs in a network namespace of
# its own, and every host setting touched is put back on exit: the kernel settings the
# node's kubelet writes (vm.*, kernel.panic*, kernel.keys.*) and an empty /lib/modules created
# for kind's mount when the host has none.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
# shellcheck source=../lib.sh
. e2e/lib.sh
cluster=${ADZE_KIND_CLUSTER:-adze}
ns=adze-system
release=adze
cache=${ADZE_CACHE:-$HOME/.cache/adze}
target=${CARGO_TARGET_DIR:-$root/target}
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/adze/Chart.yaml)
kind_deb=${ADZE_KIND_DEB_VERSION:-0.33.0-1}
node_image=localhost/adze/kind-node:v1.20.2

engine=${ADZE_KIND_ENGINE:-auto}
if [[ "$engine" == auto ]]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker; else engine=podman; fi
fi
case "$engine" in docker|podman) ;; *) echo "FAIL: ADZE_KIND_ENGINE=$engine (docker or podman)"; exit 1 ;; esac

# ---- the podman path: packages, kind, binaries, a private podman, host settings -------------
# Kernel settings a kind node's kubelet (and containerd, kube-proxy) may write in the host's
# kernel: global ones, not per network namespace. Saved here, put back on exit.
host_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes kernel.keys.maxkeys kernel.keys.maxbytes
  fs.inotify.max_user_instances fs.inotify.max_user_watches fs.file-max net.netfilter.nf_conntrack_max
  net.core.somaxconn)
sysctl_file() { echo "/proc/sys/${1//.//}"; }
saved_sysctls=()
save_sysctls() {
  local s f
  for s in "${host_sysctls[@]}"; do
    f=$(sysctl_file "$s"); [[ -r "$f" ]] && saved_sysctls+=("$s=$(cat "$f")")
  done
}
restore_sysctls() {
  local kv s v f changed=()
  for kv in "${saved_sysctls[@]}"; do
    s=${kv%%=*}; v=${kv#*=}; f=$(sysctl_file "$s")
    if [[ "$(cat "$f")" != "$v" ]]; then changed+=("$s: $(cat "$f") -> $v"); echo "$v" >"$f"; fi
  done
  if (( ${#changed[@]} )); then echo "host settings put back: ${changed[*]}"; else echo "host settings: none changed"; fi
  for kv in "${saved_sysctls[@]}"; do
    s=${kv%%=*}; [[ "$(cat "$(sysctl_file "$s")")" == "${kv#*=}" ]] || return 1
  done
}

podman_prepare() {
  [[ "$(id -u)" == 0 ]] || { echo "FAIL: the podman path runs privileged containers: run as root"; exit 1; }
  local pkgs=(podman runc mmdebstrap iptables conntrack jq busybox-static) missing=() p
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
  if (( ${#missing[@]} )); then
    echo "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null \
      || { echo "FAIL: apt-get install ${missing[*]}"; exit 1; }
  fi
  # kind is packaged in Debian trixie and later; bookworm's apt gets it from unstable through a
  # private sources list and state directory (the machine's apt configuration is not touched).
  # It is one static binary: unpacked into the cache rather than installed.
  kind_bin=$cache/kind-$kind_deb/kind
  if [[ ! -x "$kind_bin" ]]; then
    local a=$cache/kind-apt
    mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/etc/sources.list.d" "$a/etc/preferences.d"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" >"$a/etc/sources.list"
    local o=(-o "Dir::Etc::sourcelist=$a/etc/sources.list" -o "Dir::Etc::sourceparts=$a/etc/sources.list.d"
      -o "Dir::Etc::preferencesparts=$a/etc/preferences.d" -o "Dir::State::Lists=$a/lists" -o "Dir::Cache::archives=$a/archives")
    echo "fetching Debian's kind=$kind_deb (unstable)"
    apt-get "${o[@]}" update -qq >/dev/null 2>&1 \
      && (cd "$a/archives" && apt-get "${o[@]}" download "kind=$kind_deb" >/dev/null 2>&1) \
      || { echo "FAIL: apt-get download kind=$kind_deb from Debian unstable (ADZE_KIND_DEB_VERSION sets another)"; exit 1; }
    rm -rf "$a/x" && dpkg-deb -x "$a/archives/kind_${kind_deb}_amd64.deb" "$a/x" && mkdir -p "$(dirname "$kind_bin")" \
      && install -m 0755 "$a/x/usr/bin/kind" "$kind_bin" && rm -rf "$a/x" || { echo "FAIL: unpacking kind"; exit 1; }
  fi
  e2e/harness/build-control-plane.sh >/dev/null || { echo "FAIL: control plane build"; exit 1; }
  e2e/harness/build-kubelet.sh || { echo "FAIL: kubelet/kubeadm build"; exit 1; }
  # The node image's Debian base comes from the mirror: fetched here, before the run moves into a
  # network namespace with no route out (the rest of the image is assembled in there, offline).
  e2e/kind/node-image.sh --base-only || { echo "FAIL: node image base (mmdebstrap)"; exit 1; }
  if [[ "${ADZE_E2E_NO_BUILD:-0}" != 1 ]]; then
    e2e/harness/build-binaries.sh || { echo "FAIL: cargo build"; exit 1; }
  fi
  # Checked before any cluster exists. ADZE_E2E_NO_BUILD=1 runs what is in $target/release; the
  # least that suffices (the simulated cloud needs `run`, not the EC2 provider):
  #   cargo build --release -p adze-provisioner --no-default-features --features controller \
  #     -p adze-extender -p adze-agent -p adze-api --bin adze-provisioner --bin adze-extender \
  #     --bin adze-agent --bin crdgen
  local b
  for b in adze-provisioner adze-extender adze-agent crdgen; do
    [[ -x "$target/release/$b" ]] || { echo "FAIL: $target/release/$b missing (ADZE_E2E_NO_BUILD=1 runs the binaries already built)"; exit 1; }
  done
}

# podman's configuration for this run only: storage, runtime state and networks under $dir.
podman_private() {
  mkdir -p "$dir/podman"/{storage,run,networks,tmp}
  cat >"$dir/podman/storage.conf" <<TOML
[storage]
driver = "overlay"
graphroot = "$dir/podman/storage"
runroot = "$dir/podman/run"
TOML
  # podman's default limits for containers are above what a host without CAP_SYS_RESOURCE (a
  # container itself, as CI's machine) may grant, and the node container would not start:
  # the open-file limit is the host's own, the process limit at most 32768 (higher was refused
  # by the OCI runtime's setrlimit on such a host; root in the node ignores it anyway).
  local nofile nproc
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [[ "$nofile" == unlimited ]] && nofile=1048576
  [[ "$nproc" == unlimited ]] || (( nproc > 32768 )) && nproc=32768
  cat >"$dir/podman/containers.conf" <<TOML
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
# crun refuses private cgroup namespaces on hybrid cgroup hosts (v1 with a v2 mount).
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/podman/events.log"
tmp_dir = "$dir/podman/tmp"
[network]
network_config_dir = "$dir/podman/networks"
TOML
  export CONTAINERS_CONF=$dir/podman/containers.conf CONTAINERS_STORAGE_CONF=$dir/podman/storage.conf
  export KIND_EXPERIMENTAL_PROVIDER=podman
}

podman_teardown() {
  local ids
  ids=$(podman ps -aq 2>/dev/null)
  [[ -n "$ids" ]] && podman rm -f -t 0 $ids >/dev/null 2>&1  # shellcheck disable=SC2086
  podman network rm -f kind >/dev/null 2>&1
  podman volume prune -f >/dev/null 2>&1
  podman system reset -f >/dev/null 2>&1
  # Whatever podman left mounted under the run's directory.
  grep -o " $dir/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
}

# ---- inside: the cluster and the checks (in the run's own network namespace on podman) ------
inside() {
  local kcfg=$dir/kubeconfig kind_cmd=(kind)
  export KUBECONFIG=$kcfg
  if [[ "$engine" == podman ]]; then
    ip link set lo up
    kind_cmd=("$kind_bin")
    t0=$(now)
    e2e/kind/node-image.sh "$node_image" >"$dir/node-image.log" 2>&1 || { cat "$dir/node-image.log"; echo "FAIL: node image"; return 1; }
    echo "node image $node_image assembled in $(elapsed "$t0" "$(now)") s (nothing pulled)"
    # One node: the offline image's CNI is a plain bridge (node-image.sh). kubelet 1.20 with the
    # cgroupfs driver (kind picks systemd for it on some hosts).
    cat >"$dir/cluster.yaml" <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking: {disableDefaultCNI: true}
nodes:
  - role: control-plane
    image: $node_image
kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    cgroupDriver: cgroupfs
YAML
  else
    printf 'kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n' >"$dir/cluster.yaml"
  fi
  t0=$(now)
  if ! "${kind_cmd[@]}" create cluster --name "$cluster" --config "$dir/cluster.yaml" --kubeconfig "$kcfg" --wait 3m >"$dir/kind-create.log" 2>&1; then
    cat "$dir/kind-create.log"; fail "kind create cluster"
    "${kind_cmd[@]}" export logs "$dir/kind-logs" --name "$cluster" >/dev/null 2>&1 && echo "kind logs in $dir/kind-logs"
    return 1
  fi
  cluster_up=1
  pass "kind create cluster ($engine): control-plane node Ready in $(elapsed "$t0" "$(now)") s"
  local server_version
  server_version=$(k version -o json 2>/dev/null | jq -r '.serverVersion.gitVersion')
  echo "cluster: Kubernetes $server_version, node $(k get nodes -o name)"

  # Adze's image, the way a user builds it (docker) or assembled from the release binaries
  # without a container engine (podman: e2e/node/build-images.sh, as e2e/install.sh).
  local adze_image="adze:$app_version"
  t0=$(now)
  if [[ "$engine" == docker ]]; then
    docker build -q -t "$adze_image" . >/dev/null && "${kind_cmd[@]}" load docker-image "$adze_image" --name "$cluster" >/dev/null \
      || { fail "docker build + kind load docker-image $adze_image"; return 1; }
  else
    e2e/node/build-images.sh "$dir/images" "$target/release" "$cache/kubelet-1.20.2/bin/pause" >"$dir/images.log" 2>&1 \
      && "${kind_cmd[@]}" load image-archive "$dir/images/adze.tar" --name "$cluster" >/dev/null \
      || { cat "$dir/images.log"; fail "image archive + kind load image-archive"; return 1; }
    adze_image=$(cat "$dir/images/adze.ref")
  fi
  pass "Adze image $adze_image loaded into the kind node in $(elapsed "$t0" "$(now)") s"

  # ---- helm install -------------------------------------------------------------------------
  local sched_tag=${server_version%%+*} api=kubescheduler.config.k8s.io/v1
  if [[ "$(printf '%s\n' "$sched_tag" v1.25.0 | sort -V | head -1)" != v1.25.0 ]]; then api=kubescheduler.config.k8s.io/v1beta1; fi
  local extra="{\"scheduler\": {\"image\": {\"tag\": \"$sched_tag\"}, \"configApiVersion\": \"$api\"}}"
  local helm_cmd
  if [[ "$engine" == docker ]] && command -v helm >/dev/null; then
    helm_cmd=helm
    helm_install() { helm install "$release" charts/adze -n "$ns" --create-namespace -f e2e/kind/values.yaml --set-json "$extra" --wait --timeout 5m; }
    helm_uninstall() { helm uninstall "$release" -n "$ns" --wait; }
  else
    # shellcheck source=../../charts/ci/helm-venv.sh
    . charts/ci/helm-venv.sh
    helm_cmd="charts/ci/helm.py (Helm's Go library)"
    helm_install() { "$helm_python" charts/ci/helm.py install "$release" "$ns" charts/adze e2e/kind/values.yaml --set-json "$extra"; }
    helm_uninstall() { "$helm_python" charts/ci/helm.py uninstall "$release" "$ns"; }
  fi
  # Before 1.25 the API server has no CEL: the CRDs without x-kubernetes-validations go in
  # first (Helm leaves CRDs that exist alone), as e2e/install.sh does on its 1.20 cluster.
  if [[ "$api" != kubescheduler.config.k8s.io/v1 ]]; then
    "$target/release/crdgen" --without-cel | k apply -f - >/dev/null || { fail "CRDs (crdgen --without-cel)"; return 1; }
  fi
  t0=$(now)
  check "helm install charts/adze with e2e/kind/values.yaml (scheduler $sched_tag, $api) via $helm_cmd" helm_install
  all_ready() {
    kj pods -n "$ns" | jqe '(.items | length) == 3 and all(.items[]; .status.phase == "Running"
      and any(.status.conditions[]?; .type == "Ready" and .status == "True"))' >/dev/null
  }
  wait_for 240 all_ready
  kj pods -n "$ns" | jq -r '.items[] | "  \(.metadata.name) \(.status.phase) node=\(.spec.nodeName) image=\(.spec.containers[0].image)"'
  check "provisioner, extender and adze-scheduler Running and Ready as containers on the kind node ($(elapsed "$t0" "$(now)") s)" all_ready

  # ---- 1-2. a pending workload provisioned and bound ----------------------------------------
  k create namespace demo >/dev/null
  cat <<YAML | k apply -f - >/dev/null
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: demo}
spec:
  template:
    metadata: {labels: {demo-pool: demo}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
  disruption: {consolidateAfter: 5s}
  limits: {cpu: "100"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: adze-scheduler
      nodeSelector: {demo-pool: demo}
      terminationGracePeriodSeconds: 0
      containers:
        - name: web
          image: registry.k8s.io/pause:3.2
          resources: {requests: {cpu: "1500m", memory: 1Gi}}
YAML
  # m5.xlarge: 4 vCPU, so 2 pods of 1.5 cpu a node: 4 replicas need 2 nodes.
  t0=$(now)
  running_pods() { kj pods -n demo -l app=web | jq '[.items[] | select(.status.phase == "Running")] | length'; }
  wait_for 180 count_is 4 running_pods
  echo "pending -> 4 pods Running: $(elapsed "$t0" "$(now)") s"
  kj nodeclaims >"$dir/claims.json"; kj pods -n demo -l app=web >"$dir/pods.json"; kj nodes >"$dir/nodes.json"
  jq -r '.items[] | "  nodeclaim \(.metadata.name) node=\(.status.nodeName // "-") type=\(.metadata.labels["node.kubernetes.io/instance-type"] // "?")"' "$dir/claims.json"
  check "NodeClaims created by Adze for the pending pods (2 for 4 x 1.5 cpu on m5.xlarge)" \
    jqe '[.items[] | select(.metadata.labels["adze.sh/nodepool"] == "demo")] | length == 2' "$dir/claims.json"
  check "a Node registered for each NodeClaim (labelled adze.sh/nodepool=demo)" jqe --slurpfile c "$dir/claims.json" \
    '[.items[] | select(.metadata.labels["adze.sh/nodepool"] == "demo") | .metadata.name] | sort == ([$c[0].items[].status.nodeName] | sort) and length == 2' "$dir/nodes.json"
  check "all 4 pods Running" count_is 4 running_pods
  check "each pod bound to a node Adze launched for it (created after the pod, by a NodeClaim of the pool)" jqe \
    --slurpfile c "$dir/claims.json" --slurpfile n "$dir/nodes.json" \
    '([$c[0].items[] | select(.metadata.labels["adze.sh/nodepool"] == "demo") | .status.nodeName]) as $adze
     | ($n[0].items | map({key: .metadata.name, value: .metadata.creationTimestamp}) | from_entries) as $born
     | (.items | length) == 4 and all(.items[]; .spec.nodeName as $x | ($adze | any(. == $x)) and $born[$x] >= .metadata.creationTimestamp)' "$dir/pods.json"
  check "scheduled by adze-scheduler (the chart's kube-scheduler with the extender)" bash -c \
    "kubectl get events -n demo -o json | jqe '[.items[] | select(.reason == \"Scheduled\" and (.source.component // .reportingComponent // \"\") == \"adze-scheduler\")] | length >= 4' >/dev/null"
  extender_calls() { # the extender's request counter, read through its Service with the chart's scheduler client certificate
    local d=$dir/client port_pid port=18443 out secret svc f
    secret=$(k -n "$ns" get secrets -o name | grep -- '-scheduler-client-tls$' | head -1)
    svc=$(k -n "$ns" get services -l app.kubernetes.io/component=extender -o name | head -1)
    [[ -n "$secret" && -n "$svc" ]] || return 1
    mkdir -p "$d"
    for f in tls.crt tls.key; do k -n "$ns" get "$secret" -o "jsonpath={.data.${f//./\\.}}" | base64 -d >"$d/$f" || return 1; done
    k -n "$ns" port-forward "$svc" "$port:8443" >"$dir/port-forward.log" 2>&1 &
    port_pid=$!
    # The serving certificate names the Service, not 127.0.0.1: -k; the client certificate is the point.
    wait_for 20 curl -sfk --cert "$d/tls.crt" --key "$d/tls.key" "https://127.0.0.1:$port/healthz"
    out=$(curl -sfk --cert "$d/tls.crt" --key "$d/tls.key" "https://127.0.0.1:$port/metrics")
    kill "$port_pid" 2>/dev/null; wait "$port_pid" 2>/dev/null
    grep '^adze_extender_requests_total{verb="filter"}' <<<"$out"
  }
  local calls
  calls=$(extender_calls | awk '{print $2}')
  echo "extender filter calls: ${calls:-none}"
  check "kube-scheduler called the extender's filter through its Service (adze_extender_requests_total ${calls:-0})" \
    awk -v c="${calls:-0}" 'BEGIN{exit !(c > 0)}'

  # ---- 3. scale down: the emptied node is consolidated -------------------------------------
  local before
  before=$(jq -r '[.items[].status.nodeName] | sort | join(" ")' "$dir/claims.json")
  k -n demo scale deployment/web --replicas=1 >/dev/null
  t0=$(now)
  demo_claims() { k get nodeclaims -l adze.sh/nodepool=demo -o name | wc -l; }
  demo_nodes() { k get nodes -l adze.sh/nodepool=demo -o name | wc -l; }
  wait_for 180 count_is 1 demo_claims
  wait_for 60 count_is 1 demo_nodes
  echo "scaled 4 -> 1: one NodeClaim left after $(elapsed "$t0" "$(now)") s (before: $before; now: $(k get nodes -l adze.sh/nodepool=demo -o name | tr '\n' ' '))"
  check "scaled to 1 replica: the emptied node's NodeClaim consolidated away" count_is 1 demo_claims
  check "... and its Node removed" count_is 1 demo_nodes
  # Exactly one Adze node left and the pod on it: with two left, the pod on either would pass.
  check "the remaining pod still Running on the remaining (only) Adze node" bash -c \
    "kubectl get pods -n demo -l app=web -o json | jqe --argjson n \"\$(kubectl get nodes -l adze.sh/nodepool=demo -o json | jq -c '[.items[].metadata.name]')\" '(\$n | length) == 1 and (.items | length) == 1 and .items[0].status.phase == \"Running\" and .items[0].spec.nodeName == \$n[0]' >/dev/null"

  # ---- 4. helm uninstall -------------------------------------------------------------------
  # Capacity goes first (as with Karpenter before an uninstall): the workload, the NodePool and
  # its NodeClaims, whose finalizers the running provisioner releases.
  k delete namespace demo --wait=false >/dev/null
  k delete nodepool demo --wait=false >/dev/null
  k delete nodeclaims --all --wait=false >/dev/null
  wait_for 120 count_is 0 count k get nodeclaims -o name
  check "NodeClaims removed by the provisioner before the uninstall (finalizers released)" count_is 0 count k get nodeclaims -o name
  check "helm uninstall" helm_uninstall
  wait_for 90 count_is 0 count k -n "$ns" get pods -o name
  check "no Adze pods left" count_is 0 count k -n "$ns" get pods -o name
  local sel=app.kubernetes.io/instance=$release left
  left=$(k get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations,priorityclasses -l "$sel" -o name 2>&1
    k -n "$ns" get all,roles,rolebindings,serviceaccounts,secrets,configmaps,poddisruptionbudgets -l "$sel" -o name 2>&1
    k get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations -o name | grep -i adze)
  echo "left of the release: ${left:-nothing}"
  check "no RBAC, webhooks, workloads, Secrets or ConfigMaps of the release left" test -z "$left"
  check "no NodeClaims, NodePools or Adze Nodes left" count_is 0 count k get nodeclaims,nodepools,nodes -l adze.sh/nodepool -o name
  echo "left by design: the CRDs (Helm never deletes crds/) and the namespace $ns"

  if [[ "$engine" == docker && "${ADZE_KIND_KEEP:-0}" == 1 ]]; then echo "cluster kept: KUBECONFIG=$kcfg"; else
    t0=$(now)
    check "kind delete cluster" "${kind_cmd[@]}" delete cluster --name "$cluster" --kubeconfig "$kcfg"
    cluster_up=
    echo "cluster deleted in $(elapsed "$t0" "$(now)") s"
  fi
  (( failed == 0 ))
}

if [[ "${1:-}" == --inside ]]; then
  # podman, second half: in the run's network namespace (below), the cluster and the checks.
  dir=$2; kind_bin=$3
  # A failure part-way still deletes the cluster (kind's own teardown, checked outside).
  trap 'echo "$passed passed, $failed failed" >"$dir/inside.tally"; [[ -n "${cluster_up:-}" ]] && "$kind_bin" delete cluster --name "$cluster" >/dev/null 2>&1' EXIT
  podman_private
  inside
  exit
fi
t_start=$(now)
if [[ "$engine" == docker ]]; then
  for tool in docker kind kubectl jq; do command -v "$tool" >/dev/null || { echo "FAIL: $tool not found (the docker path needs docker, kind, kubectl, jq; helm or Python 3)"; exit 1; }; done
  dir=$(mktemp -d /tmp/adze-kind.XXXXXX)
  cleanup() {
    [[ "${ADZE_KIND_KEEP:-0}" == 1 ]] || kind delete cluster --name "$cluster" >/dev/null 2>&1
    [[ "${ADZE_KIND_KEEP:-0}" == 1 || "$failed" -gt 0 ]] || rm -rf "$dir"
  }
  trap cleanup EXIT
  inside
  echo "wall time $(elapsed "$t_start" "$(now)") s"
  e2e_summary
  exit
fi

# podman: prepare outside, run the cluster in a network namespace of its own, restore outside.
podman_prepare
# The run's directory once nothing before the cleanup below can exit.
dir=$(mktemp -d /tmp/adze-kind.XXXXXX)
podman_private
save_sysctls
made_modules=0
cleanup() {
  podman_teardown
  [[ "$made_modules" == 1 ]] && rmdir /lib/modules 2>/dev/null && echo "removed the empty /lib/modules made for kind"
  restore_sysctls || echo "FAIL: host settings not restored"
  if [[ "${ADZE_KIND_KEEP:-0}" == 1 || "$failed" -gt 0 ]]; then
    rm -rf "$dir/podman"; echo "logs kept in $dir"
  else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
# kind mounts /lib/modules into its nodes; a host without one (a container) gets an empty one.
if [[ ! -e /lib/modules ]]; then mkdir /lib/modules && made_modules=1; fi
# A fresh network namespace: podman's bridge, its iptables rules and forwarding setting, the
# API server's published port and every connection of the checks stay inside it.
ADZE_KIND_ENGINE=podman unshare --net -- bash "$root/e2e/kind/run.sh" --inside "$dir" "$kind_bin"
rc=$?
[[ -s "$dir/inside.tally" ]] && read -r passed _ failed _ <"$dir/inside.tally"
(( rc == 0 )) || (( failed > 0 )) || failed=1
check "kind delete cluster left no node container or volume" bash -c "[ -z \"\$(podman ps -aq; podman volume ls -q)\" ]"
podman_teardown
libpod_procs() { grep -ls libpod /proc/[0-9]*/cgroup; true; }  # processes in a cgroup of podman's
check "no process of the run's containers left on the host (none in a libpod cgroup)" count_is 0 count libpod_procs
check "host kernel settings put back as before the run" restore_sysctls
echo "wall time $(elapsed "$t_start" "$(now)") s"
e2e_summary
