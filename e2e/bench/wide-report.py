#!/usr/bin/env python3
"""The figures of e2e/bench/wide-deployments.sh, from the provisioner's JSON log
(--log-format json), the script's NodeClaim samples and the times it took.

  wide-report.py cost KUBECONFIG METRICS_URL   "nodes=N price=P": Nodes and their $/h, each
                                               priced at its offering's price as the provisioner
                                               publishes it (adze_cloudprovider_offering_price_dollars)
  wide-report.py last-command LOG              epoch of the last command started or proposed
  wide-report.py phases LOG SAMPLES --apply T ...   the per-phase table (Markdown)
"""
import argparse
import json
import re
import subprocess
import sys
import urllib.request
from datetime import datetime

CAPACITY_KEYS = ("adze.sh/capacity-type", "karpenter.sh/capacity-type")


def cost(kubeconfig, metrics_url):
    nodes = json.loads(subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json"],
        check=True, capture_output=True, text=True).stdout)["items"]
    text = urllib.request.urlopen(metrics_url.rstrip("/") + "/metrics", timeout=10).read().decode()
    price = {}
    for line in text.splitlines():
        if not line.startswith("adze_cloudprovider_offering_price_dollars{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.index("}")]))
        price[(labels["instance_type"], labels["zone"], labels["capacity_type"])] = float(line.rsplit(" ", 1)[1])
    total, unpriced = 0.0, 0
    for n in nodes:
        lab = n["metadata"].get("labels", {})
        cap = next((lab[k] for k in CAPACITY_KEYS if k in lab), "")
        key = (lab.get("node.kubernetes.io/instance-type", ""), lab.get("topology.kubernetes.io/zone", ""), cap)
        if key in price:
            total += price[key]
        else:
            unpriced += 1
    out = f"nodes={len(nodes)} price={total:.2f}"
    return out + (f" unpriced={unpriced}" if unpriced else "")


def records(log):
    """(epoch, fields) of every JSON line of the log; other lines are skipped."""
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            t = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).timestamp()
            yield t, r.get("fields", {})


def commands(log):
    out = []
    for t, f in records(log):
        msg = f.get("message", "")
        if msg.startswith("disrupting:"):
            try:
                nodes = json.loads(f.get("nodes", "[]"))
            except ValueError:
                nodes = f.get("nodes", "").count('"') // 2
            out.append({"t": t, "reason": f.get("reason", "?"), "nodes": len(nodes) if isinstance(nodes, list) else nodes,
                        "replacements": int(f.get("replacements", 0))})
    return out


def waves(log):
    out = []
    for t, f in records(log):
        m = re.match(r"disruption wave: (\d+) command", f.get("message", ""))
        if m:
            out.append((t, int(m.group(1))))
    return out


def counts(pairs):
    """"1 × 40, 2 × 3": how many of each value, smallest first."""
    c = {}
    for p in pairs:
        c[p] = c.get(p, 0) + 1
    return ", ".join(f"{v} × {n}" for v, n in sorted(c.items())) or "none"


def phases(a):
    cmds = [c for c in commands(a.log) if c["t"] >= a.scale]
    wv = [w for w in waves(a.log) if w[0] >= a.scale]
    dropped = decided = 0
    decide_ms = []
    for t, f in records(a.log):
        if t < a.scale:
            continue
        msg = f.get("message", "")
        if msg.startswith("disruption dropped after validation"):
            dropped += 1
        elif msg.startswith("disruption proposed"):
            decided += 1
            if "decide_ms" in f:
                decide_ms.append(int(f["decide_ms"]))
    samples = []
    with open(a.samples) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                samples.append((float(p[0]), int(p[1]), int(p[2]), int(p[3])))
    after = [s for s in samples if s[0] >= a.scale]
    last_change = a.scale
    for prev, cur in zip(after, after[1:]):
        if cur[1] != prev[1] or cur[3] != prev[3]:
            last_change = cur[0]
    busiest = max((s[2] for s in after), default=0)
    rel = lambda t: f"{t - a.scale:.1f} s"
    rows = [
        ("provision", f"{a.pods} pods bound {a.bound - a.apply:.1f} s after the Deployments were applied, "
                      f"all Running at {a.running - a.apply:.1f} s; {a.before}"),
        ("scale to 70 %", f"{a.target} pods left {a.scaled - a.scale:.1f} s after the scale-down" if a.scaled else "not reached"),
        ("first consolidation command", rel(cmds[0]["t"]) + " after the scale-down" if cmds else "none"),
        ("waves", f"{len(wv)}, at " + ", ".join(f"{w[0] - a.scale:.0f}" for w in wv) + " s"),
        ("commands per wave", ", ".join(str(w[1]) for w in wv) or "none"),
        ("nodes per command", counts(c["nodes"] for c in cmds) + f" ({sum(c['nodes'] for c in cmds)} nodes in {len(cmds)} commands)"),
        ("replacements launched", str(sum(c["replacements"] for c in cmds))),
        ("commands by reason", counts(c["reason"] for c in cmds)),
        ("decisions dropped at validation", f"{dropped} of {decided}"),
        ("decision time (first proposal of each pass)", (f"{min(decide_ms)}-{max(decide_ms)} ms" if decide_ms else "none")),
        ("most NodeClaims disrupting at once", str(busiest)),
        ("last command", rel(cmds[-1]["t"]) if cmds else "none"),
        ("settled (last NodeClaim or Node count change)", rel(last_change) + f"; then no command for {a.quiet} s"),
        ("nodes and $/h", f"{a.before} → {a.after}"),
    ]
    print("| phase | measured |")
    print("|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    op = sys.argv[1]
    if op == "cost" and len(sys.argv) == 4:
        print(cost(sys.argv[2], sys.argv[3]))
    elif op == "last-command" and len(sys.argv) == 3:
        # A proposal counts: its command starts a validation period later.
        last = [t for t, f in records(sys.argv[2])
                if f.get("message", "").startswith(("disrupting:", "disruption proposed"))]
        if last:
            print(f"{last[-1]:.3f}")
    elif op == "phases":
        p = argparse.ArgumentParser(prog="wide-report.py phases")
        p.add_argument("log")
        p.add_argument("samples")
        for n in ("apply", "bound", "running", "scale", "end"):
            p.add_argument(f"--{n}", type=float, required=True)
        p.add_argument("--scaled", type=lambda s: float(s) if s else None, default=None)
        p.add_argument("--quiet", type=int, required=True)
        p.add_argument("--pods", type=int, required=True)
        p.add_argument("--target", type=int, required=True)
        p.add_argument("--before", required=True)
        p.add_argument("--after", required=True)
        phases(p.parse_args(sys.argv[2:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
