#!/usr/bin/env python3
"""Runs an e2e suite's Adze components under the chart's ServiceAccounts, and checks what they
did with them. Called through e2e/lib.sh (adze_rbac, rbac_audit) with the helm-sdkpy venv's
Python (charts/ci/helm-venv.sh).

  rbac.py apply CLOUD NAMESPACE DIR [VALUE=true ...]
      Renders charts/adze (cloudProvider CLOUD, release `adze` in NAMESPACE, and each dotted
      chart VALUE set true, e.g. provisioner.capacityBuffers=true) into the control plane at
      $KUBECONFIG (admin) and keeps only its ServiceAccounts, ClusterRoles,
      ClusterRoleBindings, Roles and RoleBindings, and the CRDs its templates render (the
      CapacityBuffer CRD with provisioner.capacityBuffers); writes DIR/{provisioner,extender,
      agent}.kubeconfig, each holding that ServiceAccount's token.
  rbac.py audit CLOUD NAMESPACE AUDIT_LOG OUT
      Reads the apiserver's audit log: fails (exit 1, each request named) if a request of an
      Adze component under its ServiceAccount was refused by the authorizer (403) or is not a call
      charts/ci/rbac-calls.yaml declares, or if a component (known by its User-Agent) made a
      request under other credentials; writes the calls actually used, one per line, to OUT.

helm-sdkpy has no `template`: the chart is installed for real, with every workload pinned to
a node label no node has, and everything but the RBAC deleted before a component starts.
"""

import asyncio
import base64
import json
import os
import pathlib
import subprocess
import sys
import time

import helm_sdkpy as helm
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "charts" / "ci"))
import rbac_calls  # noqa: E402

RELEASE = "adze"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
KEPT_KINDS = RBAC_KINDS | {"CustomResourceDefinition"}
NOWHERE = {"adze.sh/e2e-rbac-only": "no-node-has-this"}


def kubectl(*args, check=True):
    r = subprocess.run(["kubectl", "--kubeconfig", os.environ["KUBECONFIG"], *args],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def values(cloud, sets=()):
    v = {
        "cloudProvider": cloud,
        "provisioner": {"nodeSelector": NOWHERE},
        "extender": {"nodeSelector": NOWHERE},
        "agent": {"nodeSelector": NOWHERE},
    }
    if cloud == "aws":
        v.update({"clusterName": "e2e", "aws": {"region": "us-east-1"}})
    for s in sets:
        key, _, val = s.partition("=")
        if val != "true" or not key:
            raise SystemExit(f"rbac.py apply: {s!r}: only VALUE=true is supported")
        node = v
        *parents, last = key.split(".")
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = True
    return v


def apply(cloud, ns, out_dir, *sets):
    t0 = time.monotonic()
    cfg = helm.Configuration(namespace=ns, kubeconfig=os.environ["KUBECONFIG"])
    r = asyncio.run(helm.Install(cfg).run(RELEASE, str(ROOT / "charts" / "adze"), values=values(cloud, sets),
                                         wait=False, create_namespace=True, timeout=120))
    docs = [d for d in yaml.safe_load_all(r["manifest"]) if d]
    # Only the RBAC stays: no chart workload may run (there is no kubelet) or be counted by a
    # suite (a pending chart pod would be provisioned for).
    others = [f"{d['kind'].lower()}/{d['metadata']['name']}" for d in docs if d["kind"] not in KEPT_KINDS]
    if others:
        kubectl("-n", ns, "delete", "--ignore-not-found", "--wait=true", *others)
    deadline = time.monotonic() + 60
    while kubectl("-n", ns, "get", "pods", "-o", "name").strip():
        if time.monotonic() > deadline:
            raise SystemExit(f"chart pods in {ns} still there 60 s after their workloads were deleted")
        time.sleep(0.5)
    sas = {rbac_calls.component_of(d): d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    server = os.environ["APISERVER"]
    ca = os.environ["ADZE_CA_CERT"]
    for comp in rbac_calls.COMPONENTS:
        sa = sas.get(comp)
        if sa is None:
            raise SystemExit(f"the chart rendered no ServiceAccount for {comp}")
        deadline = time.monotonic() + 60
        while True:
            secrets = json.loads(kubectl("-n", ns, "get", "sa", sa, "-o", "json")).get("secrets") or []
            if secrets:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"ServiceAccount {ns}/{sa} got no token Secret within 60 s")
            time.sleep(0.3)
        token = base64.b64decode(kubectl("-n", ns, "get", "secret", secrets[0]["name"], "-o",
                                         "jsonpath={.data.token}")).decode()
        path = pathlib.Path(out_dir) / f"{comp}.kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": ca}}],
            "users": [{"name": sa, "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": sa, "namespace": ns}}],
            "current-context": "e2e",
        }))
        path.chmod(0o600)
    kinds = sorted({d["kind"] for d in docs if d["kind"] in KEPT_KINDS})
    print(f"chart RBAC ({cloud}, namespace {ns}: {', '.join(kinds)}) applied; "
          f"kubeconfigs for {', '.join(sas[c] for c in rbac_calls.COMPONENTS)} in {out_dir} "
          f"({time.monotonic() - t0:.1f} s)")


def audit(cloud, ns, log, out):
    declared = rbac_calls.Declared()
    if declared.errors:
        print("\n".join(declared.errors))
        return 1
    fullname = RELEASE  # the chart's fullname for release `adze`
    users = {f"system:serviceaccount:{ns}:{fullname}-{c}": c for c in rbac_calls.COMPONENTS}
    used, refused, undeclared, borrowed = set(), [], [], set()
    seen = set()
    requests = others = admitted_403 = 0
    with open(log) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("auditID") in seen:
                continue
            user = ev.get("user", {}).get("username")
            agent = ev.get("userAgent", "")
            comp = users.get(user)
            # Every Adze client names itself (adze_cli::user_agent): one under another user's
            # credentials was started without its ServiceAccount.
            for c in rbac_calls.COMPONENTS:
                if agent.startswith(f"adze-{c}/") and comp != c:
                    borrowed.add(f"adze-{c} made requests as {user}")
            if comp is None:
                continue
            if not agent.startswith(f"adze-{comp}/"):
                # The suite itself (kubectl auth can-i with the token): not the component's call.
                others += 1
                continue
            # One line per stage (a watch has ResponseStarted, then ResponseComplete when it
            # ends); a refusal has one stage with its code.
            code = (ev.get("responseStatus") or {}).get("code")
            seen.add(ev.get("auditID"))
            requests += 1
            verb = ev["verb"]
            ref = ev.get("objectRef")
            if ref is None:
                url = ev["requestURI"].split("?")[0]
                what = f"{comp}: {verb} {url} (non-resource)"
                used.add(what)
                if not declared.allows_url(comp, url, verb):
                    undeclared.append(what)
            else:
                group = ref.get("apiGroup", "")
                res = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
                rns = ref.get("namespace")
                name = ref.get("name", "")
                scope = "namespaced" if rns else "cluster-scoped or all namespaces"
                used.add(f"{comp}: {verb} {group or 'core'}/{res} ({scope})")
                what = (f"{comp}: {verb} {group or 'core'}/{res}"
                        f"{' ' + name if name else ''}{' in ' + rns if rns else ''}")
                if not declared.allows(cloud, fullname, comp, rns == ns, group, res, verb, name):
                    undeclared.append(what)
            # RBAC's refusal: the authorizer said forbid. A 403 the authorizer allowed came from
            # admission (e.g. an Event into a namespace being deleted): not a missing grant.
            decision = (ev.get("annotations") or {}).get("authorization.k8s.io/decision")
            if decision == "forbid" or (code == 403 and decision is None):
                refused.append(f"{what}: 403 {ev['requestURI']}")
            elif code == 403:
                admitted_403 += 1
    pathlib.Path(out).write_text("".join(f"{u}\n" for u in sorted(used)))
    print(f"audit log: {requests} requests by Adze's components under their ServiceAccounts, "
          f"{len(used)} distinct calls (in {out}); {others} by other clients with their tokens, not judged")
    if admitted_403:
        print(f"  ({admitted_403} requests authorized but refused by admission, e.g. into a namespace being deleted)")
    for b in sorted(borrowed):
        print(f"  WRONG CREDENTIALS: {b}")
    for u in sorted(used):
        print(f"  used: {u}")
    for r in refused:
        print(f"  REFUSED: {r}")
    for u in sorted(set(undeclared)):
        print(f"  NOT DECLARED in charts/ci/rbac-calls.yaml: {u}")
    if requests == 0:
        print("  no request by an Adze ServiceAccount at all: the components did not run under them")
    return 0 if requests and not refused and not undeclared and not borrowed else 1


def main(argv):
    if len(argv) >= 4 and argv[0] == "apply":
        apply(*argv[1:])
        return 0
    if len(argv) == 5 and argv[0] == "audit":
        return audit(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
