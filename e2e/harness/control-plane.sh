#!/usr/bin/env bash
# control-plane.sh — run a real Kubernetes 1.20 control plane on loopback:
# etcd + kube-apiserver + kube-controller-manager + kube-scheduler.
# No kubelet, no container runtime, no Docker.
#
# Usage:
#   e2e/harness/build-control-plane.sh          # once; binaries are cached
#   e2e/harness/control-plane.sh up   DIR       # start everything, wait until usable
#   e2e/harness/control-plane.sh down DIR       # stop everything (safe to call twice)
#   e2e/harness/control-plane.sh status DIR     # print which processes are alive
#
# Tests MUST stop the plane in a trap, e.g.:
#   dir=$(mktemp -d); trap 'e2e/harness/control-plane.sh down "$dir"' EXIT
#   e2e/harness/control-plane.sh up "$dir"
#   set -a; . "$dir/env"; set +a     # KUBECONFIG, APISERVER, ADZE_TOKEN, ...
# (the processes are started in their own session with setsid, so they outlive
#  the `up` command and nothing but `down` stops them.)
#
# What `up` writes into DIR (DIR must not contain whitespace):
#   env               KEY=VALUE lines (no quoting): KUBECONFIG, APISERVER, ADZE_TOKEN,
#                     ADZE_CA_CERT, ETCD_ENDPOINT, *_PORT, *_PID, ADZE_CONTROL_PLANE_DIR,
#                     AUDIT_LOG
#   kubeconfig        admin kubeconfig (bearer token of user "admin" in system:masters, CA)
#   ca.crt ca.key     self-signed CA; apiserver.crt/.key is the serving cert (127.0.0.1, localhost)
#   front-proxy-*     requestheader CA and the apiserver's proxy client cert (aggregation)
#   sa.key sa.pub     service-account signing key pair
#   tokens.csv        token-auth file (admin, system:kube-scheduler, system:kube-controller-manager)
#   scheduler.yaml    KubeSchedulerConfiguration actually used (kubescheduler.config.k8s.io/v1beta1)
#   audit-policy.yaml, audit.log
#                     the apiserver's audit log (audit.k8s.io/v1, JSON lines, Metadata level) of
#                     every request by the admin or a ServiceAccount outside kube-system: what
#                     e2e/rbac.py reads to prove Adze's RBAC (403s, calls not declared)
#   *.pid, *.log      one per process: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
#   etcd/             etcd data
#
# `up` returns once /readyz is ok, the controller-manager and scheduler answer
# /healthz, and the `default` ServiceAccount in namespace `default` has its token
# secret (so pods can be created right away). On failure it names the component and
# the reason (also in DIR/up-failure), prints that component's log tail (kept as
# DIR/NAME.log.failed), stops what it started and exits non-zero. Free ports are chosen
# below the kernel's ephemeral range; if a component still loses its port to another
# process, `up` retries with fresh ports (3 attempts).
#
# There is no kubelet. Whoever creates a Node must set its status (capacity,
# allocatable, Ready condition) and remove the `node.kubernetes.io/not-ready`
# taint that the TaintNodesByCondition admission plugin adds on creation; the
# nodelifecycle controller is disabled, so nothing re-adds it or evicts pods.
#
# Environment (all optional):
#   ADZE_K8S_BIN            dir with the three k8s binaries (default ${ADZE_CACHE:-$HOME/.cache/adze}/k8s-1.20.2/bin)
#   ADZE_ETCD_BIN           etcd binary (default: etcd on PATH, Debian's etcd-server)
#   ADZE_APISERVER_PORT     apiserver secure port         (default: a free port)
#   ADZE_ETCD_CLIENT_PORT   etcd client port              (default: a free port)
#   ADZE_ETCD_PEER_PORT     etcd peer port                (default: a free port)
#   ADZE_KCM_PORT           controller-manager https port (default: a free port)
#   ADZE_SCHEDULER_PORT     scheduler https port          (default: a free port)
#   ADZE_SERVICE_CIDR       --service-cluster-ip-range    (default 10.96.0.0/16)
#   ADZE_KCM_CONTROLLERS    --controllers                 (default below)
#   ADZE_NODE_LIFECYCLE=1   nodes are played by kubelets (hollow-node.sh): the node lifecycle
#                           controller on (a stopped kubelet's Node turns NotReady, a new
#                           one's not-ready taint is lifted), monitor period 2s, grace
#                           ADZE_NODE_MONITOR_GRACE (default 20s)
#   ADZE_SCHEDULER_CONFIG   a KubeSchedulerConfiguration file (v1beta1), e.g. with `extenders:`.
#                           "@DIR@" in it is replaced by DIR. If it has no top-level
#                           `clientConnection:` / `leaderElection:` keys they are appended
#                           (scheduler kubeconfig, leaderElect: false).
#   ADZE_APISERVER_EXTRA_ARGS, ADZE_KCM_EXTRA_ARGS, ADZE_SCHEDULER_EXTRA_ARGS
#                           extra flags (word-split) for each component
#   ADZE_LOG_VERBOSITY      klog -v for the k8s components (default 1)
#   ADZE_READY_TIMEOUT      seconds to wait for each readiness step (default 120)
set -euo pipefail

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${ADZE_CACHE:-$HOME/.cache/adze}"
K8S_BIN="${ADZE_K8S_BIN:-$CACHE/k8s-1.20.2/bin}"
SERVICE_CIDR="${ADZE_SERVICE_CIDR:-10.96.0.0/16}"
# Controllers: everything except what needs a cloud or a kubelet/node lifecycle.
#  nodeipam             (needs --allocate-node-cidrs; no CNI here)
#  nodelifecycle        (no kubelet heartbeats: it would mark nodes Unknown, taint and evict)
#  cloud-node-lifecycle, route, service (need a cloud provider)
#  ttl                  (only annotates nodes for kubelets; would race with tests patching nodes)
DEFAULT_CONTROLLERS='*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-route,-service,-ttl'
LIFECYCLE_ARGS=()
if [[ "${ADZE_NODE_LIFECYCLE:-0}" == 1 ]]; then
  DEFAULT_CONTROLLERS=${DEFAULT_CONTROLLERS/,-nodelifecycle/}
  LIFECYCLE_ARGS=(--node-monitor-grace-period "${ADZE_NODE_MONITOR_GRACE:-20s}" --node-monitor-period 2s)
elif [[ "${ADZE_NODE_LIFECYCLE:-0}" != 0 ]]; then
  echo "control-plane.sh: ADZE_NODE_LIFECYCLE is 0 or 1, not '$ADZE_NODE_LIFECYCLE'" >&2; exit 2
fi
KCM_CONTROLLERS="${ADZE_KCM_CONTROLLERS:-$DEFAULT_CONTROLLERS}"
VERBOSITY="${ADZE_LOG_VERBOSITY:-1}"
READY_TIMEOUT="${ADZE_READY_TIMEOUT:-120}"
COMPONENTS=(kube-scheduler kube-controller-manager kube-apiserver etcd)   # stop order

log() { printf '[control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

usage() {
  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------------------
# helpers

# is_ours PID NAME: PID alive and its command line mentions NAME (guards pid reuse)
is_ours() {
  local pid=$1 name=$2
  [[ -n "$pid" && "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  local argv0
  argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1) || return 1
  [[ "${argv0##*/}" == "$name" ]]
}

port_in_use() {
  ss -Htln 2>/dev/null | awk '{print $4}' | grep -Eq "[:.]$1\$"
}

# Ports are chosen in the parent shell (never in $(...)), so the list of ports already
# handed out survives between choices. Random ports come from below the kernel's ephemeral
# range: a port inside it can be taken by any outgoing connection between our check and the
# component's bind.
USED_PORTS=" "
ephemeral_low() {
  local low
  low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true)
  [[ "$low" =~ ^[0-9]+$ ]] || low=32768
  echo "$low"
}
# pick_port VAR VALUE_FROM_ENV: sets VAR to VALUE_FROM_ENV (must be free) or to a free port.
pick_port() {
  local var=$1 want=${2:-} p i low
  if [[ -n "$want" ]]; then
    [[ "$USED_PORTS" == *" $want "* ]] && die "port $want is given to two components"
    port_in_use "$want" && die "port $want is already in use"
    p=$want
  else
    low=${EPHEMERAL_LOW:-32768}
    p=
    for ((i = 0; i < 500; i++)); do
      local c=$((10000 + RANDOM % (low - 10000)))
      [[ "$USED_PORTS" == *" $c "* ]] && continue
      port_in_use "$c" && continue
      p=$c
      break
    done
    [[ -n "$p" ]] || die "could not find a free port for $var"
  fi
  USED_PORTS+="$p "
  printf -v "$var" '%s' "$p"
}

# start NAME CMD... : run in its own session, log to DIR/NAME.log, pid to DIR/NAME.pid
start() {
  local name=$1
  shift
  log "starting $name"
  printf '%q ' "$@" >"$DIR/$name.cmdline"
  echo >>"$DIR/$name.cmdline"
  setsid "$@" </dev/null >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

pid_of() { cat "$DIR/$1.pid" 2>/dev/null || true; }

# fail_with_log NAME MESSAGE: say which component failed and why, show its log, stop
# everything. Exit status 3 means the component could not bind its port (another process
# took it after we chose it); `up` then retries with fresh ports.
fail_with_log() {
  local rc=1 reason=$2
  if [[ -f "$DIR/$1.log" ]] && grep -qiE 'address already in use|bind: ' "$DIR/$1.log"; then
    rc=3
    reason="$reason (port conflict: $(grep -iE -m1 'address already in use|bind: ' "$DIR/$1.log" | cut -c1-200))"
  fi
  log "ERROR: $reason"
  if [[ -f "$DIR/$1.log" ]]; then
    log "---- last 40 lines of $DIR/$1.log ----"
    tail -n 40 "$DIR/$1.log" >&2 || true
    log "----"
    cp "$DIR/$1.log" "$DIR/$1.log.failed" 2>/dev/null || true
  fi
  echo "$1: $reason" >"$DIR/up-failure"
  do_down
  exit "$rc"
}

# wait_for NAME DESCRIPTION CMD... : retry CMD until success; NAME's process must stay alive
wait_for() {
  local name=$1 what=$2
  shift 2
  local deadline=$((SECONDS + READY_TIMEOUT))
  while ! "$@" >/dev/null 2>&1; do
    is_ours "$(pid_of "$name")" "$name" || fail_with_log "$name" "$name exited while waiting for $what"
    ((SECONDS < deadline)) || fail_with_log "$name" "timed out after ${READY_TIMEOUT}s waiting for $what"
    sleep 0.25
  done
}

api_get() { # api_get PATH  (admin token)
  curl -fsS --max-time 5 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$APISERVER$1"
}

write_kubeconfig() { # write_kubeconfig FILE USER TOKEN
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: adze-e2e
  cluster:
    server: $APISERVER
    certificate-authority: $DIR/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: adze-e2e
  context:
    cluster: adze-e2e
    user: $2
current-context: adze-e2e
EOF
  chmod 600 "$1"
}

# ---------------------------------------------------------------------------
do_down() {
  local name pid i any=0
  for name in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$name")
    if is_ours "$pid" "$name"; then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      any=1
    fi
  done
  # wait up to ~10s for a clean exit, then SIGKILL what is left
  for ((i = 0; i < 40; i++)); do
    local alive=0
    for name in "${COMPONENTS[@]}"; do
      is_ours "$(pid_of "$name")" "$name" && alive=1
    done
    ((alive)) || break
    sleep 0.25
  done
  for name in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$name")
    if is_ours "$pid" "$name"; then
      log "killing $name (pid $pid)"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/$name.pid"
  done
  ((any)) || log "nothing running in $DIR"
  return 0
}

do_status() {
  local name pid rc=0
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    pid=$(pid_of "$name")
    if is_ours "$pid" "$name"; then echo "$name running (pid $pid)"; else echo "$name stopped"; rc=1; fi
  done
  return $rc
}

do_up() {
  local t0=$SECONDS name
  for name in kube-apiserver kube-controller-manager kube-scheduler; do
    [[ -x "$K8S_BIN/$name" ]] || die "$K8S_BIN/$name not found; run $HARNESS_DIR/build-control-plane.sh first"
  done
  local ETCD_BIN="${ADZE_ETCD_BIN:-$(command -v etcd || true)}"
  [[ -x "$ETCD_BIN" ]] || die "etcd not found (apt-get install etcd-server, or run build-control-plane.sh)"
  for c in openssl curl ss setsid; do command -v "$c" >/dev/null || die "$c not found"; done

  for name in "${COMPONENTS[@]}"; do
    is_ours "$(pid_of "$name")" "$name" && die "$name is already running from $DIR (pid $(pid_of "$name")); run: $0 down $DIR"
  done

  # fresh state every time (only files this script owns)
  rm -rf "$DIR/etcd" "$DIR"/*.pid "$DIR/up-failure" "$DIR"/*.log "$DIR/audit-policy.yaml" "$DIR"/*.cmdline "$DIR/env" "$DIR/kcm-certs" "$DIR/scheduler-certs" "$DIR/apiserver-certs"
  mkdir -p "$DIR"

  local ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT SCHEDULER_PORT
  EPHEMERAL_LOW=$(ephemeral_low)
  pick_port ETCD_CLIENT_PORT "${ADZE_ETCD_CLIENT_PORT:-}"
  pick_port ETCD_PEER_PORT "${ADZE_ETCD_PEER_PORT:-}"
  pick_port APISERVER_PORT "${ADZE_APISERVER_PORT:-}"
  pick_port KCM_PORT "${ADZE_KCM_PORT:-}"
  pick_port SCHEDULER_PORT "${ADZE_SCHEDULER_PORT:-}"
  log "ports: etcd client $ETCD_CLIENT_PORT, etcd peer $ETCD_PEER_PORT, apiserver $APISERVER_PORT, controller-manager $KCM_PORT, scheduler $SCHEDULER_PORT"
  # With --config, kube-scheduler 1.20 ignores --port 0 and serves plain HTTP healthz/metrics
  # on the config's address, default 0.0.0.0:10251: two control planes on one machine then
  # collide. Give it a free loopback port instead (unless the config names one).
  local SCHEDULER_INSECURE_PORT
  pick_port SCHEDULER_INSECURE_PORT ""
  APISERVER="https://127.0.0.1:$APISERVER_PORT"
  local ETCD_ENDPOINT="http://127.0.0.1:$ETCD_CLIENT_PORT"

  # --- PKI and tokens ---------------------------------------------------------
  log "generating CA, serving cert, service-account keys and tokens in $DIR"
  # first IP of the service range (the `kubernetes` service ClusterIP)
  local svc_ip
  svc_ip=$(awk -F'[./]' '{printf "%d.%d.%d.%d", $1, $2, $3, $4 + 1}' <<<"$SERVICE_CIDR")
  (
    set -e
    cd "$DIR"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
      -keyout ca.key -out ca.crt -subj "/CN=adze-e2e-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout apiserver.key -out apiserver.csr \
      -subj "/CN=kube-apiserver" 2>/dev/null
    cat >apiserver.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,IP:$svc_ip,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -days 3650 -sha256 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    rm -f apiserver.csr apiserver.ext ca.srl
    # front-proxy (requestheader) CA + client: lets the controller-manager and
    # scheduler load the requestheader bundle (else they log errors forever) and
    # makes aggregated APIs possible.
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
      -keyout front-proxy-ca.key -out front-proxy-ca.crt -subj "/CN=adze-e2e-front-proxy-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout front-proxy-client.key -out front-proxy-client.csr \
      -subj "/CN=front-proxy-client" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >front-proxy-client.ext
    openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial \
      -days 3650 -sha256 -extfile front-proxy-client.ext -out front-proxy-client.crt 2>/dev/null
    rm -f front-proxy-client.csr front-proxy-client.ext front-proxy-ca.srl
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 644 ca.crt apiserver.crt front-proxy-ca.crt front-proxy-client.crt sa.pub
  ) || die "openssl failed"
  ADMIN_TOKEN=$(openssl rand -hex 24)
  local SCHED_TOKEN KCM_TOKEN
  SCHED_TOKEN=$(openssl rand -hex 24)
  KCM_TOKEN=$(openssl rand -hex 24)
  (
    umask 077
    cat >"$DIR/tokens.csv" <<EOF
$ADMIN_TOKEN,admin,adze-admin,"system:masters"
$SCHED_TOKEN,system:kube-scheduler,adze-kube-scheduler
$KCM_TOKEN,system:kube-controller-manager,adze-kube-controller-manager
EOF
  )
  write_kubeconfig "$DIR/kubeconfig" admin "$ADMIN_TOKEN"
  write_kubeconfig "$DIR/scheduler.kubeconfig" system:kube-scheduler "$SCHED_TOKEN"
  write_kubeconfig "$DIR/controller-manager.kubeconfig" system:kube-controller-manager "$KCM_TOKEN"

  # --- scheduler config -------------------------------------------------------
  local sched_cfg="$DIR/scheduler.yaml"
  if [[ -n "${ADZE_SCHEDULER_CONFIG:-}" ]]; then
    [[ -f "$ADZE_SCHEDULER_CONFIG" ]] || die "ADZE_SCHEDULER_CONFIG=$ADZE_SCHEDULER_CONFIG not found"
    log "scheduler config from $ADZE_SCHEDULER_CONFIG"
    sed "s|@DIR@|$DIR|g" "$ADZE_SCHEDULER_CONFIG" >"$sched_cfg"
    echo >>"$sched_cfg"
  else
    cat >"$sched_cfg" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
EOF
  fi
  grep -q '^clientConnection:' "$sched_cfg" || printf 'clientConnection:\n  kubeconfig: %s\n' "$DIR/scheduler.kubeconfig" >>"$sched_cfg"
  grep -q '^leaderElection:' "$sched_cfg" || printf 'leaderElection:\n  leaderElect: false\n' >>"$sched_cfg"
  grep -q '^healthzBindAddress:' "$sched_cfg" || printf 'healthzBindAddress: 127.0.0.1:%s\n' "$SCHEDULER_INSECURE_PORT" >>"$sched_cfg"
  grep -q '^metricsBindAddress:' "$sched_cfg" || printf 'metricsBindAddress: 127.0.0.1:%s\n' "$SCHEDULER_INSECURE_PORT" >>"$sched_cfg"

  # --- audit policy -------------------------------------------------------------
  # ServiceAccount requests outside kube-system (where the components run under their chart
  # ServiceAccounts) and the admin's (so a component started with admin credentials shows, by
  # its User-Agent). The controller-manager's kube-system ServiceAccounts and the scheduler
  # would drown the log, except the scheduler's bindings: with them every binding is in the log
  # whoever makes it (kube-scheduler, or the extender's ServiceAccount), so both arms of the
  # extender's throughput comparison pay the same audit cost and are timed from the same clock
  # (e2e/harness/bind-rate.py). Metadata level says who did what to which resource and the
  # response code, without bodies. RequestReceived is dropped (no response code yet).
  cat >"$DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    userGroups: ["system:serviceaccounts:kube-system"]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: Metadata
    users: ["admin"]
  - level: Metadata
    users: ["system:kube-scheduler"]
    verbs: ["create"]
    resources: [{group: "", resources: ["pods/binding"]}]
  - level: None
EOF

  # --- etcd -------------------------------------------------------------------
  start etcd "$ETCD_BIN" \
    --name adze-e2e \
    --data-dir "$DIR/etcd" \
    --listen-client-urls "$ETCD_ENDPOINT" \
    --advertise-client-urls "$ETCD_ENDPOINT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "adze-e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster-state new \
    --snapshot-count 10000 \
    --quota-backend-bytes $((2 * 1024 * 1024 * 1024)) \
    --log-level warn
  wait_for etcd "etcd /health" bash -c "curl -fsS --max-time 2 $ETCD_ENDPOINT/health | grep -q '\"health\":\"true\"'"
  log "etcd healthy at $ETCD_ENDPOINT (+$((SECONDS - t0))s)"

  # --- kube-apiserver -----------------------------------------------------------
  # shellcheck disable=SC2086
  start kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "$ETCD_ENDPOINT" \
    --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 \
    --secure-port "$APISERVER_PORT" \
    --insecure-port 0 \
    --cert-dir "$DIR/apiserver-certs" \
    --tls-cert-file "$DIR/apiserver.crt" \
    --tls-private-key-file "$DIR/apiserver.key" \
    --client-ca-file "$DIR/ca.crt" \
    --token-auth-file "$DIR/tokens.csv" \
    --requestheader-client-ca-file "$DIR/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$DIR/front-proxy-client.crt" \
    --proxy-client-key-file "$DIR/front-proxy-client.key" \
    --anonymous-auth=false \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --service-account-key-file "$DIR/sa.pub" \
    --service-account-signing-key-file "$DIR/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --endpoint-reconciler-type none \
    --allow-privileged=true \
    --profiling=false \
    --audit-policy-file "$DIR/audit-policy.yaml" \
    --audit-log-path "$DIR/audit.log" \
    --audit-log-format json \
    --audit-log-mode blocking \
    --v "$VERBOSITY" \
    ${ADZE_APISERVER_EXTRA_ARGS:-}
  wait_for kube-apiserver "kube-apiserver /readyz" bash -c "curl -fsS --max-time 5 --cacert '$DIR/ca.crt' -H 'Authorization: Bearer $ADMIN_TOKEN' '$APISERVER/readyz' | grep -qx ok"
  log "kube-apiserver ready at $APISERVER (+$((SECONDS - t0))s)"

  # --- kube-controller-manager -----------------------------------------------------
  # shellcheck disable=SC2086
  start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 \
    --secure-port "$KCM_PORT" \
    --port 0 \
    --cert-dir "$DIR/kcm-certs" \
    --controllers "$KCM_CONTROLLERS" \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$DIR/sa.key" \
    --root-ca-file "$DIR/ca.crt" \
    --cluster-signing-cert-file "$DIR/ca.crt" \
    --cluster-signing-key-file "$DIR/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --leader-elect=false \
    --profiling=false \
    --v "$VERBOSITY" \
    "${LIFECYCLE_ARGS[@]}" \
    ${ADZE_KCM_EXTRA_ARGS:-}

  # --- kube-scheduler ---------------------------------------------------------------
  # shellcheck disable=SC2086
  start kube-scheduler "$K8S_BIN/kube-scheduler" \
    --config "$sched_cfg" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 \
    --secure-port "$SCHEDULER_PORT" \
    --port 0 \
    --cert-dir "$DIR/scheduler-certs" \
    --profiling=false \
    --v "$VERBOSITY" \
    ${ADZE_SCHEDULER_EXTRA_ARGS:-}

  wait_for kube-controller-manager "kube-controller-manager /healthz" bash -c "curl -ksf --max-time 2 https://127.0.0.1:$KCM_PORT/healthz | grep -qx ok"
  wait_for kube-scheduler "kube-scheduler /healthz" bash -c "curl -ksf --max-time 2 https://127.0.0.1:$SCHEDULER_PORT/healthz | grep -qx ok"
  log "controller-manager and scheduler healthy (+$((SECONDS - t0))s)"

  # The ServiceAccount admission plugin (1.20) rejects pods until the namespace's
  # `default` ServiceAccount exists and has its token secret.
  wait_for kube-controller-manager "default/default ServiceAccount token" bash -c \
    "curl -fsS --max-time 5 --cacert '$DIR/ca.crt' -H 'Authorization: Bearer $ADMIN_TOKEN' '$APISERVER/api/v1/namespaces/default/serviceaccounts/default' | grep -q '\"secrets\"'"

  cat >"$DIR/env" <<EOF
ADZE_CONTROL_PLANE_DIR=$DIR
KUBECONFIG=$DIR/kubeconfig
APISERVER=$APISERVER
ADZE_TOKEN=$ADMIN_TOKEN
ADZE_CA_CERT=$DIR/ca.crt
AUDIT_LOG=$DIR/audit.log
ETCD_ENDPOINT=$ETCD_ENDPOINT
APISERVER_PORT=$APISERVER_PORT
ETCD_CLIENT_PORT=$ETCD_CLIENT_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
KCM_PORT=$KCM_PORT
SCHEDULER_PORT=$SCHEDULER_PORT
ETCD_PID=$(pid_of etcd)
APISERVER_PID=$(pid_of kube-apiserver)
KCM_PID=$(pid_of kube-controller-manager)
SCHEDULER_PID=$(pid_of kube-scheduler)
EOF
  log "control plane up in $((SECONDS - t0))s: $APISERVER (source $DIR/env; KUBECONFIG=$DIR/kubeconfig)"
}

# ---------------------------------------------------------------------------
[[ $# -eq 2 ]] || usage
cmd=$1
DIR=$2
[[ "$DIR" =~ [[:space:]] ]] && die "DIR must not contain whitespace: '$DIR'"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
ADMIN_TOKEN=""
APISERVER=""
case "$cmd" in
  up)
    # Each attempt is a fresh process (keeps `set -e` in force); only a port conflict retries.
    for attempt in 1 2 3; do
      rc=0
      bash "${BASH_SOURCE[0]}" up-once "$DIR" || rc=$?
      ((rc == 0)) && exit 0
      if ((rc != 3 || attempt == 3)); then
        log "control plane up FAILED: $(cat "$DIR/up-failure" 2>/dev/null || echo "see the messages above")"
        exit 1
      fi
      log "port conflict; retrying with fresh ports (attempt $((attempt + 1)) of 3)"
    done
    ;;
  up-once) do_up ;;
  down) do_down ;;
  status) do_status ;;
  *) usage ;;
esac
