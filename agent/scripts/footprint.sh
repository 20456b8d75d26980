#!/usr/bin/env bash
# Measures a running process's footprint: resident memory (VmRSS, peak VmHWM) and CPU used over
# a window, from /proc. Used by e2e/agent.sh on an idle adze-agent (polling IMDS every second).
#
#   agent/scripts/footprint.sh PID [SECONDS]
#
# Prints one line: "rss_kib=N hwm_kib=N cpu_ms=N window_s=N cpu_pct=X".
set -euo pipefail
pid=$1; window=${2:-30}
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep "$window"; t1=$(ticks)
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
cpu_ms=$(( (t1 - t0) * 1000 / hz ))
pct=$(awk -v c="$cpu_ms" -v w="$window" 'BEGIN{printf "%.2f", c / (w * 10)}')
echo "rss_kib=$rss hwm_kib=$hwm cpu_ms=$cpu_ms window_s=$window cpu_pct=$pct"
