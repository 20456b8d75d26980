#!/usr/bin/env python3
"""The cluster of e2e/bench/snapshot.sh, created on a control plane fast: Nodes (status
included, as a kubelet registers one), their not-ready taint lifted, Pods bound to them, pending
Pods and PodDisruptionBudgets, POSTed by THREADS keep-alive connections in parallel (kubectl
creates one object per request, in series: ~40 minutes for 40,000 pods on a loaded 2-core
machine).

  snapshot-objects.py APISERVER TOKEN CA_FILE NODES PODS PENDING [THREADS]

The shape, deterministic (the same objects every run):
- NODES nodes over three zones of us-east-1, in three NodePools by family: general (m5.2xlarge,
  m5.4xlarge), compute (c5.2xlarge), memory (r5.xlarge), a fifth of them spot; the last 2 % are
  empty (no pod: emptiness);
- PODS pods bound round-robin to the other nodes, in 200 apps over 4 namespaces; every fourth
  node's pods are small (underutilized nodes, candidates for consolidation), the others
  ~300m / 1Gi; every fifth app spreads over zones (DoNotSchedule), every tenth has a
  PodDisruptionBudget (maxUnavailable 1);
- PENDING pods selecting the `burst` NodePool (a label no node has, so kube-scheduler leaves
  them pending), half of them spread over zones: new capacity to plan.
"""
import http.client
import json
import ssl
import sys
import threading
import time

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
# (type, pool, cpu, memory, pods): capacity; allocatable is capacity less the kubelet's reserve.
TYPES = [
    ("m5.2xlarge", "general", 8, 32, 58),
    ("m5.4xlarge", "general", 16, 64, 234),
    ("c5.2xlarge", "compute", 8, 16, 58),
    ("r5.xlarge", "memory", 4, 32, 58),
]
NAMESPACES = ["shop", "search", "batch", "data"]
APPS = 200


def node(i):
    t, pool, cpu, mem, pods = TYPES[i % len(TYPES)]
    zone = ZONES[i % len(ZONES)]
    cap = "spot" if i % 5 == 4 else "on-demand"
    name = f"node-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "adze.sh/nodepool": pool,
                "bench-pool": pool,
                "node.kubernetes.io/instance-type": t,
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "us-east-1",
                "adze.sh/capacity-type": cap,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "capacity": {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(pods)},
            "allocatable": {
                "cpu": f"{cpu * 1000 - 90}m",
                "memory": f"{mem * 1024 - 1300}Mi",
                "pods": str(pods),
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def app_of(j):
    return j % APPS


def pod_spec(app, cpu, mem):
    spec = {
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 30,
        "containers": [{
            "name": "app",
            "image": "registry.k8s.io/pause:3.9",
            "resources": {"requests": {"cpu": cpu, "memory": mem}},
        }],
    }
    if app % 5 == 0:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1 if app % 10 else 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": f"a{app:03d}"}},
        }]
    return spec


def bound_pod(j, nodes_used):
    n = j % nodes_used
    app = app_of(j)
    small = n % 4 == 0
    spec = pod_spec(app, "50m" if small else f"{250 + 50 * (j % 3)}m", "64Mi" if small else "1Gi")
    spec["nodeName"] = f"node-{n:05d}"
    return NAMESPACES[app % len(NAMESPACES)], {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"a{app:03d}-{j:06d}", "labels": {"app": f"a{app:03d}"}},
        "spec": spec,
    }


def pending_pod(j):
    app = 1000 + j % 20
    spec = pod_spec(0 if j % 2 == 0 else 1, "500m", "1Gi")
    spec["topologySpreadConstraints"] = spec.get("topologySpreadConstraints", [])
    for c in spec["topologySpreadConstraints"]:
        c["labelSelector"] = {"matchLabels": {"app": f"p{app}"}}
    spec["nodeSelector"] = {"bench-pool": "burst"}
    return "batch", {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{app}-{j:05d}", "labels": {"app": f"p{app}"}},
        "spec": spec,
    }


def pdb(app):
    return NAMESPACES[app % len(NAMESPACES)], {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"a{app:03d}"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": f"a{app:03d}"}}},
    }


class Poster:
    def __init__(self, server, token, ca):
        host = server.split("://", 1)[1]
        self.ctx = ssl.create_default_context(cafile=ca)
        self.host = host
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.errors = []
        self.lock = threading.Lock()

    def run(self, requests, threads):
        """requests: (method, path, body, content type or None) tuples; each thread one connection."""
        it = iter(requests)

        def work():
            conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=60)
            while True:
                with self.lock:
                    r = next(it, None)
                if r is None:
                    conn.close()
                    return
                method, path, body, ctype = r
                h = dict(self.headers)
                if ctype:
                    h["Content-Type"] = ctype
                for attempt in range(5):
                    try:
                        conn.request(method, path, json.dumps(body), h)
                        resp = conn.getresponse()
                        data = resp.read()
                    except (OSError, http.client.HTTPException) as e:
                        conn.close()
                        conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=60)
                        if attempt == 4:
                            with self.lock:
                                self.errors.append(f"{method} {path}: {e}")
                        time.sleep(1)
                        continue
                    if resp.status == 429 or resp.status >= 500:
                        time.sleep(1)
                        if attempt < 4:
                            continue
                    if resp.status >= 300 and resp.status != 409:
                        with self.lock:
                            self.errors.append(f"{method} {path}: {resp.status} {data[:300]!r}")
                    break

        ts = [threading.Thread(target=work) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if self.errors:
            for e in self.errors[:10]:
                print(e, file=sys.stderr)
            sys.exit(f"{len(self.errors)} request(s) failed")


def main():
    server, token, ca, nodes, pods, pending = sys.argv[1:7]
    nodes, pods, pending = int(nodes), int(pods), int(pending)
    threads = int(sys.argv[7]) if len(sys.argv) > 7 else 8
    p = Poster(server, token, ca)
    nodes_used = max(1, nodes - nodes // 50)

    def timed(what, reqs):
        t = time.time()
        p.run(reqs, threads)
        print(f"{what}: {time.time() - t:.1f} s", flush=True)

    timed(f"{nodes} Nodes created", (("POST", "/api/v1/nodes", node(i), None) for i in range(nodes)))
    # TaintNodesByCondition adds node.kubernetes.io/not-ready on create; a kubelet lifts it.
    timed(f"{nodes} not-ready taints lifted", (
        ("PATCH", f"/api/v1/nodes/node-{i:05d}", {"spec": {"taints": None}},
         "application/merge-patch+json") for i in range(nodes)))
    timed(f"{APPS // 10} PodDisruptionBudgets created", (
        ("POST", f"/apis/policy/v1beta1/namespaces/{ns}/poddisruptionbudgets", o, None)
        for ns, o in (pdb(a) for a in range(0, APPS, 10))))
    timed(f"{pods} bound Pods created", (
        ("POST", f"/api/v1/namespaces/{ns}/pods", o, None)
        for ns, o in (bound_pod(j, nodes_used) for j in range(pods))))
    timed(f"{pending} pending Pods created", (
        ("POST", f"/api/v1/namespaces/{ns}/pods", o, None)
        for ns, o in (pending_pod(j) for j in range(pending))))


if __name__ == "__main__":
    main()
