#!/usr/bin/env bash
# node.sh — one REAL Kubernetes node for a harness control plane (e2e/harness/control-plane.sh):
# containerd 1.6 + runc (Debian), kubelet 1.20.2 and kube-proxy from e2e/harness/build-kubelet.sh,
# pod networking by Debian's CNI plugins (bridge + host-local + loopback).
#
#   e2e/node/node.sh up   DIR NODE_NAME IMAGE_ARCHIVE...   # DIR: the control plane's dir
#   e2e/node/node.sh down DIR                              # safe to call twice, or after a failed up
#
# Isolation, so `down` can remove everything even after a crash and nothing touches the host's
# network: the node lives in its own network namespace (adze-node-<hash of DIR>), joined to
# the host by a veth pair. containerd, kubelet, kube-proxy (and whatever the caller starts
# with `node_exec`) enter only that network namespace (nsenter --net), not a mount namespace,
# so the kubelet's volume mounts are visible to containerd. Their iptables rules, the CNI
# bridge and the pods' veths all live in that namespace; deleting it deletes them. Pod cgroups
# go under their own cgroup root (/adze-e2e-<hash>), state under DIR/node/.
#
# The pods reach the API server the way in-cluster clients do, through the `kubernetes`
# Service's ClusterIP: kube-proxy (iptables mode) DNATs it to the API server, which the caller
# must bind beyond loopback (ADZE_APISERVER_EXTRA_ARGS="--bind-address 0.0.0.0"); `up` points
# the Service's Endpoints (the harness runs the API server with --endpoint-reconciler-type
# none) at the host end of the veth. The serving certificate already names the ClusterIP.
#
# The node registers with its own client certificate (CN system:node:NAME, O system:nodes,
# signed by the plane's CA), so the Node authorizer and NodeRestriction apply to it.
# Requires root. Packages: containerd runc containernetworking-plugins iptables conntrack
# (e2e/install.sh installs them).
set -euo pipefail

CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
KBIN="${ADZE_KUBELET_BIN:-$CACHE/kubelet-1.20.2/bin}"
POD_CIDR="${ADZE_POD_CIDR:-10.244.0.0/24}"

log() { printf '[node] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

cmd=${1:-}; DIR=${2:-}
[[ -n "$cmd" && -n "$DIR" ]] || die "usage: node.sh up DIR NODE_NAME IMAGE_ARCHIVE... | down DIR"
DIR="$(cd "$DIR" && pwd)"
N="$DIR/node"
hash=$(printf '%s' "$DIR" | sha256sum | cut -c1-8)
NETNS="adze-node-$hash"
VETH_HOST="adzeh$hash"   # <= 15 characters
VETH_NODE="adzen$hash"
# A /30 per DIR, so two nodes (two suites in parallel) never share addresses.
octet=$(( 16#${hash:0:2} ))
HOST_IP="10.201.$octet.1"
NODE_IP="10.201.$octet.2"
CGROUP_ROOT="/adze-e2e-$hash"
in_ns() { nsenter --net="/var/run/netns/$NETNS" "$@"; }

start() { # NAME CMD...: in the node's netns, own session, log to $N/NAME.log, pid to $N/NAME.pid
  local name=$1; shift
  setsid nsenter --net="/var/run/netns/$NETNS" "$@" >"$N/$name.log" 2>&1 </dev/null &
  echo $! >"$N/$name.pid"
}
wait_for() { # SECONDS WHAT CMD...
  local limit=$1 what=$2; shift 2; local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= end )); then log "timed out waiting for $what"; return 1; fi
    sleep 0.5
  done
}

cert() { # NAME CN O: client certificate signed by the plane's CA
  openssl req -new -newkey rsa:2048 -nodes -keyout "$N/$1.key" -subj "/CN=$2${3:+/O=$3}" -out "$N/$1.csr" 2>/dev/null
  openssl x509 -req -in "$N/$1.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" -CAcreateserial -days 2 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$N/$1.crt" 2>/dev/null
}
kubeconfig() { # NAME: a kubeconfig for cert NAME reaching the API server over the veth
  cat >"$N/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "https://$HOST_IP:$APISERVER_PORT", certificate-authority: "$DIR/ca.crt", tls-server-name: localhost}}]
users: [{name: $1, user: {client-certificate: "$N/$1.crt", client-key: "$N/$1.key"}}]
contexts: [{name: e2e, context: {cluster: e2e, user: $1}}]
current-context: e2e
EOF
}

do_up() {
  local name=$1; shift
  set -a; . "$DIR/env"; set +a
  [[ -x "$KBIN/kubelet" && -x "$KBIN/kube-proxy" ]] || die "no kubelet in $KBIN: run e2e/harness/build-kubelet.sh"
  mkdir -p "$N"/{containerd,kubelet,net.d}
  echo "$name" >"$N/name"

  # --- network namespace + veth to the host ----------------------------------------------
  ip netns add "$NETNS"
  ip link add "$VETH_HOST" type veth peer name "$VETH_NODE"
  ip link set "$VETH_NODE" netns "$NETNS"
  ip addr add "$HOST_IP/30" dev "$VETH_HOST"
  ip link set "$VETH_HOST" up
  in_ns ip addr add "$NODE_IP/30" dev "$VETH_NODE"
  in_ns ip link set "$VETH_NODE" up
  in_ns ip link set lo up
  in_ns ip route add default via "$HOST_IP"
  in_ns sysctl -qw net.ipv4.ip_forward=1
  wait_for 10 "the API server over the veth" curl -fsS --max-time 2 --cacert "$DIR/ca.crt" \
    --resolve "localhost:$APISERVER_PORT:$HOST_IP" -H "Authorization: Bearer $ADZE_TOKEN" "https://localhost:$APISERVER_PORT/readyz" \
    || die "the API server does not answer on $HOST_IP:$APISERVER_PORT (was it started with --bind-address 0.0.0.0?)"

  # --- the kubernetes Service's endpoint -------------------------------------------------
  kubectl --kubeconfig "$KUBECONFIG" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: kubernetes, namespace: default}
subsets: [{addresses: [{ip: "$HOST_IP"}], ports: [{name: https, port: $APISERVER_PORT, protocol: TCP}]}]
EOF

  # --- containerd --------------------------------------------------------------------------
  cat >"$N/net.d/10-adze.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "adze-e2e", "plugins": [
  {"type": "bridge", "bridge": "adzecni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$N/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat >"$N/containerd.toml" <<EOF
version = 2
root = "$N/containerd/root"
state = "$N/containerd/state"
[grpc]
  address = "$N/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/adze-e2e/pause:e2e"
  # This machine lacks CAP_SYS_RESOURCE: lowering a container's oom_score_adj below the
  # runtime's own would fail every container start.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N/net.d"
EOF
  start containerd containerd --config "$N/containerd.toml"
  wait_for 30 containerd ctr -a "$N/containerd.sock" version || { tail -20 "$N/containerd.log" >&2; die "containerd did not start"; }
  local a
  for a in "$@"; do
    ctr -a "$N/containerd.sock" -n k8s.io images import "$a" >/dev/null || die "ctr images import $a"
  done
  log "containerd up; images: $(ctr -a "$N/containerd.sock" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

  # --- kubelet ---------------------------------------------------------------------------
  # The kubelet refuses a cgroupRoot that does not exist in every hierarchy; a new cpuset
  # cgroup starts with no CPUs or memory nodes, so it inherits its parent's.
  local h
  for h in /sys/fs/cgroup/*/; do
    mkdir -p "$h${CGROUP_ROOT#/}"
  done
  if [[ -d /sys/fs/cgroup/cpuset ]]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.mems"
  fi
  cert kubelet "system:node:$name" system:nodes
  kubeconfig kubelet
  local kport hport
  kport=$(free_port); hport=$(free_port)
  cat >"$N/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$DIR/ca.crt"}
authorization: {mode: Webhook}
address: $NODE_IP
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
# The CI disk is shared: do not evict the suite's pods because others filled it.
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
resolvConf: /etc/resolv.conf
serializeImagePulls: false
EOF
  start kubelet "$KBIN/kubelet" --config "$N/kubelet.yaml" --kubeconfig "$N/kubelet.kubeconfig" \
    --root-dir "$N/kubelet" --cert-dir "$N/kubelet/pki" --hostname-override "$name" --node-ip "$NODE_IP" \
    --container-runtime remote --container-runtime-endpoint "unix://$N/containerd.sock" \
    --runtime-request-timeout 5m --v 2
  wait_for 120 "node $name Ready" bash -c \
    "kubectl --kubeconfig '$KUBECONFIG' get node '$name' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True" \
    || { tail -30 "$N/kubelet.log" >&2; die "kubelet did not register a Ready node"; }
  # The harness runs no nodelifecycle controller (it would evict the suites' kubelet-less
  # nodes), so nothing lifts the not-ready taint admission put on the new Node: lift it
  # here once, as that controller would for a Ready node.
  kubectl --kubeconfig "$KUBECONFIG" taint node "$name" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  [[ "$(kubectl --kubeconfig "$KUBECONFIG" get node "$name" -o json \
        | jq '.metadata.name != null and ([.spec.taints[]? | select(.key | startswith("node.kubernetes.io/"))] | length == 0)')" == true ]] \
    || die "node $name still has a node.kubernetes.io taint"

  # --- kube-proxy --------------------------------------------------------------------------
  cert kube-proxy system:kube-proxy ""
  kubeconfig kube-proxy
  start kube-proxy "$KBIN/kube-proxy" --kubeconfig "$N/kube-proxy.kubeconfig" --proxy-mode iptables \
    --hostname-override "$name" --cluster-cidr "$POD_CIDR" --conntrack-max-per-core 0 \
    --healthz-bind-address "127.0.0.1:$(free_port)" --metrics-bind-address "127.0.0.1:$(free_port)" --v 2
  # The proxy is ready once the kubernetes Service answers through it from the node.
  local svc_ip
  svc_ip=$(kubectl --kubeconfig "$KUBECONFIG" get svc kubernetes -o jsonpath='{.spec.clusterIP}')
  wait_for 60 "kube-proxy routing $svc_ip:443" in_ns curl -fsS --max-time 2 --cacert "$DIR/ca.crt" \
    -H "Authorization: Bearer $ADZE_TOKEN" "https://$svc_ip/readyz" \
    || { tail -30 "$N/kube-proxy.log" >&2; die "the kubernetes Service is not reachable through kube-proxy"; }
  cat >"$N/env" <<EOF
NODE_NAME=$name
NODE_IP=$NODE_IP
NODE_HOST_IP=$HOST_IP
NODE_NETNS=$NETNS
NODE_CONTAINERD_SOCK=$N/containerd.sock
EOF
  log "node $name Ready (kubelet :$kport, netns $NETNS, node IP $NODE_IP); kube-proxy routes $svc_ip"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

kill_pidfile() {
  local f=$1 pid
  [[ -f "$f" ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

do_down() {
  [[ -d "$N" ]] || { ip netns del "$NETNS" 2>/dev/null || true; return 0; }
  kill_pidfile "$N/kube-proxy.pid"
  kill_pidfile "$N/kubelet.pid"
  # Containers outlive kubelet and containerd (their shims run on their own): kill every
  # task, then remove sandboxes' network namespaces and the containers themselves.
  local sock="$N/containerd.sock" t
  if [[ -S "$sock" ]] && ctr -a "$sock" version >/dev/null 2>&1; then
    for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 1
    for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true
    done
    for t in $(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io containers delete "$t" >/dev/null 2>&1 || true
    done
  fi
  kill_pidfile "$N/containerd.pid"
  # Shims of containers ctr could not reach (containerd already dead): by their -address.
  local p
  for p in $(pgrep -f "containerd-shim.*-address $sock" 2>/dev/null || true); do kill -KILL "$p" 2>/dev/null || true; done
  # Pod network namespaces the CRI pinned under /var/run/netns: the ones whose veth peer
  # is in this node's namespace (they are listed by the bridge), else those created since up.
  if [[ -f "$N/netns-before" ]]; then
    for t in $(ls /var/run/netns 2>/dev/null | grep '^cni-' || true); do
      grep -qx "$t" "$N/netns-before" || { umount "/var/run/netns/$t" 2>/dev/null; rm -f "/var/run/netns/$t"; }
    done
  fi
  ip netns del "$NETNS" 2>/dev/null || true
  ip link del "$VETH_HOST" 2>/dev/null || true
  # Every mount under DIR (overlay rootfs, shm, secret and projected tmpfs volumes), deepest first.
  local m
  for m in $(findmnt -rn -o TARGET | grep -F "$N/" | sort -r); do umount -l "$m" 2>/dev/null || true; done
  # The pod cgroups (deepest first; a cgroup directory goes once it has no processes).
  local c
  for c in /sys/fs/cgroup/*"$CGROUP_ROOT"; do
    [[ -d "$c" ]] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  # The kubelet writes container logs under /var/log/pods and /var/log/containers regardless
  # of --root-dir (1.20 has no setting for it): the entries of this node's pods.
  if [[ -f "$N/name" ]] && [[ -f "$N/started" ]]; then
    find /var/log/pods /var/log/containers -mindepth 1 -maxdepth 1 -newer "$N/started" -exec rm -rf {} + 2>/dev/null || true
  fi
  rm -rf "$N/containerd" "$N/kubelet"
  log "node down ($NETNS)"
}

case "$cmd" in
  up)
    [[ $# -ge 3 ]] || die "usage: node.sh up DIR NODE_NAME IMAGE_ARCHIVE..."
    [[ "$(id -u)" == 0 ]] || die "a real node needs root"
    mkdir -p "$N"
    touch "$N/started"
    ls /var/run/netns 2>/dev/null | grep '^cni-' >"$N/netns-before" || true
    # A failed `up` leaves nothing behind (set -e stays in force inside do_up this way).
    trap 'rc=$?; if ((rc)); then do_down; fi' EXIT
    do_up "${@:3}"
    ;;
  down) do_down ;;
  *) die "unknown command $cmd" ;;
esac
