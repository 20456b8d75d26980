#!/usr/bin/env python3
"""A tiny Helm CLI over helm-sdkpy for scripts (the helm binary is not on PyPI).

  helm.py install|upgrade RELEASE NAMESPACE CHART [VALUES.yaml ...] [--set-json JSON]
  helm.py uninstall RELEASE NAMESPACE

Needs KUBECONFIG. Prints the release's name, revision and status; exits 1 with Helm's
message on failure.
"""
import asyncio
import json
import os
import sys

import helm_sdkpy as helm
import yaml


def merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def main(argv):
    verb, release, ns = argv[0], argv[1], argv[2]
    cfg = helm.Configuration(namespace=ns, kubeconfig=os.environ["KUBECONFIG"])
    try:
        if verb == "uninstall":
            asyncio.run(helm.Uninstall(cfg).run(release, wait=True, timeout=120))
            print(f"{release}: uninstalled")
            return 0
        chart, rest = argv[3], argv[4:]
        values = {}
        while rest:
            if rest[0] == "--set-json":
                values = merge(values, json.loads(rest[1]))
                rest = rest[2:]
            else:
                with open(rest[0]) as f:
                    values = merge(values, yaml.safe_load(f) or {})
                rest = rest[1:]
        if verb == "install":
            r = asyncio.run(helm.Install(cfg).run(release, chart, values=values, wait=False,
                                                  create_namespace=True, timeout=120))
        elif verb == "upgrade":
            r = asyncio.run(helm.Upgrade(cfg).run(release, chart, values=values, wait=False, timeout=120))
        else:
            print(f"unknown verb {verb}", file=sys.stderr)
            return 2
        print(f"{r['name']}: revision {r['version']} {r['info']['status']}")
        return 0
    except helm.HelmError as e:
        print(f"helm {verb} {release}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
