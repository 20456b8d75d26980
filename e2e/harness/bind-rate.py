#!/usr/bin/env python3
"""How fast pods of one namespace were bound, read from the apiserver's audit log.

The audit log (e2e/harness/control-plane.sh records the pods/binding calls of kube-scheduler
and of Adze's ServiceAccounts alike) stamps every call with microseconds, on the apiserver's
clock, so a round is timed without polling the pods: from the first PATCH of a node named
NODE_PREFIX* (the label that releases the pending pods) to the completion of the last
successful binding in NAMESPACE. Polling `kubectl get pods` to time a round of a few seconds
both loaded the machine under test and quantised the end to the poll interval.

Usage: bind-rate.py AUDIT_LOG OFFSET NAMESPACE NODE_PREFIX
Only the log from byte OFFSET on is read (its size just before the label), so earlier PATCHes
of the same nodes (their not-ready taint removed at creation) do not count as the start.
Prints "BOUND SECONDS": successful bindings in NAMESPACE and the seconds from the first node
label to the last binding; exit 1 (and "0 0") when either end is missing.
"""

import datetime
import json
import sys


def stamp(text):
    # 2026-11-26T18:00:00.123456Z; fromisoformat in 3.11 takes the Z.
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main():
    log, offset, namespace, node_prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    start = end = None
    bound = set()
    with open(log, "rb") as raw:
        raw.seek(offset)
        lines = raw.read().decode("utf-8", "replace").splitlines()
    for line in lines:
        # Cheap filter before parsing: the log holds every call of the suite.
        if namespace not in line and node_prefix not in line:
            continue
        ev = json.loads(line)
        if ev.get("stage") != "ResponseComplete":
            continue
        ref = ev.get("objectRef") or {}
        code = (ev.get("responseStatus") or {}).get("code")
        if (ev.get("verb") == "patch" and ref.get("resource") == "nodes"
                and ref.get("name", "").startswith(node_prefix)):
            t = stamp(ev["requestReceivedTimestamp"])
            start = t if start is None else min(start, t)
        elif (ev.get("verb") == "create" and ref.get("resource") == "pods"
              and ref.get("subresource") == "binding" and ref.get("namespace") == namespace
              and code == 201):
            bound.add(ref.get("name"))
            t = stamp(ev["stageTimestamp"])
            end = t if end is None else max(end, t)
    if start is None or end is None or end <= start:
        print("0 0")
        return 1
    print(f"{len(bound)} {end - start:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
