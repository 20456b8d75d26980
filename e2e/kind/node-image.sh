#!/usr/bin/env bash
# Assembles a kind node image for Kubernetes 1.20.2 without pulling anything, for machines with
# no registry access (the project's CI): a Debian bookworm root filesystem (mmdebstrap: systemd,
# containerd, runc, the CNI plugins, iptables) plus the Kubernetes binaries e2e/harness builds
# from Debian's source, and the images kubeadm starts (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd, kube-proxy, pause) as archives the node imports into its containerd at
# boot. The result is imported into podman as IMAGE.
#
#   e2e/kind/node-image.sh IMAGE       (root; podman with the caller's CONTAINERS_* settings)
#   e2e/kind/node-image.sh --base-only (only the cached base root filesystem: the one step that
#                                       needs Debian's mirror, so run.sh takes it before it moves
#                                       into a network namespace of its own)
#
# What it is not, compared with kind's own kindest/node images: no CoreDNS image exists in
# Debian, so kubeadm's CoreDNS add-on is skipped (a kubeadm wrapper adds
# --skip-phases=addon/coredns) and the cluster has no DNS; no kindnetd either, so the node
# carries a static bridge CNI config (single-node clusters only: pod routes between nodes are
# what kindnetd adds); no local-path-provisioner (a StorageClass without a provisioner).
# The base root filesystem is cached in $ADZE_CACHE/kind-node/ (keyed by its package list).
set -euo pipefail
image=${1:?usage: node-image.sh IMAGE | --base-only}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache=${ADZE_CACHE:-$HOME/.cache/adze}
cp_bin=$cache/k8s-1.20.2/bin
node_bin=$cache/kubelet-1.20.2/bin
log() { echo "[node-image] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

base_only=0; [[ "$image" == --base-only ]] && base_only=1
if (( ! base_only )); then
  for b in "$cp_bin"/kube-{apiserver,controller-manager,scheduler} "$node_bin"/{kubelet,kube-proxy,kubeadm,pause}; do
    [[ -x "$b" ]] || die "$b missing (e2e/harness/build-k8s.sh builds it)"
  done
  etcd=$(command -v etcd) || die "etcd missing (Debian's etcd-server)"
  kubectl=$(command -v kubectl) || die "kubectl missing (Debian's kubernetes-client)"
fi
for p in mmdebstrap iptables conntrack; do
  command -v "$p" >/dev/null || die "$p missing"
done

# ---- base root filesystem (cached) --------------------------------------------------------
pkgs=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,conntrack,ethtool,socat,util-linux,mount,kmod,procps,ca-certificates,iproute2,libseccomp2
key=$(echo "bookworm $pkgs" | sha256sum | cut -c1-12)
base=$cache/kind-node/base-$key.tar
if [[ ! -f "$base" || ! -s "$base" ]]; then
  mkdir -p "$cache/kind-node"
  rm -rf "$base" "$base.tmp" "$cache"/kind-node/.base-"$key".*.tar  # an earlier run's leftovers
  # The partial file keeps a .tar ending and --format=tar: mmdebstrap picks its output format
  # from the name, and any other ending makes it a directory that must be empty on the next try.
  part=$cache/kind-node/.base-$key.$$.tar
  trap 'rm -f "$part"' EXIT
  # Debian's mirrors fail an `apt-get update` now and then; a second and third try, a little later.
  for try in 1 2 3; do
    log "mmdebstrap bookworm ($pkgs) -> $base (try $try)"
    if nice -n 5 mmdebstrap --quiet --variant=minbase --format=tar --include="$pkgs" \
      bookworm "$part" http://deb.debian.org/debian; then
      break
    fi
    rm -f "$part"
    [[ $try == 3 ]] && die "mmdebstrap failed three times (Debian's mirror unreachable?)"
    sleep $((try * 15))
  done
  mv "$part" "$base"
  trap - EXIT
fi
(( base_only )) && exit 0

work=$(mktemp -d /tmp/adze-kind-node.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs"
tar -C "$rootfs" -xf "$base"

# ---- images kubeadm's static pods and add-ons use ------------------------------------------
imgs=$rootfs/kind/images
mkdir -p "$imgs"
oci() { python3 "$root/e2e/node/oci-image.py" "$@" >&2; }
v=v1.20.2
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  oci --out "$imgs/$c.tar" --tag "k8s.gcr.io/$c:$v" --tag "registry.k8s.io/$c:$v" --libs \
    --file "$cp_bin/$c=/usr/local/bin/$c" --dir /tmp --dir /etc --dir /var
done
# kubeadm 1.20's etcd is 3.4.13; Debian bookworm's 3.4.23 takes the same flags.
oci --out "$imgs/etcd.tar" --tag k8s.gcr.io/etcd:3.4.13-0 --tag registry.k8s.io/etcd:3.4.13-0 --libs \
  --file "$etcd=/usr/local/bin/etcd" --dir /tmp --dir /var/lib/etcd
# kube-proxy drives iptables (nft backend, as the node's own iptables) and conntrack.
xt=(--file "$(readlink -f /usr/sbin/xtables-nft-multi)=/usr/sbin/xtables-nft-multi")
for l in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  xt+=(--symlink "/usr/sbin/$l=xtables-nft-multi")
done
for f in /usr/lib/x86_64-linux-gnu/xtables/*.so; do xt+=(--file "$(readlink -f "$f")=$f"); done
oci --out "$imgs/kube-proxy.tar" --tag "k8s.gcr.io/kube-proxy:$v" --tag "registry.k8s.io/kube-proxy:$v" --libs \
  --file "$node_bin/kube-proxy=/usr/local/bin/kube-proxy" --file "$(command -v conntrack)=/usr/sbin/conntrack" "${xt[@]}" \
  --dir /tmp --dir /run --dir /var/lib/kube-proxy --dir /lib/modules
oci --out "$imgs/pause.tar" --tag k8s.gcr.io/pause:3.2 --tag registry.k8s.io/pause:3.2 \
  --file "$node_bin/pause=/pause" --user 65535:65535 --entrypoint '["/pause"]'

# ---- Kubernetes on the node -----------------------------------------------------------------
install -m 0755 "$node_bin/kubelet" "$rootfs/usr/bin/kubelet"
install -m 0755 "$node_bin/kubeadm" "$rootfs/usr/bin/kubeadm.real"
install -m 0755 "$kubectl" "$rootfs/usr/bin/kubectl"
cat >"$rootfs/usr/bin/kubeadm" <<'SH'
#!/bin/sh
# No CoreDNS image exists offline (node-image.sh): `kubeadm init` skips that add-on.
if [ "$1" = init ]; then exec /usr/bin/kubeadm.real "$@" --skip-phases=addon/coredns; fi
exec /usr/bin/kubeadm.real "$@"
SH
chmod 0755 "$rootfs/usr/bin/kubeadm"
echo "$v" >"$rootfs/kind/version"

mkdir -p "$rootfs/kind/manifests" "$rootfs/etc/cni/net.d" "$rootfs/etc/containerd" \
  "$rootfs/etc/systemd/system/kubelet.service.d" "$rootfs/etc/systemd/system/multi-user.target.wants"
cat >"$rootfs/kind/manifests/default-storage.yaml" <<'YAML'
# No dynamic provisioner in the offline node image: a default class for static volumes only.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
YAML
# kind's pod subnet (10.244.0.0/16); one node, so one bridge holds every pod.
cat >"$rootfs/etc/cni/net.d/10-bridge.conflist" <<'JSON'
{"cniVersion": "0.4.0", "name": "kind-bridge", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
cat >"$rootfs/etc/containerd/config.toml" <<'TOML'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "k8s.gcr.io/pause:3.2"
  # The kubelet asks for negative OOM score adjustments, which need CAP_SYS_RESOURCE: a host
  # that is itself a container may not hold it, and every sandbox would fail to start.
  restrict_oom_score_adj = true
  # The node's root filesystem is an overlay; its /var a volume (kind), where containerd's
  # own overlays go.
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
TOML
# The images above go into containerd before the kubelet starts their pods.
cat >"$rootfs/etc/systemd/system/kind-images.service" <<'UNIT'
[Unit]
Description=Import the node's bundled images into containerd
After=containerd.service
Requires=containerd.service
Before=kubelet.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for i in /kind/images/*.tar; do ctr -n k8s.io images import "$i" || exit 1; done'
[Install]
WantedBy=multi-user.target
UNIT
cat >"$rootfs/etc/systemd/system/kubelet.service" <<'UNIT'
[Unit]
Description=kubelet
After=kind-images.service containerd.service
Wants=kind-images.service
[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=1s
StartLimitIntervalSec=0
[Install]
WantedBy=multi-user.target
UNIT
# The drop-in kubeadm's packages ship: kubeadm writes the files it names.
cat >"$rootfs/etc/systemd/system/kubelet.service.d/10-kubeadm.conf" <<'UNIT'
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
UNIT
# kubelet 1.20 in a container: containerd runtime, and no kernel-module or swap checks.
echo 'KUBELET_EXTRA_ARGS=--container-runtime=remote --container-runtime-endpoint=unix:///run/containerd/containerd.sock' \
  >"$rootfs/etc/default/kubelet"
for u in kubelet.service kind-images.service; do
  ln -sf "/etc/systemd/system/$u" "$rootfs/etc/systemd/system/multi-user.target.wants/$u"
done
# Units that have nothing to do in a container.
for u in getty@tty1.service serial-getty@ttyS0.service console-getty.service systemd-udevd.service \
  systemd-modules-load.service systemd-remount-fs.service sys-kernel-debug.mount sys-kernel-tracing.mount \
  systemd-logind.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$u"
done
: >"$rootfs/etc/machine-id"
install -m 0755 "$here/node-entrypoint.sh" "$rootfs/usr/local/bin/entrypoint"

log "importing $image"
tar -C "$rootfs" -c . | podman import \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change 'STOPSIGNAL SIGRTMIN+3' --change 'ENV container=podman' - "$image" >/dev/null
log "done: $image"
