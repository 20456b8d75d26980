#!/usr/bin/env python3
"""Regenerates docs/migration.md's table "Over Karpenter's published manifests".

For each manifest in a folder (default ../shared/karpenter-manifests and its raw/): substitute
the published placeholders, run `adze-provisioner migrate --allow-actions`, then `simulate` the
output plus one pending pod (1 CPU, 1 GiB, tolerating every taint). A NodePool whose
EC2NodeClass is not in the file is planned with a stand-in class (AL2023 alias, a role, tag
selectors), and the row says so. With `--region-from-zones`, a file whose pools pin zones of one
region is simulated with `--region` set to that region (the row says which).

This is a developer's tool, not a test: the project's tests do not read ../shared.

  provisioner/ci/migrate-table.py --bin target/debug/adze-provisioner [--dir DIR] > rows.md
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

STAND_IN = """apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata:
  name: {name}
spec:
  role: AdzeNodeRole-migrate-check
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        adze.sh/discovery: migrate-check
  securityGroupSelectorTerms:
    - tags:
        adze.sh/discovery: migrate-check
"""

PENDING = """apiVersion: v1
kind: Pod
metadata:
  name: pending
  namespace: default
spec:
  tolerations:
    - operator: Exists
  containers:
    - name: c
      image: pause
      resources:
        requests:
          cpu: "1"
          memory: 1Gi
"""

ZONE = re.compile(r"\b([a-z]{2}(?:-gov)?-[a-z]+-\d)[a-z]\b")


def substitute(text):
    text = text.replace("${CLUSTER_NAME}", "my-cluster").replace("${ALIAS_VERSION}", "latest")
    return re.sub(r"\$\{[A-Za-z0-9_]+\}", "x", text)


def short(s, n=70):
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= n else s[:n]


def docs(stream):
    """Top-level (kind, name, nodeClassRef name) of each document; enough for stand-ins."""
    out = []
    for doc in re.split(r"^---\s*$", stream, flags=re.M):
        kind = re.search(r"^kind:\s*(\S+)", doc, flags=re.M)
        name = re.search(r"^metadata:\s*\n(?:\s+.*\n)*?\s+name:\s*(\S+)", doc, flags=re.M)
        ref = re.search(r"nodeClassRef:\s*\n(?:\s+\S.*\n)*?\s+name:\s*(\S+)", doc)
        if kind:
            out.append((kind.group(1), name.group(1) if name else "", ref.group(1) if ref else None))
    return out


def row(binary, path, region_from_zones):
    with open(path, encoding="utf-8") as f:
        text = substitute(f.read())
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in" + os.path.splitext(path)[1])
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        m = subprocess.run([binary, "migrate", "--allow-actions", src], capture_output=True, text=True)
        role_note = ""
        if "set role or instanceProfile, or rerun with --node-role" in m.stderr:
            # v1alpha5 took the node role from the controller's settings: migrate again with
            # the stack's role, as the report advises (the class is left out without one).
            m = subprocess.run([binary, "migrate", "--allow-actions", "--node-role", "AdzeNode-migrate-check", src], capture_output=True, text=True)
            role_note = " with --node-role"
        if m.returncode != 0:
            return f"migrate failed ({m.returncode}): {short(m.stderr)}", "", "no"
        head = m.stderr.splitlines()[0] if m.stderr else ""
        counts = re.match(r"migrated (\d+) object\(s\), (\d+) not converted; (\d+) item\(s\) need action, (\d+) change", head)
        objects = f"{counts.group(1)} converted, {counts.group(2)} not; {counts.group(4)} changes" if counts else short(head)
        actions = []
        for line in m.stderr.splitlines():
            a = re.match(r"\s+ACTION: (\S+) (\S+): (.*)", line)
            if a:
                actions.append(f"`{a.group(1)}` `{a.group(2)}` ({short(a.group(3), 60)})")
        left_out = [a.group(1) for a in re.finditer(r"ACTION: (\S+) metadata: left out of the output", m.stderr)]
        if left_out:
            # Nothing stands in for an object migrate left out: the file does not plan as it is.
            return objects, "; ".join(actions) or "none", f"no: {', '.join(left_out)} left out of the output (Adze would refuse it as it is)"
        listed = docs(m.stdout)
        pools = [d for d in listed if d[0] == "NodePool"]
        if not pools:
            return objects, "; ".join(actions) or "none", "n/a (no NodePool in the file)"
        classes = {d[1] for d in listed if d[0] == "EC2NodeClass"}
        stand_ins = sorted({d[2] for d in pools if d[2] and d[2] not in classes})
        scenario = m.stdout + "".join("\n---\n" + STAND_IN.format(name=n) for n in stand_ins) + "\n---\n" + PENDING
        sim = os.path.join(tmp, "scenario.yaml")
        with open(sim, "w", encoding="utf-8") as f:
            f.write(scenario)
        args = [binary, "simulate", sim, "--output", "json", "--allow-unschedulable"]
        regions = sorted(set(ZONE.findall(m.stdout)))
        region_note = ""
        if region_from_zones and len(regions) == 1 and regions[0] != "us-east-1":
            args += ["--region", regions[0]]
            region_note = f", `--region {regions[0]}`"
        s = subprocess.run(args, capture_output=True, text=True)
        note = (f" (with a stand-in EC2NodeClass {', '.join(stand_ins)}" + region_note + ")") if stand_ins else (f" ({region_note[2:]})" if region_note else "")
        if s.returncode != 0:
            lines = [l.strip() for l in s.stderr.splitlines() if l.strip()]
            first = " ".join(lines[:2]).replace(sim + ": ", "")
            return objects, "; ".join(actions) or "none", f"no{role_note}: {short(first, 170)}{note}"
        report = json.loads(s.stdout)
        if report["unschedulable"]:
            return objects, "; ".join(actions) or "none", f"no{role_note}: {short(report['unschedulable'][0]['reason'], 110)}{note}"
        claim = report["nodeClaims"][0] if report["nodeClaims"] else None
        where = f"{claim['instanceType']} {claim['capacityType']} {claim['zone']}" if claim else "an existing node"
        return objects, "; ".join(actions) or "none", f"yes{role_note}: {where}{note}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the adze-provisioner binary")
    p.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "karpenter-manifests"))
    p.add_argument("--region-from-zones", action="store_true", help="simulate pools pinned to one region's zones in that region")
    a = p.parse_args()
    files = sorted(f for f in os.listdir(a.dir) if f.endswith((".yaml", ".json")))
    raw = os.path.join(a.dir, "raw")
    files += sorted(os.path.join("raw", f) for f in os.listdir(raw)) if os.path.isdir(raw) else []
    print("| file | objects | ACTION items (object, path, start of message) | plans |")
    print("|---|---|---|---|")
    for f in files:
        objects, actions, plans = row(a.bin, os.path.join(a.dir, f), a.region_from_zones)
        print(f"| {f} | {objects} | {actions} | {plans} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
