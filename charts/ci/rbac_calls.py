"""The API calls Adze's components make (charts/ci/rbac-calls.yaml) against what the chart's
RBAC grants, and against what an apiserver audit log shows them doing.

Used by charts/ci/check.py (static: the rendered ClusterRoles/Roles grant exactly the declared
calls, for each cloudProvider) and e2e/rbac.py (dynamic: an e2e suite's audit log shows no
403 for an Adze ServiceAccount and no call outside the declared list).

A call is (component, scope, group, resource, verb, name): resource is "pods" or
"pods/eviction"; scope is "cluster" (a ClusterRole, every namespace) or "namespace" (a Role in
the release namespace); name is "*" or one object's name (RBAC resourceNames).
"""

import pathlib

import yaml

CALLS_FILE = pathlib.Path(__file__).resolve().parent / "rbac-calls.yaml"
COMPONENTS = ("provisioner", "extender", "agent")
SCOPES = ("cluster", "namespace")
# Chart values a call may depend on (rbac-calls.yaml `when`); off by default in the chart.
WHEN_VALUES = {
    "provisioner.capacityBuffers",
    "provisioner.defaultTopologySpread",
    "provisioner.podDeletionCost",
    "provisioner.vpaPredictions",
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


class Declared:
    """rbac-calls.yaml, checked for shape on load (a typo must not silently declare nothing)."""

    def __init__(self, path=CALLS_FILE):
        doc = yaml.safe_load(pathlib.Path(path).read_text())
        self.errors = []
        self.entries = {c: [] for c in COMPONENTS}
        self.urls = {c: [] for c in COMPONENTS}
        self.excess = []
        for key in doc:
            if key not in (*COMPONENTS, "knownExcess"):
                self.errors.append(f"{path.name}: unknown top-level key {key!r}")
        for comp in COMPONENTS:
            for i, e in enumerate(doc.get(comp) or []):
                where = f"{comp}[{i}]"
                if not str(e.get("by", "")).strip():
                    self.errors.append(f"{where}: no `by` naming the code that makes the call")
                if "url" in e:
                    self.urls[comp].append(e)
                    continue
                self._check_entry(where, e, {"group", "resource", "verbs", "by", "cloud", "scope", "names", "when"})
                self.entries[comp].append(e)
        for i, e in enumerate(doc.get("knownExcess") or []):
            self._check_entry(f"knownExcess[{i}]", e, {"component", "group", "resource", "verbs", "owner"})
            if not str(e.get("owner", "")).strip():
                self.errors.append(f"knownExcess[{i}]: no `owner` saying which change removes it")
            self.excess.append(e)

    def _check_entry(self, where, e, allowed):
        extra = set(e) - allowed
        if extra:
            self.errors.append(f"{where}: unknown keys {sorted(extra)}")
        if "group" not in e or "resource" not in e or not e.get("verbs"):
            self.errors.append(f"{where}: needs group, resource and verbs")
        bad = set(e.get("verbs") or []) - VERBS
        if bad:
            self.errors.append(f"{where}: unknown verbs {sorted(bad)}")
        if e.get("cloud") not in (None, "aws", "simulated"):
            self.errors.append(f"{where}: cloud must be aws or simulated")
        if e.get("scope", "cluster") not in SCOPES:
            self.errors.append(f"{where}: scope must be one of {SCOPES}")
        if "when" in e and (not isinstance(e["when"], str) or e["when"] not in WHEN_VALUES):
            self.errors.append(f"{where}: when must be one of {sorted(WHEN_VALUES)} (charts/ci/rbac_calls.py "
                               "WHEN_VALUES, each rendered on and off by charts/ci/check.py)")

    def whens(self):
        """The chart values some call depends on."""
        return sorted({e["when"] for es in self.entries.values() for e in es if "when" in e})

    def calls(self, cloud, fullname, values=None):
        """Every (component, scope, group, resource, verb, name) declared for this cloud and
        these chart values (a `when` entry only if its value is true in them)."""
        out = set()
        for comp, entries in self.entries.items():
            for e in entries:
                if e.get("cloud", cloud) != cloud:
                    continue
                if "when" in e and not value_of(values or {}, e["when"]):
                    continue
                names = [n.replace("{fullname}", fullname) for n in e.get("names") or ["*"]]
                for verb in e["verbs"]:
                    for n in names:
                        out.add((comp, e.get("scope", "cluster"), e["group"], e["resource"], verb, n))
        return out

    def excess_calls(self, cloud):
        out = set()
        for e in self.excess:
            if e.get("cloud", cloud) != cloud:
                continue
            for verb in e["verbs"]:
                out.add((e["component"], "cluster", e["group"], e["resource"], verb, "*"))
        return out

    def allows_url(self, comp, url, verb):
        return any(url == e["url"] and verb in e.get("verbs", ["get"]) for e in self.urls[comp])

    def allows(self, cloud, fullname, comp, in_release_ns, group, resource, verb, name):
        """Whether an observed request is a declared call. in_release_ns: the request is in
        the release namespace (a Role's grant covers nothing else). `when` is not consulted:
        a call made without its value would have been refused (403), which the audit reports."""
        for e in self.entries[comp]:
            if e.get("cloud", cloud) != cloud or e["group"] != group or e["resource"] != resource:
                continue
            if verb not in e["verbs"]:
                continue
            if e.get("scope", "cluster") == "namespace" and not in_release_ns:
                continue
            names = [n.replace("{fullname}", fullname) for n in e.get("names") or []]
            if names and name not in names:
                continue
            return True
        return False


def value_of(values, dotted):
    """A chart value by its dotted path ("provisioner.capacityBuffers"), None if unset."""
    v = values
    for k in dotted.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(k)
    return v


def component_of(obj):
    return (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component")


def granted(docs):
    """(component, scope, group, resource, verb, name) for every rule of the Adze components'
    ClusterRoles (scope cluster) and Roles (scope namespace) in rendered chart docs, and the
    release's fullname (from the provisioner's ServiceAccount)."""
    out = set()
    fullname = None
    for d in docs:
        comp = component_of(d)
        if comp not in COMPONENTS:
            continue
        if d["kind"] == "ServiceAccount" and comp == "provisioner":
            fullname = d["metadata"]["name"].removesuffix("-provisioner")
        if d["kind"] not in ("ClusterRole", "Role"):
            continue
        scope = "cluster" if d["kind"] == "ClusterRole" else "namespace"
        for r in d.get("rules") or []:
            for g in r.get("apiGroups") or []:
                for res in r.get("resources") or []:
                    for v in r.get("verbs") or []:
                        for n in r.get("resourceNames") or ["*"]:
                            out.add((comp, scope, g, res, v, n))
    return out, fullname


def compare(declared, cloud, docs, values=None):
    """Problems (strings) between what the rendered docs grant and what is declared for the
    values they were rendered with."""
    have, fullname = granted(docs)
    if fullname is None:
        return ["no provisioner ServiceAccount in the rendered chart"]
    want = declared.calls(cloud, fullname, values)
    excess = declared.excess_calls(cloud)
    problems = []
    for c in sorted(want - have):
        problems.append(f"declared but not granted: {fmt(c)}")
    for c in sorted(have - want - excess):
        problems.append(f"granted but no code makes the call: {fmt(c)}")
    for c in sorted(excess - have):
        problems.append(f"knownExcess entry no longer granted (remove it): {fmt(c)}")
    return problems


def fmt(c):
    comp, scope, group, res, verb, name = c
    where = "cluster-wide" if scope == "cluster" else "in the release namespace"
    return f"{comp}: {verb} {group or 'core'}/{res}{'' if name == '*' else ' ' + name} ({where})"
