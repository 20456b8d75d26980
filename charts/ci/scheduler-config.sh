# shellcheck shell=bash
# Sourced by charts/ci/check.sh and e2e/chart.sh with $dir set: points the harness at a
# kube-scheduler config whose insecure healthz/metrics port (1.20's fixed 10251 otherwise)
# is a free one, so these control planes start beside another one on the same machine.
# shellcheck disable=SC2154 # dir is the caller's
sched_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir.scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
healthzBindAddress: 127.0.0.1:$sched_port
metricsBindAddress: 127.0.0.1:$sched_port
YAML
export ADZE_SCHEDULER_CONFIG=$dir.scheduler.yaml
