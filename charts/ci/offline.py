"""Render the chart for a given Kubernetes version with no cluster.

helm-sdkpy has no `template` and no dry run: it installs. So this module plays a Kubernetes
API server on loopback, just enough for Helm's install: `/version` and discovery answer with
the version and API groups asked for (what the chart's `.Capabilities` reads), the release
storage is empty, every object Helm creates is accepted and nothing else is stored (so
`lookup` finds nothing, as `helm template` would; CRDs answer "already exists", so Helm does
not wait for them). The manifest Helm returns is what `helm template --kube-version V
--api-versions ...` would print.

  render(kube_version, values, release="adze", namespace="adze-system") -> manifest text
"""
import asyncio
import json
import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import helm_sdkpy as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "adze"


def _semver(v):
    return tuple(int(x) for x in v.lstrip("v").split("-")[0].split(".")[:3])


def builtin_groups(version):
    """(group, version) -> [(kind, plural, namespaced)] served by a Kubernetes `version`
    (only the kinds Helm needs to map for this chart, plus their group's presence)."""
    v = _semver(version)
    g = {
        ("", "v1"): [("Namespace", "namespaces", False), ("Secret", "secrets", True),
                     ("ConfigMap", "configmaps", True), ("Service", "services", True),
                     ("ServiceAccount", "serviceaccounts", True), ("Pod", "pods", True),
                     ("Node", "nodes", False), ("Event", "events", True),
                     ("Endpoints", "endpoints", True)],
        ("apps", "v1"): [("Deployment", "deployments", True), ("DaemonSet", "daemonsets", True)],
        ("rbac.authorization.k8s.io", "v1"): [
            ("Role", "roles", True), ("RoleBinding", "rolebindings", True),
            ("ClusterRole", "clusterroles", False), ("ClusterRoleBinding", "clusterrolebindings", False)],
        ("apiextensions.k8s.io", "v1"): [("CustomResourceDefinition", "customresourcedefinitions", False)],
        ("admissionregistration.k8s.io", "v1"): [
            ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False),
            ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False)],
        ("networking.k8s.io", "v1"): [("NetworkPolicy", "networkpolicies", True)],
        ("coordination.k8s.io", "v1"): [("Lease", "leases", True)],
        ("scheduling.k8s.io", "v1"): [("PriorityClass", "priorityclasses", False)],
        ("storage.k8s.io", "v1"): [("StorageClass", "storageclasses", False)],
    }
    if v < (1, 25, 0):
        g[("policy", "v1beta1")] = [("PodDisruptionBudget", "poddisruptionbudgets", True)]
    if v >= (1, 21, 0):
        g[("policy", "v1")] = [("PodDisruptionBudget", "poddisruptionbudgets", True)]
    if (1, 28, 0) <= v < (1, 32, 0):
        g[("admissionregistration.k8s.io", "v1beta1")] = [
            ("ValidatingAdmissionPolicy", "validatingadmissionpolicies", False),
            ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", False)]
    if v >= (1, 30, 0):
        g[("admissionregistration.k8s.io", "v1")] += [
            ("ValidatingAdmissionPolicy", "validatingadmissionpolicies", False),
            ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", False)]
    return g


def crd_groups(paths):
    """(group, version) -> kinds, from CustomResourceDefinition files (the chart's crds/ and
    charts/ci/stub-crds.yaml: cert-manager's and prometheus-operator's, assumed installed)."""
    g = {}
    for path in paths:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for ver in spec["versions"]:
                if ver.get("served", True):
                    g.setdefault((spec["group"], ver["name"]), []).append(
                        (spec["names"]["kind"], spec["names"]["plural"], spec.get("scope") == "Namespaced"))
    return g


class _Api(BaseHTTPRequestHandler):
    groups = {}
    version = "v1.30.0"
    crd_names = set()

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code, reason, message=""):
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": reason, "message": message, "code": code})

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n)
        if "json" not in (self.headers.get("Content-Type") or "json"):
            # Helm's release storage writes its Secret as protobuf: not read, answered in JSON.
            return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": self.path.split("/")[-1].split("?")[0]}}
        return json.loads(raw or b"{}")

    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        if path == "/version":
            major, minor, _ = _semver(self.version)
            return self._send(200, {"major": str(major), "minor": str(minor), "gitVersion": self.version,
                                    "platform": "linux/amd64"})
        if path == "/api":
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                                    "serverAddressByClientCIDRs": []})
        if path == "/apis":
            by_group = {}
            for (group, ver) in sorted(self.groups):
                if group:
                    by_group.setdefault(group, []).append(ver)
            return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": grp, "versions": [{"groupVersion": f"{grp}/{v}", "version": v} for v in vers],
                 "preferredVersion": {"groupVersion": f"{grp}/{vers[-1]}", "version": vers[-1]}}
                for grp, vers in by_group.items()]})
        parts = path.strip("/").split("/")
        key = ("", "v1") if parts[:2] == ["api", "v1"] and len(parts) == 2 else \
            (parts[1], parts[2]) if parts[0] == "apis" and len(parts) == 3 else None
        if key is not None:
            if key not in self.groups:
                return self._status(404, "NotFound", path)
            gv = key[1] if not key[0] else f"{key[0]}/{key[1]}"
            return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": [
                {"name": plural, "singularName": kind.lower(), "namespaced": ns, "kind": kind,
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                for kind, plural, ns in self.groups[key]]})
        if self.path.split("?")[0].endswith("/secrets") and "labelSelector" in self.path:
            return self._send(200, {"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": []})
        if "?" in self.path or path.endswith("s") and not path.split("/")[-1].startswith("sh.helm"):
            # A list (storage, lookup of all): empty.
            if parts[-1] in {p for kinds in self.groups.values() for _, p, _ in kinds}:
                return self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})
        return self._status(404, "NotFound", f"{path} not found")

    def do_POST(self):
        obj = self._body()
        # The chart's crds/ (and the stubs) are there already: Helm skips them. A CRD a
        # template renders (the CapacityBuffer CRD) is created like any object.
        if obj.get("kind") == "CustomResourceDefinition" and obj["metadata"]["name"] in self.crd_names:
            return self._status(409, "AlreadyExists", f"{obj['metadata']['name']} already exists")
        obj.setdefault("metadata", {}).setdefault("uid", "00000000-0000-0000-0000-000000000000")
        obj["metadata"].setdefault("resourceVersion", "1")
        return self._send(201, obj)

    def do_PUT(self):
        obj = self._body()
        obj.setdefault("metadata", {})["resourceVersion"] = "2"
        return self._send(200, obj)

    def do_PATCH(self):
        return self._status(404, "NotFound", self.path)

    def do_DELETE(self):
        return self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})


def render(kube_version, values, release="adze", namespace="adze-system"):
    return render_release(kube_version, values, release, namespace)["manifest"]


def render_release(kube_version, values, release="adze", namespace="adze-system"):
    """The release Helm's install returns (manifest, info.notes, ...)."""
    groups = builtin_groups(kube_version)
    crd_files = sorted((CHART / "crds").glob("*.yaml")) + [ROOT / "charts/ci/stub-crds.yaml"]
    for key, kinds in crd_groups(crd_files).items():
        groups.setdefault(key, []).extend(kinds)
    crd_names = {d["metadata"]["name"] for path in crd_files for d in yaml.safe_load_all(Path(path).read_text())
                 if d and d.get("kind") == "CustomResourceDefinition"}
    handler = type("Api", (_Api,), {"groups": groups, "version": "v" + kube_version.lstrip("v"),
                                    "crd_names": crd_names})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = os.path.join(tmp, "kubeconfig")
            Path(kubeconfig).write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "offline",
                "clusters": [{"name": "offline", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
                "users": [{"name": "offline", "user": {"token": "offline"}}],
                "contexts": [{"name": "offline", "context": {"cluster": "offline", "user": "offline",
                                                             "namespace": namespace}}]}))
            cfg = helm.Configuration(namespace=namespace, kubeconfig=kubeconfig)
            r = asyncio.run(helm.Install(cfg).run(release, str(CHART), values=values, wait=False,
                                                  create_namespace=False, timeout=60))
            return r
    finally:
        server.shutdown()
        server.server_close()
