#!/usr/bin/env python3
"""Where the time of a pod burst goes, from what the API server recorded.

Reads `kubectl get pods -o json` (one namespace), `kubectl get nodeclaims -o json` and
`kubectl get nodes -o json` (files given as arguments) and prints, for the pods, the
distribution (p50 / p90 / max, seconds) of each stage, each measured from the burst's start
(the first pod's creation):

  created        the pod object exists (ReplicaSet controller)
  unschedulable  first seen with PodScheduled=False (kube-scheduler's write; Adze no longer
                 waits for it, so this only shows how far behind kube-scheduler's queue
                 runs), from SAMPLES: lines
                 "<unix time> <pod name>" taken while the burst ran, since the condition's
                 own time is overwritten once the pod is bound. Optional: e2e/run.sh no
                 longer samples (LISTing 1,000 pods twice a second loaded the API server it
                 measured), so its runs show this stage empty
  claimed        the NodeClaim that nominates the pod was created (Adze's batch + plan)
  registered     that NodeClaim's Node exists (the cloud's boot)
  bound          PodScheduled=True (kube-scheduler placed it)
  running        the pod's Ready condition turned True (kubelet)

and the same stages as gaps between consecutive stages per pod (claimed: from created). Timestamps have one-second
resolution (the API server's), so each figure is +-1 s. Usage:
  burst-breakdown.py PODS.json NODECLAIMS.json NODES.json [SAMPLES]
"""

import json
import sys
from datetime import datetime


def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp() if s else None


def cond(obj, type_, status):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == status:
            return ts(c.get("lastTransitionTime"))
    return None


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    pods = json.load(open(sys.argv[1]))["items"]
    claims = json.load(open(sys.argv[2]))["items"]
    nodes = json.load(open(sys.argv[3]))["items"]
    first_unschedulable = {}
    if len(sys.argv) > 4:
        for line in open(sys.argv[4]):
            parts = line.split()
            if len(parts) == 2:
                t, name = float(parts[0]), parts[1]
                first_unschedulable[name] = min(t, first_unschedulable.get(name, t))

    claim_of_pod = {}
    for c in claims:
        ann = (c["metadata"].get("annotations") or {}).get("adze.sh/nominated-pods")
        for p in json.loads(ann) if ann else []:
            claim_of_pod.setdefault((p["namespace"], p["name"]), c)
    node_created = {n["metadata"]["name"]: ts(n["metadata"]["creationTimestamp"]) for n in nodes}
    claim_of_node = {}
    for c in claims:
        node = (c.get("status") or {}).get("nodeName")
        if node:
            claim_of_node[node] = c

    stages = ["created", "unschedulable", "claimed", "registered", "bound", "running"]
    rows = []
    for p in pods:
        md = p["metadata"]
        claim = claim_of_pod.get((md["namespace"], md["name"]))
        node = (p.get("spec") or {}).get("nodeName")
        if claim is None and node in claim_of_node:
            # Placed on spare room of a claim launched for other pods: no nomination.
            claim = claim_of_node[node]
        cname = (claim.get("status") or {}).get("nodeName") if claim else None
        rows.append({
            "created": ts(md["creationTimestamp"]),
            "unschedulable": first_unschedulable.get(md["name"], cond(p, "PodScheduled", "False")),
            "claimed": ts(claim["metadata"]["creationTimestamp"]) if claim else None,
            "registered": node_created.get(cname) if cname else None,
            "bound": cond(p, "PodScheduled", "True"),
            "running": cond(p, "Ready", "True"),
        })
    if not rows:
        print("no pods")
        return 1
    t0 = min(r["created"] for r in rows if r["created"] is not None)
    print(f"{len(rows)} pods, {len(claims)} NodeClaims; seconds from the first pod's creation "
          "(API timestamps, +-1 s)")
    print(f"{'stage':<14}{'pods':>6}{'p50':>7}{'p90':>7}{'max':>7}   gap from previous stage p50/p90/max")
    prev = None
    for s in stages:
        # A pod is claimed from its watch event, not after kube-scheduler's verdict: its gap
        # runs from creation.
        since = "created" if s == "claimed" else prev
        at = [r[s] - t0 for r in rows if r[s] is not None]
        gaps = [r[s] - r[since] for r in rows if since and r[s] is not None and r[since] is not None]
        line = f"{s:<14}{len(at):>6}"
        for q in (50, 90, 100):
            v = pct(at, q)
            line += f"{v:>7.0f}" if v is not None else f"{'-':>7}"
        if gaps:
            line += "   " + "/".join(f"{pct(gaps, q):.0f}" for q in (50, 90, 100))
        print(line)
        prev = s
    return 0


if __name__ == "__main__":
    sys.exit(main())
