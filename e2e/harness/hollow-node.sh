#!/usr/bin/env bash
# hollow-node.sh — one kubemark hollow node (real kubelet code over a fake container runtime)
# joined to a control plane made by control-plane.sh, authenticating as itself.
#
#   hollow-node.sh start DIR NAME [--cpu N] [--memory Q] [--ephemeral-storage Q] [--max-pods N]
#                  [--provider-id ID] [--labels k=v,...] [--taints k=v:Effect,...]
#                  [--kube-reserved r=q,...] [--system-reserved r=q,...] [--eviction-hard s=q,...]
#   hollow-node.sh stop DIR NAME [--kill]     SIGTERM (or SIGKILL: a crashed machine); waits
#   hollow-node.sh stop-all DIR               SIGKILL every node of DIR at once (a suite's cleanup)
#   hollow-node.sh stats DIR NAME             "pid=P rss_kb=R cpu_s=C" of the running kubelet
#   hollow-node.sh watch DIR INSTANCE_DIR [--boot-delay SECONDS]
#                                             start a node for every instance record the
#                                             simulated cloud writes (adze-provisioner run
#                                             --simulated-instance-dir), SECONDS after the
#                                             record appears (the machine's boot; default 0),
#                                             stop it when the record goes; runs until killed;
#                                             no new node starts while INSTANCE_DIR/.hold exists
#
# DIR is the control plane's directory. Each node lives in DIR/hollow/NAME: a client
# certificate (CN system:node:NAME, O system:nodes) signed by DIR/ca.key, its kubeconfig, the
# fake runtime's socket, the kubelet's root directory, kubelet.log and pid. Ports (kubelet,
# healthz) are picked free at random; the read-only port is off. The binary comes from
# build-kubemark.sh ($ADZE_KUBEMARK_BIN overrides).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KUBEMARK="${ADZE_KUBEMARK_BIN:-${ADZE_CACHE:-$HOME/.cache/adze}/kubemark-1.20.2/bin/kubemark}"

die() { echo "hollow-node: $*" >&2; exit 1; }
usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# A free TCP port on 127.0.0.1 in 20000-32767 (below the ephemeral range), not in $used.
used=" "
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12768))
    [[ "$used" == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then used+="$p "; echo "$p"; return; fi
  done
  die "no free port found"
}

node_cert() { # DIR NAME NODEDIR
  local dir=$1 name=$2 nd=$3
  [[ -f "$dir/ca.key" && -f "$dir/ca.crt" ]] || die "$dir has no ca.crt/ca.key (not a control-plane.sh directory?)"
  openssl ecparam -name prime256v1 -genkey -noout -out "$nd/node.key" 2>/dev/null
  openssl req -new -key "$nd/node.key" -subj "/O=system:nodes/CN=system:node:$name" -out "$nd/node.csr" 2>/dev/null
  # A random serial, not -CAcreateserial: `watch` signs several at once, and concurrent writes
  # of the shared ca.srl made a signing fail now and then (a node that never booted).
  openssl x509 -req -in "$nd/node.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 2 -out "$nd/node.crt" 2>/dev/null \
    || die "signing the node certificate failed"
  local server; server=$(grep '^APISERVER=' "$dir/env" | cut -d= -f2-)
  [[ -n "$server" ]] || die "$dir/env has no APISERVER"
  cat >"$nd/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: plane
  cluster: {server: "$server", certificate-authority: "$dir/ca.crt"}
users:
- name: node
  user: {client-certificate: "$nd/node.crt", client-key: "$nd/node.key"}
contexts:
- name: node
  context: {cluster: plane, user: node}
current-context: node
EOF
}

# NODEDIR: the pid if that kubelet is alive. The process must be this node's kubemark (its
# --kubeconfig is NODEDIR's), not any kubemark: pids wrap (pid_max is often 32768), and a stop
# of a node whose kubelet died long ago must not kill another suite's kubelet that got its pid.
running_pid() {
  local pid nd; pid=$(cat "$1/pid" 2>/dev/null) || return 1
  nd=$(realpath -m "$1")
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null \
    && tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "--kubeconfig=$nd/kubeconfig" && echo "$pid"
}

cmd_start() {
  local dir=$1 name=$2; shift 2
  [[ -x "$KUBEMARK" ]] || die "$KUBEMARK missing: run e2e/harness/build-kubemark.sh"
  [[ "$name" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "node name $name is not a DNS subdomain"
  local nd; nd=$(realpath -m "$dir/hollow/$name")
  if running_pid "$nd" >/dev/null; then die "$name is already running (pid $(cat "$nd/pid"))"; fi
  local args=()
  while (($#)); do
    [[ $# -ge 2 ]] || die "$1 needs a value"
    case $1 in
      --cpu|--memory|--ephemeral-storage|--max-pods|--provider-id|--kube-reserved|--system-reserved|--eviction-hard)
        args+=("$1=$2") ;;
      --labels) [[ -n "$2" ]] && args+=("--node-labels=$2") ;;
      --taints) [[ -n "$2" ]] && args+=("--register-with-taints=$2") ;;
      *) die "unknown option $1" ;;
    esac
    shift 2
  done
  rm -rf "$nd"; mkdir -p "$nd/tmp"
  node_cert "$dir" "$name" "$nd"
  # Under a lock, and never a port another node of this plane holds or is picking (`watch`
  # starts nodes concurrently; each start is its own process, so `used` alone cannot tell).
  local kport hport
  exec 9>"$dir/hollow/.ports.lock"; flock 9
  used=" $({ cat "$dir"/hollow/*/ports 2>/dev/null || true; } | tr '\n' ' ') "
  kport=$(free_port); used+="$kport "; hport=$(free_port)
  echo "$kport $hport" >"$nd/ports"
  flock -u 9; exec 9>&-
  echo "$hport" >"$nd/healthz-port"
  # TMPDIR: kubemark puts the kubelet's root directory there.
  TMPDIR="$nd/tmp" setsid "$KUBEMARK" --morph=kubelet --name="$name" --kubeconfig="$nd/kubeconfig" \
    --kubelet-port="$kport" --kubelet-read-only-port=0 --healthz-port="$hport" \
    --runtime-endpoint="unix://$nd/runtime.sock" --v="${ADZE_HOLLOW_VERBOSITY:-1}" "${args[@]}" \
    </dev/null >"$nd/kubelet.log" 2>&1 &
  echo $! >"$nd/pid"
  printf '%s\n' "${args[@]}" >"$nd/args"
  # Up when the kubelet logs "Started kubelet" or its server port accepts connections (both come
  # after the fake runtime and the kubelet's flags and sizing were accepted). Not /healthz:
  # kubemark-flags.patch sets its port, but the kubelet serves it from its own main (cmd/kubelet's
  # run()), which kubemark does not call, so nothing ever answers there; waiting on it cost every
  # start 30 s and a non-zero exit with the kubelet left running.
  for _ in $(seq 150); do
    if grep -q "Started kubelet" "$nd/kubelet.log" 2>/dev/null \
      || (exec 3<>"/dev/tcp/127.0.0.1/$kport") 2>/dev/null; then
      echo "started $name pid $(cat "$nd/pid")"; return 0
    fi
    # The pid just started, alive and not a zombie (not running_pid: until the child has exec'd
    # kubemark its cmdline is still this script's, and the --kubeconfig check called a starting
    # kubelet dead with 67 nodes starting at once). pid reuse is no concern within these 30 s.
    local st; st=$(awk '/^State:/{print $2}' "/proc/$(cat "$nd/pid")/status" 2>/dev/null)
    [[ -n "$st" && "$st" != Z ]] || { tail -n 20 "$nd/kubelet.log" >&2; die "$name exited at start"; }
    sleep 0.2
  done
  tail -n 20 "$nd/kubelet.log" >&2; die "$name: no \"Started kubelet\" and nothing listening on port $kport within 30 s"
}

cmd_stop() {
  local dir=$1 name=$2 sig=TERM; [[ "${3:-}" == --kill ]] && sig=KILL
  local nd="$dir/hollow/$name" pid
  pid=$(running_pid "$nd") || { echo "$name not running"; return 0; }
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  echo "stopped $name (SIG$sig)"
}

# Every node's kubelet killed at once, then waited for: one `stop` each takes seconds apiece
# with dozens of nodes on a loaded machine. Only pids that are still this plane's kubelets.
cmd_stop_all() {
  local dir=$1 nd pid pids=()
  for nd in "$dir"/hollow/*/; do
    [[ -d "$nd" ]] || continue
    pid=$(running_pid "${nd%/}") && { kill -KILL "$pid" 2>/dev/null || true; pids+=("$pid"); }
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  echo "stopped ${#pids[@]} hollow nodes (SIGKILL)"
}

cmd_stats() {
  local nd="$1/hollow/$2" pid
  pid=$(running_pid "$nd") || die "$2 not running"
  awk -v hz="$(getconf CLK_TCK)" -v pid="$pid" -v rss="$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status")" \
    '{ sub(/^.*\) /, ""); printf "pid=%s rss_kb=%s cpu_s=%.2f\n", pid, rss, ($12 + $13) / hz }' "/proc/$pid/stat"
}

# Flags for one instance record (JSON written by the simulated cloud), one per line.
record_flags() {
  jq -r '
    def kv: to_entries | map("\(.key)=\(.value)") | join(",");
    "--provider-id", .providerID,
    "--cpu", (.kubelet.cpu | tostring),
    "--memory", (.kubelet.memory | tostring),
    "--ephemeral-storage", (.kubelet.ephemeralStorage | tostring),
    "--max-pods", (.kubelet.maxPods | tostring),
    "--kube-reserved", (.kubelet.kubeReserved | kv),
    "--system-reserved", (.kubelet.systemReserved | kv),
    "--eviction-hard", (.kubelet.evictionHard | to_entries | map("\(.key)<\(.value)") | join(",")),
    "--labels", (.kubelet.nodeLabels | kv),
    "--taints", (.kubelet.registerWithTaints | join(","))' "$1"
}

cmd_watch() {
  local dir=$1 idir=$2 f name delay=0
  if (($# > 2)); then
    [[ "$3" == --boot-delay && $# == 4 ]] || die "watch: unknown arguments ${*:3} (only --boot-delay SECONDS)"
    [[ "$4" =~ ^[0-9]{1,3}$ ]] || die "watch: --boot-delay takes whole seconds 0-999, not '$4'"
    delay=$4
  fi
  mkdir -p "$idir" "$dir/hollow"
  # Machines boot side by side: each start runs in the background (a burst of records is not
  # booted one after another); a record removed while its node is starting waits for the start.
  declare -A started=() starting=()
  # Stopped (TERM/INT), the watch takes its pending starts with it: a start still in its boot
  # delay would otherwise launch a kubelet after the suite's cleanup had stopped them all.
  trap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM INT
  while true; do
    for f in "$idir"/*.json; do
      [[ -e "$f" ]] || continue
      [[ -e "$idir/.hold" ]] && break  # machines held in their boot (a suite's lever)
      name=$(basename "$f" .json)
      [[ -n "${started[$name]:-}" ]] && continue
      started[$name]=1
      local flags=()
      mapfile -t flags < <(record_flags "$f") || true
      # Empty values (no taints, no system-reserved) are dropped, not passed as "".
      local args=() i
      for ((i = 0; i + 1 < ${#flags[@]}; i += 2)); do
        [[ -n "${flags[i+1]}" ]] && args+=("${flags[i]}" "${flags[i+1]}")
      done
      echo "$(date -u +%FT%T.%3NZ) record $name"
      { ( sleep "$delay"; cmd_start "$dir" "$name" "${args[@]}" ) || echo "$(date -u +%FT%T.%3NZ) FAILED to start $name"; } &
      starting[$name]=$!
    done
    for name in "${!started[@]}"; do
      if [[ ! -e "$idir/$name.json" ]]; then
        echo "$(date -u +%FT%T.%3NZ) record $name removed"
        [[ -n "${starting[$name]:-}" ]] && { wait "${starting[$name]}" 2>/dev/null || true; }
        cmd_stop "$dir" "$name"
        unset "started[$name]" "starting[$name]"
      fi
    done
    sleep 0.3
  done
}

op=${1:-}; shift || true
case $op in
  stop-all) (($# == 1)) || usage; cmd_stop_all "$@"; exit ;;
esac
(($# >= 2)) || usage
case $op in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  stats) cmd_stats "$@" ;;
  watch) cmd_watch "$@" ;;
  *) usage ;;
esac
