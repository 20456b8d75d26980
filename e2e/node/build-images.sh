#!/usr/bin/env bash
# Assembles the image archives e2e/install.sh imports into containerd (no container engine or
# registry on the CI machine), into DIR:
#   adze.tar     the chart's default image (<image.repository>:<appVersion>, i.e.
#                docker.io/library/adze:<appVersion>): the three release binaries at
#                /usr/local/bin like the Dockerfile's image, their shared libraries, CA
#                certificates, and the non-root user 65532 the chart's securityContext runs as.
#   busybox.tar  docker.io/adze-e2e/busybox:e2e from Debian's busybox-static (test workloads).
#   pause.tar    localhost/adze-e2e/pause:e2e, the pod sandbox (build-kubelet.sh's pause).
# Usage: e2e/node/build-images.sh DIR RELEASE_DIR PAUSE_BINARY
set -euo pipefail
out=$1 release=$2 pause=$3
here="$(cd "$(dirname "$0")" && pwd)"
chart="$here/../../charts/adze"
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$chart/Chart.yaml")
repo=$(sed -n '/^image:/,/^[a-z]/s/^  repository: *//p' "$chart/values.yaml")
[[ -n "$app_version" && -n "$repo" ]] || { echo "cannot read image.repository / appVersion from the chart" >&2; exit 1; }
# A reference without a registry or namespace is normalised by containerd's CRI like Docker.
case "$repo" in */*) ref="$repo" ;; *) ref="docker.io/library/$repo" ;; esac
[[ "${ref%%/*}" == *.* || "${ref%%/*}" == localhost ]] || ref="docker.io/$ref"
mkdir -p "$out"
passwd='root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n'
group='root:x:0:\nnonroot:x:65532:\n'
for b in adze-provisioner adze-extender adze-agent; do
  [[ -x "$release/$b" ]] || { echo "$release/$b missing (cargo build --release)" >&2; exit 1; }
done
python3 "$here/oci-image.py" --out "$out/adze.tar" --tag "$ref:$app_version" --user 65532:65532 --libs \
  --file "$release/adze-provisioner=/usr/local/bin/adze-provisioner" \
  --file "$release/adze-extender=/usr/local/bin/adze-extender" \
  --file "$release/adze-agent=/usr/local/bin/adze-agent" \
  --file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt \
  --text "/etc/passwd=$passwd" --text "/etc/group=$group" \
  --dir /tmp --dir /home/nonroot --dir /proc --dir /sys --dir /dev \
  --entrypoint '["/usr/local/bin/adze-provisioner"]' --cmd '["--help"]'
bb=/bin/busybox
[[ -x $bb ]] && ! ldd "$bb" >/dev/null 2>&1 || { echo "$bb is not Debian's static busybox (apt-get install busybox-static)" >&2; exit 1; }
links=()
for applet in sh sleep echo cat date trap true false ls touch test mkdir kill ps; do links+=(--symlink "/bin/$applet=busybox"); done
python3 "$here/oci-image.py" --out "$out/busybox.tar" --tag docker.io/adze-e2e/busybox:e2e \
  --file "$bb=/bin/busybox" "${links[@]}" --dir /tmp --dir /proc --dir /sys --dir /dev --dir /etc \
  --cmd '["/bin/sh"]'
python3 "$here/oci-image.py" --out "$out/pause.tar" --tag localhost/adze-e2e/pause:e2e \
  --file "$pause=/pause" --user 65535:65535 --entrypoint '["/pause"]'
echo "$ref:$app_version" >"$out/adze.ref"
