#!/usr/bin/env python3
"""Checks the Adze chart with Helm's own library (helm-sdkpy) against a real API server.

Run by charts/ci/check.sh, which provides the venv, the control plane (KUBECONFIG) and the
non-CEL CRDs. helm-sdkpy has no `template`: every value set is installed into its own
namespace of the throwaway control plane, so the API server also validates each object.

  check.py                    lint, render value sets, schema rejections, upgrade, uninstall,
                              kind config, manifests/ in sync with the chart
  check.py --write-manifests  regenerate manifests/ from the chart
  check.py --offline          no cluster: manifests/kubernetes-*/ are what the chart renders
                              for each Kubernetes version family (charts/ci/offline.py)
  check.py --write-offline-manifests   regenerate those, no cluster
"""

import asyncio
import copy
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections import Counter

import helm_sdkpy as helm
import yaml

import rbac_calls

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "adze"
KUBECONFIG = os.environ.get("KUBECONFIG", "")
passed = 0
failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS: {what}")
    else:
        failed += 1
        print(f"FAIL: {what}" + (f"\n      {detail}" if detail else ""))
    return ok


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def config(ns):
    return helm.Configuration(namespace=ns, kubeconfig=KUBECONFIG)


def install(release, ns, values):
    r = asyncio.run(
        helm.Install(config(ns)).run(
            release, str(CHART), values=values, wait=False, create_namespace=True, timeout=60
        )
    )
    return r


def docs_of(manifest):
    return [d for d in yaml.safe_load_all(manifest) if d]


def kubectl(*args):
    return subprocess.run(
        ["kubectl", "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True
    )


def one(docs, kind, suffix):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"expected one {kind} *{suffix}, found {len(found)}"
    return found[0]


def container(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]


def rules_allow(role, group, resource, verb, name=None):
    """A rule grants verb on resource: on every object, or (name given) on that one."""
    return any(
        group in r.get("apiGroups", [])
        and resource in r.get("resources", [])
        and verb in r.get("verbs", [])
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in role["rules"]
    )


AWS = {
    "cloudProvider": "aws",
    "clusterName": "demo",
    "clusterEndpoint": "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
    "clusterCABundle": "TFMwdExTMUNSVWRKVGc9PQ==",
    "serviceCIDR": "172.20.0.0/16",
    "aws": {"region": "us-west-2", "interruptionQueue": "demo-interruptions", "kubernetesVersion": "1.30"},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/Adze"}},
    # installCapacityBufferCRD off: the CRD is kept on uninstall, so a second release would
    # find the first one's; its rendering is checked offline (offline_capacity_buffer_crd).
    "provisioner": {"karpenterLabels": True, "nodeRepair": True, "capacityBuffers": True,
                    "installCapacityBufferCRD": False, "zonalShift": True, "terminateFirstDrift": True,
                    "podDeletionCost": True, "vpaPredictions": True},
}
CORE_KINDS = {
    "ServiceAccount": 3, "ClusterRole": 3, "ClusterRoleBinding": 3, "Role": 2, "RoleBinding": 2,
    "Deployment": 2, "DaemonSet": 1, "Service": 2, "PodDisruptionBudget": 2, "ConfigMap": 1,
    "Secret": 3,  # the extender's generated CA, serving and client certificates (TLS by default)
}


def kube_scheduler_effective_config(config_yaml, files=None):
    """The configuration kube-scheduler 1.20 (the harness's build) runs with for a rendered
    v1beta1 file: it loads, defaults and validates the file, writes what it would run with
    (--write-config-to) and exits. The file's kubeconfig is pointed at this control plane and
    its ports at free ones; the rest is as rendered. kube-scheduler reads the extender's
    tlsConfig files while it starts: `files` (rendered path -> PEM) supplies them from a
    temporary directory, and the output names the rendered paths again."""
    cfg = yaml.safe_load(config_yaml)
    cfg["clientConnection"] = {"kubeconfig": KUBECONFIG}
    cfg["leaderElection"] = {"leaderElect": False}
    with socket.socket() as sock:  # kube-scheduler 1.20 refuses port 0 here
        sock.bind(("127.0.0.1", 0))
        cfg["healthzBindAddress"] = cfg["metricsBindAddress"] = f"127.0.0.1:{sock.getsockname()[1]}"
    k8s_bin = os.environ.get("ADZE_K8S_BIN") or os.path.join(
        os.environ.get("ADZE_CACHE") or os.path.expanduser("~/.cache/adze"), "k8s-1.20.2", "bin")
    with tempfile.TemporaryDirectory() as tmp:
        back = {}
        for ext in cfg.get("extenders") or []:
            for k, path in (ext.get("tlsConfig") or {}).items():
                if path in (files or {}):
                    local = pathlib.Path(tmp) / f"{len(back)}.pem"
                    local.write_text(files[path])
                    back[str(local)] = path
                    ext["tlsConfig"][k] = str(local)
        src, out = pathlib.Path(tmp) / "in.yaml", pathlib.Path(tmp) / "out.yaml"
        src.write_text(yaml.safe_dump(cfg))
        r = subprocess.run([os.path.join(k8s_bin, "kube-scheduler"), f"--config={src}", "--secure-port=0",
                            f"--write-config-to={out}"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not out.exists():
            return {"exit": r.returncode, "stderr": r.stderr[-2000:]}
        text = out.read_text()
        for local, path in back.items():
            text = text.replace(local, path)
        return yaml.safe_load(text)


def generated_client_files(docs):
    """The files a control plane's kube-scheduler copies from the generated client Secret."""
    import base64
    data = one(docs, "Secret", "-scheduler-client-tls")["data"]
    return {f"/etc/kubernetes/adze/{f}": base64.b64decode(data[k]).decode()
            for f, k in [("ca.crt", "ca.crt"), ("client.crt", "tls.crt"), ("client.key", "tls.key")]}


def expect_aws(docs):
    check("aws: objects are the core set", Counter(d["kind"] for d in docs) == Counter(CORE_KINDS),
          str(Counter(d["kind"] for d in docs)))
    args = container(one(docs, "Deployment", "-provisioner"))["args"]
    for flag in ["--cloud-provider=aws", "--cluster-name=demo", "--region=us-west-2",
                 "--cluster-endpoint=https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
                 "--interruption-queue=demo-interruptions", "--metrics-addr=0.0.0.0:8080",
                 "--batch-idle-duration=1s", "--max-instance-types=60",
                 "--cluster-ca=TFMwdExTMUNSVWRKVGc9PQ==", "--kubernetes-version=1.30",
                 "--service-cidr=172.20.0.0/16", "--launch-timeout=5m", "--karpenter-labels",
                 "--node-repair", "--capacity-buffers", "--enable-zonal-shift", "--terminate-first-drift",
                 "--pod-deletion-cost", "--vpa-predictions"]:
        check(f"aws: provisioner has {flag}", flag in args, str(args))
    check("aws: no simulated flags", not any(a.startswith("--boot-delay") for a in args))
    role = one(docs, "ClusterRole", "-provisioner")
    check("aws: provisioner may not create nodes or write pod status (simulated only)",
          not rules_allow(role, "", "nodes", "create") and not rules_allow(role, "", "pods/status", "patch"))
    for g, r, v in [("", "pods/eviction", "create"), ("adze.sh", "nodeclaims", "create"),
                    ("adze.sh", "nodeclaims/status", "patch"), ("policy", "poddisruptionbudgets", "list"),
                    ("", "pods", "delete"), ("", "nodes/status", "patch"), ("", "pods", "patch"),
                    ("storage.k8s.io", "volumeattachments", "list"), ("aws.adze.sh", "ec2nodeclasses/status", "patch"),
                    ("autoscaling.k8s.io", "verticalpodautoscalers", "list")]:
        check(f"aws: provisioner may {v} {g or 'core'}/{r}", rules_allow(role, g, r, v))
    check("aws: provisioner may not bind pods", not rules_allow(role, "", "pods/binding", "create"))
    sa = one(docs, "ServiceAccount", "-provisioner")
    check("aws: IRSA annotation on the provisioner's ServiceAccount",
          sa["metadata"].get("annotations", {}).get("eks.amazonaws.com/role-arn", "").endswith("role/Adze"))
    dep = one(docs, "Deployment", "-provisioner")
    check("aws: provisioner runs 2 replicas", dep["spec"]["replicas"] == 2)
    env = {e["name"]: e for e in container(dep)["env"]}
    check("aws: POD_NAME/POD_NAMESPACE for leader election",
          env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace")
    lease = one(docs, "Role", "-provisioner")
    lease_name = sa["metadata"]["name"]
    check("aws: Lease access is namespaced, update only on the Lease the provisioner is given",
          rules_allow(lease, "coordination.k8s.io", "leases", "update", lease_name)
          and not rules_allow(lease, "coordination.k8s.io", "leases", "update", "another")
          and f"--leader-election-name={lease_name}" in args, str(args))
    ds = one(docs, "DaemonSet", "-agent")
    spec = ds["spec"]["template"]["spec"]
    check("agent: hostNetwork", spec.get("hostNetwork") is True)
    check("agent: tolerates every taint", {"operator": "Exists"} in spec["tolerations"])
    check("agent: system-node-critical", spec["priorityClassName"] == "system-node-critical")
    env = {e["name"]: e for e in container(ds)["env"]}
    check("agent: ADZE_NODE_NAME from the downward API",
          env["ADZE_NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName")
    check("agent: --imds-endpoint", "--imds-endpoint=http://169.254.169.254" in container(ds)["args"])
    probe = container(ds).get("livenessProbe", {}).get("httpGet", {})
    check("agent: liveness probe on the /healthz it serves with --health-addr",
          "--health-addr=0.0.0.0:10291" in container(ds)["args"]
          and probe == {"path": "/healthz", "port": 10291}, json.dumps(container(ds)))
    arole = one(docs, "ClusterRole", "-agent")
    check("agent: may evict, patch its node and NodeClaim status",
          rules_allow(arole, "", "pods/eviction", "create") and rules_allow(arole, "", "nodes", "patch")
          and rules_allow(arole, "adze.sh", "nodeclaims/status", "patch"))
    check("agent: may not create NodeClaims or delete nodes",
          not rules_allow(arole, "adze.sh", "nodeclaims", "create") and not rules_allow(arole, "", "nodes", "delete"))
    check("agent: may not delete pods (drains by eviction only)", not rules_allow(arole, "", "pods", "delete"))
    check("agent: no ValidatingAdmissionPolicy on 1.20 with agent.admissionPolicy=auto",
          not any(d["kind"].startswith("ValidatingAdmissionPolicy") for d in docs))
    edep = one(docs, "Deployment", "-extender")
    eenv = {e["name"]: e for e in container(edep)["env"]}
    check("extender: two replicas, one serving: Lease in the release namespace, ready only while leading",
          edep["spec"]["replicas"] == 2 and "--leader-elect=false" not in container(edep)["args"]
          and rules_allow(one(docs, "Role", "-extender"), "coordination.k8s.io", "leases", "update",
                          one(docs, "ServiceAccount", "-extender")["metadata"]["name"])
          and f"--leader-election-name={one(docs, 'ServiceAccount', '-extender')['metadata']['name']}"
          in container(edep)["args"]
          and eenv["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
          and container(edep)["readinessProbe"]["periodSeconds"] == 2, json.dumps(container(edep)))
    check("extender: hold limit left to the binary's default unless set",
          not any(a.startswith("--preemption-hold-limit") for a in container(edep)["args"]))
    erole = one(docs, "ClusterRole", "-extender")
    check("extender: may bind pods and read NodeClaims, nothing more on NodeClaims",
          rules_allow(erole, "", "pods/binding", "create") and rules_allow(erole, "adze.sh", "nodeclaims", "watch")
          and not rules_allow(erole, "adze.sh", "nodeclaims", "patch"))
    check("extender: may not write pods (its signal is an Event), may create Events",
          not any(rules_allow(erole, "", "pods", v) for v in ("patch", "update", "delete"))
          and rules_allow(erole, "", "events", "create"))
    check("provisioner: may watch Events (the extender's signal)", rules_allow(role, "", "events", "watch"))
    cm = one(docs, "ConfigMap", "-scheduler-config")
    for key, version in [("scheduler-config-v1.yaml", "kubescheduler.config.k8s.io/v1"),
                         ("scheduler-config-v1beta1.yaml", "kubescheduler.config.k8s.io/v1beta1")]:
        cfg = yaml.safe_load(cm["data"][key])
        ext = cfg["extenders"][0]
        check(f"scheduler config {key}: {version} with the extender's verbs",
              cfg["apiVersion"] == version and cfg["kind"] == "KubeSchedulerConfiguration"
              and ext["urlPrefix"].startswith("https://") and ext["urlPrefix"].endswith(".svc:8443")
              and [ext.get(v) for v in ("filterVerb", "prioritizeVerb", "preemptVerb", "weight")]
              == ["filter", None, "preempt", None] and ext["nodeCacheCapable"] is True,
              json.dumps(cfg))
        # 1.20's kube-scheduler does not skip a down ignorable extender's bind.
        check(f"scheduler config {key}: ignorable, so kube-scheduler binds on 1.20 (no bindVerb)",
              ext["ignorable"] is True and "bindVerb" not in ext, json.dumps(ext))
        check(f"scheduler config {key}: kube-scheduler's backoff 1 s doubling to 2 s (chart defaults)",
              cfg.get("podInitialBackoffSeconds") == 1 and cfg.get("podMaxBackoffSeconds") == 2, json.dumps(cfg))
    check("1.20: PodDisruptionBudgets are policy/v1beta1",
          any(d["kind"] == "PodDisruptionBudget" for d in docs)
          and all(d["apiVersion"] == "policy/v1beta1" for d in docs if d["kind"] == "PodDisruptionBudget"))
    expect_tls_default(docs, "aws", "aws-adze", "check-aws")


# ---- the extender's TLS: generated by the chart unless told otherwise --------------------

def openssl(*args, stdin=""):
    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, text=True)


def cert_text(pem):
    """openssl's reading of a PEM certificate: subject, issuer, SANs, key usages, dates."""
    r = openssl("x509", "-noout", "-subject", "-issuer", "-ext", "subjectAltName,extendedKeyUsage,basicConstraints",
                "-startdate", "-enddate", "-nameopt", "RFC2253", stdin=pem)
    return r.stdout + r.stderr


def sans(pem):
    text = cert_text(pem)
    m = re.search(r"Subject Alternative Name:\s*\n\s*(.+)", text)
    return sorted(x.strip() for x in m.group(1).split(",")) if m else []


def valid_days(pem):
    import datetime
    text = cert_text(pem)
    fmt = "%b %d %H:%M:%S %Y %Z"
    start = datetime.datetime.strptime(" ".join(re.search(r"notBefore=(.+)", text).group(1).split()), fmt)
    end = datetime.datetime.strptime(" ".join(re.search(r"notAfter=(.+)", text).group(1).split()), fmt)
    return (end - start).days


def verifies(ca_pem, pem, purpose):
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "ca.crt").write_text(ca_pem)
        (pathlib.Path(tmp) / "c.crt").write_text(pem)
        r = openssl("verify", "-purpose", purpose, "-CAfile", f"{tmp}/ca.crt", f"{tmp}/c.crt")
    return r.returncode == 0 and r.stdout.strip().endswith(": OK")


def key_matches(cert_pem, key_pem):
    a = openssl("x509", "-noout", "-pubkey", stdin=cert_pem).stdout
    b = openssl("pkey", "-pubout", stdin=key_pem).stdout
    return bool(a) and a == b


def secret_data(docs, suffix):
    import base64
    sec = one(docs, "Secret", suffix)
    return sec, {k: base64.b64decode(v).decode() for k, v in (sec.get("data") or {}).items()}


def expect_tls_default(docs, label, fullname, ns, cluster_ip=None):
    """TLS values untouched: HTTPS with client certificates, from a PKI the chart generated."""
    ext = one(docs, "Deployment", "-extender")
    c = container(ext)
    check(f"{label}: TLS untouched -> the extender serves HTTPS and requires client certificates (--client-ca)",
          all(a in c["args"] for a in ["--tls-cert=/etc/adze/tls/tls.crt", "--tls-key=/etc/adze/tls/tls.key",
                                       "--client-ca=/etc/adze/tls/ca.crt"]), str(c["args"]))
    check(f"{label}: the extender's probes use HTTPS",
          c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS" and c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS")
    vols = ext["spec"]["template"]["spec"]["volumes"]
    check(f"{label}: the extender mounts the generated Secret {fullname}-extender-tls",
          {"name": "tls", "secret": {"secretName": f"{fullname}-extender-tls"}} in vols
          and {"name": "tls", "mountPath": "/etc/adze/tls", "readOnly": True} in c["volumeMounts"], json.dumps(vols))
    ca_sec, ca = secret_data(docs, "-extender-ca")
    srv_sec, srv = secret_data(docs, "-extender-tls")
    cli_sec, cli = secret_data(docs, "-scheduler-client-tls")
    check(f"{label}: generated Secrets: -extender-tls and -scheduler-client-tls hold ca.crt, tls.crt, tls.key; -extender-ca the CA",
          sorted(srv) == sorted(cli) == ["ca.crt", "tls.crt", "tls.key"] and sorted(ca) == ["tls.crt", "tls.key"]
          and all(s["type"] == "kubernetes.io/tls" for s in (ca_sec, srv_sec, cli_sec)),
          str([sorted(srv), sorted(cli), sorted(ca)]))
    if not (srv.get("ca.crt") and cli.get("ca.crt") and ca.get("tls.crt")):
        return
    check(f"{label}: one CA: the serving Secret's ca.crt, the client Secret's ca.crt and the CA Secret agree",
          srv["ca.crt"] == cli["ca.crt"] == ca["tls.crt"] and key_matches(ca["tls.crt"], ca["tls.key"]))
    check(f"{label}: the CA is a CA (basicConstraints CA:TRUE), valid 10 years",
          "CA:TRUE" in cert_text(ca["tls.crt"]) and 3649 <= valid_days(ca["tls.crt"]) <= 3651, cert_text(ca["tls.crt"]))
    svc = f"{fullname}-extender"
    want = sorted([f"DNS:{svc}", f"DNS:{svc}.{ns}", f"DNS:{svc}.{ns}.svc", f"DNS:{svc}.{ns}.svc.cluster.local"]
                  + ([f"IP Address:{cluster_ip}"] if cluster_ip else []))
    check(f"{label}: the serving certificate's SANs are the Service's names{' and its fixed ClusterIP' if cluster_ip else ''} "
          "(openssl)", sans(srv["tls.crt"]) == want, f"{sans(srv['tls.crt'])} vs {want}")
    check(f"{label}: the serving certificate verifies against the CA as a TLS server, valid 1 year, key matches",
          verifies(srv["ca.crt"], srv["tls.crt"], "sslserver") and 364 <= valid_days(srv["tls.crt"]) <= 366
          and key_matches(srv["tls.crt"], srv["tls.key"]), cert_text(srv["tls.crt"]))
    check(f"{label}: kube-scheduler's client certificate (CN {fullname}-scheduler) verifies against the CA as a TLS client",
          f"CN={fullname}-scheduler" in cert_text(cli["tls.crt"]) and verifies(cli["ca.crt"], cli["tls.crt"], "sslclient")
          and key_matches(cli["tls.crt"], cli["tls.key"]), cert_text(cli["tls.crt"]))
    stranger = openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                       "-subj", "/CN=stranger", "-keyout", "/dev/null").stdout
    check(f"{label}: ... and a certificate of another CA does not (the check can fail)",
          bool(stranger) and not verifies(cli["ca.crt"], stranger, "sslclient"))
    cm = one(docs, "ConfigMap", "-scheduler-config")
    for key in ["scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"]:
        e = yaml.safe_load(cm["data"][key])["extenders"][0]
        check(f"{label}: {key} calls https:// with caFile, certFile and keyFile",
              e["urlPrefix"].startswith("https://") and e["enableHTTPS"] is True
              and e.get("tlsConfig") == {"caFile": "/etc/kubernetes/adze/ca.crt", "certFile": "/etc/kubernetes/adze/client.crt",
                                         "keyFile": "/etc/kubernetes/adze/client.key"}, json.dumps(e))
        check(f"{label}: {key} says how to copy the three files from Secret {fullname}-scheduler-client-tls",
              all(f"kubectl -n {ns} get secret {fullname}-scheduler-client-tls -o jsonpath='{{.data.{k}}}' | base64 -d >{f}"
                  in cm["data"][key] for k, f in [("ca\\.crt", "/etc/kubernetes/adze/ca.crt"),
                                                   ("tls\\.crt", "/etc/kubernetes/adze/client.crt"),
                                                   ("tls\\.key", "/etc/kubernetes/adze/client.key")]), cm["data"][key])
    effective = kube_scheduler_effective_config(cm["data"]["scheduler-config-v1beta1.yaml"], generated_client_files(docs))
    eff = (effective.get("extenders") or [{}])[0]
    check(f"{label}: kube-scheduler 1.20 starts on the rendered v1beta1 config with the generated files, TLS kept",
          eff.get("enableHTTPS") is True and (eff.get("tlsConfig") or {}).get("certFile") == "/etc/kubernetes/adze/client.crt",
          json.dumps(effective))


def expect_tls_generated(docs):
    """Generated PKI with a fixed ClusterIP, the chart's scheduler and the webhook."""
    expect_tls_default(docs, "tls-generated", "tls-generated-adze", "check-tls-generated", cluster_ip="10.96.200.202")
    sched = one(docs, "Deployment", "-scheduler")
    check("tls-generated: the 1.33 scheduler retries an unschedulable pod after 60 s at the latest (the hold limit ends on time)",
          "--pod-max-in-unschedulable-pods-duration=60s" in container(sched)["command"], json.dumps(container(sched)["command"]))
    vols = sched["spec"]["template"]["spec"]["volumes"]
    sources = [src["secret"] for v in vols for src in v.get("projected", {}).get("sources", [])]
    check("tls-generated: the scheduler mounts the generated CA and its client certificate",
          {"name": "tls-generated-adze-extender-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]} in sources
          and {"name": "tls-generated-adze-scheduler-client-tls",
               "items": [{"key": "tls.crt", "path": "client.crt"}, {"key": "tls.key", "path": "client.key"}]} in sources
          and {"name": "extender-ca", "mountPath": "/etc/kubernetes/adze", "readOnly": True} in container(sched)["volumeMounts"],
          json.dumps(vols))
    cfg = yaml.safe_load(one(docs, "ConfigMap", "-scheduler-config")["data"]["adze-scheduler.yaml"])
    check("tls-generated: the scheduler's config presents the client certificate",
          cfg["extenders"][0].get("tlsConfig") == {"caFile": "/etc/kubernetes/adze/ca.crt",
                                                   "certFile": "/etc/kubernetes/adze/client.crt",
                                                   "keyFile": "/etc/kubernetes/adze/client.key"}, json.dumps(cfg))
    _, srv = secret_data(docs, "-extender-tls")
    import base64
    hook = one(docs, "MutatingWebhookConfiguration", "-scheduler-name")
    bundle = base64.b64decode(hook["webhooks"][0]["clientConfig"].get("caBundle", "")).decode()
    check("tls-generated: the webhook's caBundle is the generated CA", bundle and bundle == srv.get("ca.crt"))
    check("tls-generated: no cert-manager objects",
          not any(d["kind"] in ("Certificate", "Issuer") for d in docs)
          and "cert-manager.io/inject-ca-from" not in (hook["metadata"].get("annotations") or {}))


def diff_paths(a, b, path=""):
    """Paths where two parsed YAML documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff_paths(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in diff_paths(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def insecure_opt_out():
    """extender.tls.insecurePlainHTTP=true against the same values without it, same release
    name: the only differences are the ones the opt-out names (no Secrets, plain HTTP)."""
    base = {"cloudProvider": "simulated"}
    renders = {}
    # One after the other in one namespace: cluster-scoped objects carry the release's name.
    for label, values in [("on", base), ("off", merge(base, {"extender": {"tls": {"insecurePlainHTTP": True}}}))]:
        try:
            r = install("same", "check-tls-optout", values)
        except helm.HelmError as e:
            check(f"insecure opt-out: TLS {label} installs", False, str(e))
            return
        renders[label] = docs_of(r["manifest"].replace("check-tls-optout", "NS"))
        asyncio.run(helm.Uninstall(config("check-tls-optout")).run("same", wait=True, timeout=60))
    on, off = renders["on"], renders["off"]
    key = lambda d: (d["kind"], d["metadata"]["name"])
    on_by, off_by = {key(d): d for d in on}, {key(d): d for d in off}
    check("insecure opt-out: the same objects less the three generated Secrets",
          set(on_by) - set(off_by) == {("Secret", "same-adze-extender-ca"), ("Secret", "same-adze-extender-tls"),
                                       ("Secret", "same-adze-scheduler-client-tls")} and set(off_by) <= set(on_by),
          str(sorted(set(on_by) ^ set(off_by))))
    allowed = {
        ("Deployment", "same-adze-extender"): {
            ".spec.template.spec.containers[0].args", ".spec.template.spec.containers[0].livenessProbe.httpGet.scheme",
            ".spec.template.spec.containers[0].readinessProbe.httpGet.scheme",
            ".spec.template.spec.containers[0].volumeMounts", ".spec.template.spec.volumes"},
        ("ConfigMap", "same-adze-scheduler-config"): {".data.scheduler-config-v1.yaml", ".data.scheduler-config-v1beta1.yaml"},
    }
    changed = {k: diff_paths(on_by[k], off_by[k]) for k in off_by}
    unexpected = {f"{k[0]}/{k[1]}": [p for p in ps if p not in allowed.get(k, set())] for k, ps in changed.items()}
    unexpected = {k: v for k, v in unexpected.items() if v}
    check("insecure opt-out: nothing else changes (only the extender's TLS args, probe scheme, TLS volume and the "
          "scheduler config)", not unexpected, json.dumps(unexpected))
    c = container(off_by[("Deployment", "same-adze-extender")])
    check("insecure opt-out: the extender serves plain HTTP (no --tls-*, no --client-ca, HTTP probes, no TLS volume)",
          not any(a.startswith(("--tls-", "--client-ca")) for a in c["args"])
          and c["livenessProbe"]["httpGet"]["scheme"] == "HTTP" and "volumeMounts" not in c
          and "volumes" not in off_by[("Deployment", "same-adze-extender")]["spec"]["template"]["spec"], json.dumps(c))
    cm = off_by[("ConfigMap", "same-adze-scheduler-config")]
    for k in ["scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"]:
        cfg_on = yaml.safe_load(on_by[("ConfigMap", "same-adze-scheduler-config")]["data"][k])
        cfg_off = yaml.safe_load(cm["data"][k])
        e = cfg_off["extenders"][0]
        check(f"insecure opt-out: {k} calls http:// without TLS; the rest of the file is the same",
              e["urlPrefix"] == "http://same-adze-extender.NS.svc:8443" and e["enableHTTPS"] is False and "tlsConfig" not in e
              and diff_paths(cfg_on, cfg_off) == [".extenders[0].enableHTTPS", ".extenders[0].tlsConfig",
                                                  ".extenders[0].urlPrefix"],
              json.dumps([e, diff_paths(cfg_on, cfg_off)]))


def upgrade_keeps_ca():
    """An upgrade of the generated PKI keeps the CA (lookup) and re-issues the leaves from it."""
    ns, rel = "check-tls-generated", "tls-generated"
    def live(name, k):
        import base64
        out = kubectl("-n", ns, "get", "secret", name, "-o", "json")
        return base64.b64decode(json.loads(out.stdout)["data"][k]).decode() if out.returncode == 0 else ""
    before = {k: live(f"{rel}-adze-extender-tls", k) for k in ("ca.crt", "tls.crt")}
    before_client = live(f"{rel}-adze-scheduler-client-tls", "tls.crt")
    try:
        values = merge(dict(VALUE_SETS_BY_NAME[rel]), {"provisioner": {"maxInstanceTypes": 30}})
        r = asyncio.run(helm.Upgrade(config(ns)).run(rel, str(CHART), values=values, wait=False))
        check("tls upgrade: revision 2 deployed", r["version"] == 2 and r["info"]["status"] == "deployed")
    except helm.HelmError as e:
        check("tls upgrade", False, str(e))
        return
    after = {k: live(f"{rel}-adze-extender-tls", k) for k in ("ca.crt", "tls.crt")}
    after_client = live(f"{rel}-adze-scheduler-client-tls", "tls.crt")
    check("tls upgrade: the CA kube-scheduler trusts is unchanged (read back with lookup)",
          before["ca.crt"] and after["ca.crt"] == before["ca.crt"]
          and live(f"{rel}-adze-scheduler-client-tls", "ca.crt") == before["ca.crt"])
    check("tls upgrade: serving and client certificates re-issued from that CA (and still verify against it)",
          after["tls.crt"] != before["tls.crt"] and after_client != before_client
          and verifies(before["ca.crt"], after["tls.crt"], "sslserver")
          and verifies(before["ca.crt"], after_client, "sslclient"))
    check("tls upgrade: the client certificate issued before the upgrade still verifies (a control plane's copy keeps working)",
          verifies(after["ca.crt"], before_client, "sslclient"))
    hook = kubectl("get", "mutatingwebhookconfiguration", f"{rel}-adze-scheduler-name", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
    import base64
    check("tls upgrade: the webhook's caBundle is still that CA",
          hook.returncode == 0 and base64.b64decode(hook.stdout).decode() == before["ca.crt"], hook.stderr)


def expect_simulated(docs):
    args = container(one(docs, "Deployment", "-provisioner"))["args"]
    check("simulated: --cloud-provider=simulated --boot-delay=3s",
          "--cloud-provider=simulated" in args and "--boot-delay=3s" in args, str(args))
    check("simulated: no AWS flags", not any(a.startswith("--cluster-name") for a in args))
    check("simulated: no --karpenter-labels unless provisioner.karpenterLabels", "--karpenter-labels" not in args)
    check("simulated: no --node-repair unless provisioner.nodeRepair (off by default, as Karpenter's gate)",
          "--node-repair" not in args)
    check("simulated: no --terminate-first-drift unless provisioner.terminateFirstDrift (off by default, as Karpenter's gate)",
          "--terminate-first-drift" not in args)
    check("simulated: no --capacity-buffers unless provisioner.capacityBuffers (off by default, as Karpenter's gate)",
          "--capacity-buffers" not in args)
    check("simulated: no --pod-deletion-cost unless provisioner.podDeletionCost (off by default, as Karpenter's gate)",
          "--pod-deletion-cost" not in args)
    check("simulated: provisioner may not patch pods unless provisioner.podDeletionCost (least privilege)",
          not rules_allow(one(docs, "ClusterRole", "-provisioner"), "", "pods", "patch"))
    check("simulated: no --vpa-predictions unless provisioner.vpaPredictions (off by default, as Karpenter's gate)",
          "--vpa-predictions" not in args)
    check("simulated: provisioner may not list verticalpodautoscalers unless provisioner.vpaPredictions (least privilege)",
          not rules_allow(one(docs, "ClusterRole", "-provisioner"), "autoscaling.k8s.io", "verticalpodautoscalers", "list"))
    check("simulated: no --enable-zonal-shift unless provisioner.zonalShift (off by default, as Karpenter's setting)",
          "--enable-zonal-shift" not in args)
    role = one(docs, "ClusterRole", "-provisioner")
    ext = yaml.safe_load(one(docs, "ConfigMap", "-scheduler-config")["data"]["scheduler-config-v1.yaml"])["extenders"][0]
    check("simulated: schedulerConfig.bind=scheduler leaves bindVerb out even with ignorable: false",
          ext["ignorable"] is False and "bindVerb" not in ext, json.dumps(ext))
    check("simulated: schedulerConfig.prioritize=true, weight=7 adds the prioritize verb with that weight",
          ext.get("prioritizeVerb") == "prioritize" and ext.get("weight") == 7, json.dumps(ext))
    v1beta1 = one(docs, "ConfigMap", "-scheduler-config")["data"]["scheduler-config-v1beta1.yaml"]
    for key in ["scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"]:
        cfg = yaml.safe_load(one(docs, "ConfigMap", "-scheduler-config")["data"][key])
        check(f"simulated: schedulerConfig.podInitialBackoffSeconds=3, podMaxBackoffSeconds=4 rendered ({key})",
              cfg.get("podInitialBackoffSeconds") == 3 and cfg.get("podMaxBackoffSeconds") == 4, json.dumps(cfg))
    effective = kube_scheduler_effective_config(v1beta1, generated_client_files(docs))
    check("simulated: kube-scheduler 1.20 reads the rendered v1beta1 config and runs with backoff 3 s to 4 s",
          effective.get("podInitialBackoffSeconds") == 3 and effective.get("podMaxBackoffSeconds") == 4,
          json.dumps(effective))
    check("simulated: provisioner may create nodes and patch node and pod status",
          rules_allow(role, "", "nodes", "create") and rules_allow(role, "", "nodes/status", "patch")
          and rules_allow(role, "", "pods/status", "patch"))


def expect_eks_second_scheduler(docs):
    kinds = Counter(d["kind"] for d in docs)
    for kind in ["MutatingWebhookConfiguration", "ServiceMonitor", "PodMonitor", "PrometheusRule"]:
        check(f"eks: renders a {kind}", kinds[kind] == 1, str(kinds))
    expect_monitoring(docs, ["adze-provisioner", "adze-extender", "adze-agent"])
    certs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Certificate"}
    issuers = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Issuer"}
    ca, serving = certs.get("eks-adze-extender-ca", {}), certs.get("eks-adze-extender", {})
    check("eks: the serving certificate is signed by a CA of the release's own (ca.crt survives renewals)",
          ca.get("spec", {}).get("isCA") is True
          and ca["spec"]["privateKey"]["rotationPolicy"] == "Never"
          and issuers.get("eks-adze-extender-ca", {}).get("spec", {}).get("ca", {}).get("secretName") == ca["spec"]["secretName"]
          and serving.get("spec", {}).get("issuerRef", {}).get("name") == "eks-adze-extender-ca"
          and "selfSigned" in issuers.get("eks-adze-selfsigned", {}).get("spec", {}),
          json.dumps({"certs": certs, "issuers": issuers}))
    check("eks: three Deployments (provisioner, extender, scheduler)", kinds["Deployment"] == 3)
    sched = one(docs, "Deployment", "-scheduler")
    c = container(sched)
    check("eks: scheduler runs upstream kube-scheduler with the chart's config",
          c["image"].startswith("registry.k8s.io/kube-scheduler:")
          and "--config=/etc/adze-scheduler/adze-scheduler.yaml" in c["command"])
    cm = one(docs, "ConfigMap", "-scheduler-config")
    cfg = yaml.safe_load(cm["data"]["adze-scheduler.yaml"])
    ext = cfg["extenders"][0]
    check("eks: the second scheduler retries with the chart's backoff (1 s to 2 s)",
          cfg.get("podInitialBackoffSeconds") == 1 and cfg.get("podMaxBackoffSeconds") == 2, json.dumps(cfg))
    check("eks: scheduler.podMaxInUnschedulablePodsDuration=45s becomes the scheduler's flag",
          "--pod-max-in-unschedulable-pods-duration=45s" in container(sched)["command"], json.dumps(container(sched)["command"]))
    check("eks: second scheduler profile adze-scheduler, HTTPS extender with a CA file",
          cfg["profiles"][0]["schedulerName"] == "adze-scheduler" and ext["enableHTTPS"] is True
          and ext["urlPrefix"].startswith("https://") and ext["tlsConfig"]["caFile"] == "/etc/kubernetes/adze/ca.crt",
          json.dumps(cfg))
    check("eks: a 1.33 scheduler skips a down ignorable extender's bind, so it binds through it",
          ext["ignorable"] is True and ext.get("bindVerb") == "bind", json.dumps(ext))
    check("eks: leader election on a lock of its own",
          cfg["leaderElection"]["resourceName"] == "adze-scheduler" and cfg["leaderElection"]["leaderElect"] is True)
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    check("eks: the CA is mounted where the config looks", "/etc/kubernetes/adze" in mounts, str(mounts))
    crbs = {d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"}
    check("eks: scheduler bound to system:kube-scheduler and system:volume-scheduler",
          {"system:kube-scheduler", "system:volume-scheduler"} <= crbs)
    hook = one(docs, "MutatingWebhookConfiguration", "-scheduler-name")
    w = hook["webhooks"][0]
    check("eks: webhook calls the extender's /mutate over the Service, CA from cert-manager",
          w["clientConfig"]["service"]["path"] == "/mutate"
          and w["clientConfig"]["service"]["name"].endswith("-extender")
          and "cert-manager.io/inject-ca-from" in hook["metadata"]["annotations"]
          and w["namespaceSelector"] == {"matchLabels": {"adze.sh/scheduler": "enabled"}}
          and w["failurePolicy"] == "Ignore" and w["sideEffects"] == "None")
    np = one(docs, "NetworkPolicy", "-extender")
    peers = np["spec"]["ingress"][0]["from"]
    check("eks: NetworkPolicy admits the extender's port only from the second scheduler and the listed peers",
          np["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "extender"
          and len(np["spec"]["ingress"]) == 1 and np["spec"]["ingress"][0]["ports"] == [{"port": 8443, "protocol": "TCP"}]
          and len(peers) == 2 and peers[0]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "scheduler"
          and "namespaceSelector" in peers[1], json.dumps(np["spec"]))
    eargs = container(one(docs, "Deployment", "-extender"))["args"]
    check("eks: extender serves TLS and the webhook",
          "--tls-cert=/etc/adze/tls/tls.crt" in eargs and "--webhook-scheduler-name=adze-scheduler" in eargs, str(eargs))
    client = certs.get("eks-adze-scheduler-client", {}).get("spec", {})
    check("eks: the extender requires client certificates; cert-manager issues the scheduler's from the same CA",
          "--client-ca=/etc/adze/tls/ca.crt" in eargs and "client auth" in client.get("usages", [])
          and client.get("issuerRef", {}).get("name") == "eks-adze-extender-ca"
          and ext["tlsConfig"].get("certFile") == "/etc/kubernetes/adze/client.crt", json.dumps(client))


METRICS = ROOT / "charts" / "ci" / "metrics"


def metrics_used(*args):
    return subprocess.run([sys.executable, str(ROOT / "charts" / "ci" / "metrics-used.py"), *args,
                           *map(str, sorted(METRICS.glob("*.prom")))], capture_output=True, text=True)


def expect_monitoring(docs, groups):
    """The dashboard ConfigMap and PrometheusRule as rendered: well-formed, and every metric
    they query served (charts/ci/metrics/*.prom, themselves checked against the source)."""
    dash = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    rule = [d for d in docs if d["kind"] == "PrometheusRule"]
    if dash:
        try:
            panels = json.loads(dash[0]["data"]["adze.json"])["panels"]
        except (KeyError, ValueError) as e:
            panels = []
            check("monitoring: the dashboard ConfigMap holds adze.json", False, repr(e))
        check(f"monitoring: dashboard ConfigMap labelled grafana_dashboard: \"1\" with the JSON ({len(panels)} panels)",
              len(dash) == 1 and len(panels) > 10 and dash[0]["metadata"].get("annotations", {}).get("grafana_folder") == "Adze")
    got = [g["name"] for g in rule[0]["spec"]["groups"]] if rule else []
    check(f"monitoring: PrometheusRule groups are {groups}", got == groups, str(got))
    rules = [r for d in rule for g in d["spec"]["groups"] for r in g["rules"]]
    bad = [r.get("alert") for r in rules if not (r.get("for") and r.get("labels", {}).get("severity") in ("critical", "warning", "info")
                                                  and r.get("annotations", {}).get("summary") and r.get("annotations", {}).get("description"))]
    check(f"monitoring: every alert ({len(rules)}) has for:, a severity and a summary and description", rules and not bad, str(bad))
    if rule:
        check("monitoring: PrometheusRule carries metrics.prometheusRule.labels",
              rule[0]["metadata"]["labels"].get("release") == "kube-prometheus-stack")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump_all([d for d in docs if d["kind"] in ("ConfigMap", "PrometheusRule")], f)
        f.flush()
        r = metrics_used("--no-chart", "--manifest", f.name)
    check("monitoring: every metric the rendered dashboard and alerts query is served (metrics-used.py)",
          r.returncode == 0, r.stdout + r.stderr)


def metrics_static():
    """No cluster needed: the chart's query files against the served inventory and the source."""
    r = metrics_used("--source", str(ROOT))
    check("metrics-used.py: every metric in dashboards/ and rules/ is served, and charts/ci/metrics/*.prom agree "
          "with the families the source registers", r.returncode == 0, r.stdout + r.stderr)
    print("      " + (r.stdout.strip().splitlines() or [""])[-1])
    bogus = ("kind: PrometheusRule\nmetadata: {name: x}\nspec:\n  groups:\n  - name: g\n    rules:\n"
             "    - alert: A\n      expr: 'histogram_quantile(0.9, sum by (le) (rate(adze_made_up_bucket{a=\"b\"}[5m]))) > on (x) adze_leader'\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(bogus)
        f.flush()
        r = metrics_used("--no-chart", "--manifest", f.name)
    check("metrics-used.py: fails naming a metric nothing serves",
          r.returncode == 1 and "unknown metric adze_made_up_bucket" in r.stdout and "unknown metric adze_leader" not in r.stdout,
          r.stdout + r.stderr)
    docs = (ROOT / "docs" / "operations.md").read_text()
    families = sorted({m for f in METRICS.glob("*.prom") for m in re.findall(r"^# TYPE (\S+)", f.read_text(), re.M)})
    missing = [f for f in families if f"`{f}`" not in docs]
    check(f"docs/operations.md's metrics table names every served family ({len(families)})", not missing, str(missing))


def expect_v1beta1_secret(docs):
    expect_monitoring(docs, ["adze-provisioner", "adze-extender"])
    cm = one(docs, "ConfigMap", "-scheduler-config")
    cfg = yaml.safe_load(cm["data"]["adze-scheduler.yaml"])
    check("1.20 scheduler: v1beta1 config, single replica without leader election",
          cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1beta1" and cfg["leaderElection"]["leaderElect"] is False)
    check("1.20 scheduler image, ignorable: no bindVerb", "bindVerb" not in cfg["extenders"][0], json.dumps(cfg))
    cmd = container(one(docs, "Deployment", "-scheduler"))["command"]
    check("1.20 scheduler image: no --pod-max-in-unschedulable-pods-duration (1.24+; 60 s built in)",
          not any(a.startswith("--pod-max-in-unschedulable-pods-duration") for a in cmd), json.dumps(cmd))
    svc = one(docs, "Service", "-extender")
    check("fixed ClusterIP for the extender Service", svc["spec"]["clusterIP"] == "10.96.200.201")
    vols = one(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]["volumes"]
    sources = [src["secret"] for v in vols for src in v.get("projected", {}).get("sources", [])]
    check("user TLS secret's ca.crt and the client certificate secret projected into the scheduler",
          {"name": "my-extender-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]} in sources
          and {"name": "my-scheduler-client", "items": [{"key": "tls.crt", "path": "client.crt"},
                                                        {"key": "tls.key", "path": "client.key"}]} in sources,
          json.dumps(vols))
    tls = cfg["extenders"][0]["tlsConfig"]
    check("1.20 scheduler presents its client certificate to the extender",
          tls == {"caFile": "/etc/kubernetes/adze/ca.crt", "certFile": "/etc/kubernetes/adze/client.crt",
                  "keyFile": "/etc/kubernetes/adze/client.key"}, json.dumps(tls))
    check("no agent when agent.enabled=false", not any(d["kind"] == "DaemonSet" for d in docs))
    eargs = container(one(docs, "Deployment", "-extender"))["args"]
    check("one extender replica without leader election: --leader-elect=false, no Lease Role; hold limit passed",
          "--leader-elect=false" in eargs and "--preemption-hold-limit=10m" in eargs
          and not any(d["kind"] == "Role" and d["metadata"]["name"].endswith("-extender") for d in docs), str(eargs))


def expect_minimal(docs):
    kinds = Counter(d["kind"] for d in docs)
    check("minimal: only the provisioner's objects and the scheduler ConfigMap",
          kinds == Counter({"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 1,
                            "RoleBinding": 1, "Deployment": 1, "Service": 1, "ConfigMap": 1}), str(kinds))
    cm = one(docs, "ConfigMap", "-scheduler-config")
    for key in ["scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"]:
        ext = yaml.safe_load(cm["data"][key])["extenders"][0]
        check(f"minimal: ignorable: false binds through the extender ({key})",
              ext["ignorable"] is False and ext.get("bindVerb") == "bind", json.dumps(ext))
        cfg = yaml.safe_load(cm["data"][key])
        check(f"minimal: podMaxBackoffSeconds null leaves kube-scheduler's default ({key})",
              "podMaxBackoffSeconds" not in cfg and cfg.get("podInitialBackoffSeconds") == 1, json.dumps(cfg))


VALUE_SETS = [
    ("aws", AWS, expect_aws),
    ("simulated", {"cloudProvider": "simulated", "simulated": {"bootDelay": "3s"},
                   "schedulerConfig": {"ignorable": False, "bind": "scheduler", "prioritize": True, "weight": 7,
                                       "podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 4}}, expect_simulated),
    ("eks", merge(AWS, {
        "extender": {"tls": {"certManager": {"enabled": True}},
                     "networkPolicy": {"enabled": True, "from": [
                         {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}},
        "scheduler": {"enabled": True, "podMaxInUnschedulablePodsDuration": "45s"},
        "webhook": {"enabled": True},
        "metrics": {"serviceMonitor": {"enabled": True},
                    "dashboard": {"enabled": True, "annotations": {"grafana_folder": "Adze"}},
                    "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
    }), expect_eks_second_scheduler),
    ("v1beta1", merge(AWS, {
        "extender": {"replicas": 1, "leaderElection": {"enabled": False}, "preemption": {"holdLimit": "10m"},
                     "service": {"clusterIP": "10.96.200.201"},
                     "tls": {"secretName": "my-extender-tls", "clientSecretName": "my-scheduler-client"}},
        "scheduler": {"enabled": True, "replicas": 1, "configApiVersion": "kubescheduler.config.k8s.io/v1beta1",
                      "image": {"tag": "v1.20.2"}},
        "agent": {"enabled": False},
        "metrics": {"prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
    }), expect_v1beta1_secret),
    ("tls-generated", {"cloudProvider": "simulated", "extender": {"service": {"clusterIP": "10.96.200.202"}},
                       "scheduler": {"enabled": True, "replicas": 1}, "webhook": {"enabled": True}}, expect_tls_generated),
    ("minimal", {"cloudProvider": "simulated", "extender": {"enabled": False}, "agent": {"enabled": False},
                 "provisioner": {"podDisruptionBudget": {"enabled": False}},
                 "schedulerConfig": {"ignorable": False, "podMaxBackoffSeconds": None}}, expect_minimal),
]

VALUE_SETS_BY_NAME = {name: values for name, values, _ in VALUE_SETS}

# (name, values, text the error must contain)
BAD = [
    ("unknown cloud provider", {"cloudProvider": "gcp"}, "cloudProvider"),
    ("unknown agent.admissionPolicy", {"cloudProvider": "simulated", "agent": {"admissionPolicy": "on"}}, "admissionPolicy"),
    ("agent.admissionPolicy=enabled on a cluster without ValidatingAdmissionPolicy (1.20)",
     {"cloudProvider": "simulated", "agent": {"admissionPolicy": "enabled"}}, "ValidatingAdmissionPolicy"),
    ("aws without clusterName", {"cloudProvider": "aws", "clusterEndpoint": "https://x"}, "clusterName"),
    ("aws endpoint not https", merge(AWS, {"clusterEndpoint": "http://x"}), "clusterEndpoint"),
    ("service CIDR not a CIDR", merge(AWS, {"serviceCIDR": "10.100.0.0"}), "serviceCIDR"),
    ("aws without region", merge(AWS, {"aws": {"region": ""}}), "region"),
    ("misspelled key", {"cloudProvider": "simulated", "provisoner": {"replicas": 1}}, "provisoner"),
    ("bad duration", {"cloudProvider": "simulated", "provisioner": {"batchIdleDuration": "1 second"}}, "batchIdleDuration"),
    ("zero maxInstanceTypes", {"cloudProvider": "simulated", "provisioner": {"maxInstanceTypes": 0}}, "maxInstanceTypes"),
    ("second scheduler named default-scheduler",
     {"cloudProvider": "simulated", "scheduler": {"enabled": True, "name": "default-scheduler"}}, "scheduler/name"),
    ("webhook without TLS", {"cloudProvider": "simulated", "scheduler": {"enabled": True}, "webhook": {"enabled": True},
                             "extender": {"tls": {"insecurePlainHTTP": True}}},
     "webhook.enabled does not work with extender.tls.insecurePlainHTTP=true"),
    ("binding through an ignorable extender on 1.20",
     {"cloudProvider": "simulated", "schedulerConfig": {"bind": "extender"}}, "schedulerConfig.bind=extender"),
    ("unknown schedulerConfig.bind", {"cloudProvider": "simulated", "schedulerConfig": {"bind": "always"}}, "bind"),
    ("a prioritize weight without prioritize", {"cloudProvider": "simulated", "schedulerConfig": {"weight": 5}},
     "schedulerConfig.weight has no effect without schedulerConfig.prioritize: true"),
    ("second scheduler with client auth but no client certificate",
     {"cloudProvider": "simulated", "scheduler": {"enabled": True},
      "extender": {"tls": {"secretName": "s"}}}, "extender.tls.clientSecretName"),
    ("two extender replicas without leader election",
     {"cloudProvider": "simulated", "extender": {"leaderElection": {"enabled": False}}}, "extender.leaderElection.enabled=false"),
    ("a preemption hold limit with preemption allowed",
     {"cloudProvider": "simulated", "extender": {"preemption": {"policy": "allow", "holdLimit": "1m"}}},
     "extender.preemption.holdLimit has no effect"),
    ("the unschedulable-pods duration on a scheduler image without the flag",
     {"cloudProvider": "simulated", "scheduler": {"enabled": True, "replicas": 1, "image": {"tag": "v1.23.9"},
                                                  "podMaxInUnschedulablePodsDuration": "45s"}},
     "scheduler.podMaxInUnschedulablePodsDuration needs scheduler.image.tag 1.24"),
    ("a scheduler CA file without TLS", {"cloudProvider": "simulated", "schedulerConfig": {"caFile": "/x/ca.crt"},
                                         "extender": {"tls": {"insecurePlainHTTP": True}}},
     "schedulerConfig.caFile has no effect with extender.tls.insecurePlainHTTP=true"),
    ("a scheduler client certificate without client auth",
     {"cloudProvider": "simulated", "schedulerConfig": {"clientKeyFile": "/x/c.key"},
      "extender": {"tls": {"insecureSkipClientAuth": True}}},
     "schedulerConfig.clientKeyFile has no effect"),
    ("a misspelled dashboard key", {"cloudProvider": "simulated", "metrics": {"dashboard": {"enable": True}}}, "enable"),
    ("an extender NetworkPolicy with no peer (it would admit everyone)",
     {"cloudProvider": "simulated", "extender": {"networkPolicy": {"enabled": True}}},
     "extender.networkPolicy.enabled needs scheduler.enabled or extender.networkPolicy.from"),
    ("NetworkPolicy peers without the NetworkPolicy",
     {"cloudProvider": "simulated", "extender": {"networkPolicy": {"from": [{"podSelector": {}}]}}},
     "extender.networkPolicy.from has no effect"),
    ("dashboard labels without the dashboard",
     {"cloudProvider": "simulated", "metrics": {"dashboard": {"labels": {"a": "b"}}}},
     "metrics.dashboard.labels has no effect without metrics.dashboard.enabled"),
    ("a max backoff below the initial one",
     {"cloudProvider": "simulated", "schedulerConfig": {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2}},
     "schedulerConfig.podMaxBackoffSeconds (2) must be at least schedulerConfig.podInitialBackoffSeconds (5)"),
    ("an initial backoff above kube-scheduler's default max",
     {"cloudProvider": "simulated", "schedulerConfig": {"podInitialBackoffSeconds": 11, "podMaxBackoffSeconds": None}},
     "schedulerConfig.podMaxBackoffSeconds (10) must be at least"),
    ("a zero backoff", {"cloudProvider": "simulated", "schedulerConfig": {"podInitialBackoffSeconds": 0}},
     "podInitialBackoffSeconds"),
    ("the removed extender.tls.enabled (TLS is always on)",
     {"cloudProvider": "simulated", "extender": {"tls": {"enabled": False}}},
     "extender.tls.enabled was removed: the extender always serves HTTPS"),
    ("the removed extender.tls.clientAuth (turning it off is insecureSkipClientAuth)",
     {"cloudProvider": "simulated", "extender": {"tls": {"clientAuth": False}}},
     "extender.tls.clientAuth was removed"),
    ("a misspelled insecure opt-out", {"cloudProvider": "simulated", "extender": {"tls": {"insecurePlainHttp": True}}},
     "insecurePlainHttp"),
    ("a certificate Secret with plain HTTP",
     {"cloudProvider": "simulated", "extender": {"tls": {"insecurePlainHTTP": True, "secretName": "s"}}},
     "extender.tls.secretName has no effect with extender.tls.insecurePlainHTTP=true"),
    ("cert-manager with plain HTTP",
     {"cloudProvider": "simulated", "extender": {"tls": {"insecurePlainHTTP": True, "certManager": {"enabled": True}}}},
     "extender.tls.certManager has no effect with extender.tls.insecurePlainHTTP=true"),
    ("skipping client auth with plain HTTP (already no TLS)",
     {"cloudProvider": "simulated", "extender": {"tls": {"insecurePlainHTTP": True, "insecureSkipClientAuth": True}}},
     "extender.tls.insecureSkipClientAuth has no effect with extender.tls.insecurePlainHTTP=true"),
    ("two certificate sources", {"cloudProvider": "simulated",
                                 "extender": {"tls": {"secretName": "s", "certManager": {"enabled": True}}}},
     "extender.tls.secretName and extender.tls.certManager.enabled name two sources"),
    ("an issuerRef without cert-manager",
     {"cloudProvider": "simulated", "extender": {"tls": {"certManager": {"issuerRef": {"name": "x"}}}}},
     "extender.tls.certManager.issuerRef has no effect without extender.tls.certManager.enabled"),
    ("a caBundle the chart would not use (generated CA)",
     {"cloudProvider": "simulated", "extender": {"tls": {"caBundle": "QQ=="}}},
     "extender.tls.caBundle has no effect without extender.tls.secretName and webhook.enabled"),
    ("a client certificate Secret with generated certificates",
     {"cloudProvider": "simulated", "scheduler": {"enabled": True}, "extender": {"tls": {"clientSecretName": "c"}}},
     "extender.tls.clientSecretName has no effect without extender.tls.secretName"),
    ("a client certificate Secret without the chart's scheduler",
     {"cloudProvider": "simulated", "extender": {"tls": {"secretName": "s", "clientSecretName": "c"}}},
     "extender.tls.clientSecretName has no effect without scheduler.enabled"),
    ("an http:// extender URL while the extender serves HTTPS",
     {"cloudProvider": "simulated", "schedulerConfig": {"extenderURL": "http://10.96.0.50:8443"}},
     "schedulerConfig.extenderURL must start with https://"),
    ("an https:// extender URL with plain HTTP",
     {"cloudProvider": "simulated", "schedulerConfig": {"extenderURL": "https://10.96.0.50:8443"},
      "extender": {"tls": {"insecurePlainHTTP": True}}},
     "schedulerConfig.extenderURL must start with http://"),
]


def lint():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        chart = pathlib.Path(tmp) / "adze"
        shutil.copytree(CHART, chart)
        for name, over in [("aws", AWS), ("simulated", {"cloudProvider": "simulated"})]:
            (chart / "values.yaml").write_text(yaml.safe_dump(merge(values, over)))
            r = asyncio.run(helm.Lint(config("default")).run(str(chart)))
            bad = [m["Path"] for m in r.get("Messages", []) if m["Severity"] >= 3]
            check(f"helm lint ({name} values): no errors", not bad and not r.get("Errors"), json.dumps(r))


def render_sets():
    for name, values, expect in VALUE_SETS:
        ns = f"check-{name}"
        try:
            r = install(name, ns, values)
        except helm.HelmError as e:
            check(f"{name}: installs into a 1.20 API server", False, str(e))
            continue
        docs = docs_of(r["manifest"])
        check(f"{name}: installs into a 1.20 API server ({len(docs)} objects)", r["info"]["status"] == "deployed")
        check(f"{name}: every object has apiVersion, kind, name",
              bool(docs) and all(d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name") for d in docs))
        namespaced = [d for d in docs if d["kind"] not in
                      ("ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration")]
        check(f"{name}: namespaced objects in the release namespace (kube-system for the auth reader)",
              bool(namespaced) and all(d["metadata"].get("namespace") in (ns, "kube-system") for d in namespaced))
        try:
            expect(docs)
        except (AssertionError, KeyError, TypeError) as e:
            check(f"{name}: expected objects present", False, repr(e))


def rbac_exact():
    """The ClusterRoles and Roles grant exactly the calls charts/ci/rbac-calls.yaml declares
    (every call granted, nothing granted that no code calls), for each cloudProvider."""
    declared = rbac_calls.Declared()
    check("rbac-calls.yaml: well-formed, every entry names its code", not declared.errors,
          "\n      ".join(declared.errors))
    for cloud, values in [("aws", AWS), ("simulated", {"cloudProvider": "simulated"})]:
        ns = f"check-rbac-{cloud}"
        try:
            r = install(f"rbac-{cloud}", ns, values)
        except helm.HelmError as e:
            check(f"RBAC ({cloud}): chart installs", False, str(e))
            continue
        docs = docs_of(r["manifest"])
        problems = rbac_calls.compare(declared, cloud, docs, values)
        check(f"RBAC ({cloud}): ClusterRoles/Roles grant exactly the declared calls",
              not problems, "\n      ".join(problems))
        # Each value a call depends on (rbac-calls.yaml `when`), turned on: its calls granted
        # then, and only then (the offline check renders both ways too, for every cloud).
        for when in declared.whens():
            on = merge(merge(values, nested(when, True)), {"provisioner": {"installCapacityBufferCRD": False}})
            r_on = install(f"rbac-{cloud}-on", f"{ns}-on", on)
            problems = rbac_calls.compare(declared, cloud, docs_of(r_on["manifest"]), on)
            check(f"RBAC ({cloud}, {when}=true): ClusterRoles/Roles grant exactly the declared calls",
                  not problems, "\n      ".join(problems))
            asyncio.run(helm.Uninstall(config(f"{ns}-on")).run(f"rbac-{cloud}-on", wait=True, timeout=60))
        # The comparison itself can fail: one grant too many and one missing are both named.
        bent = copy.deepcopy(docs)
        role = one(bent, "ClusterRole", "-provisioner")
        role["rules"] = [x for x in role["rules"] if x["resources"] != ["pods/eviction"]]
        role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})
        found = "\n".join(rbac_calls.compare(declared, cloud, bent))
        check(f"RBAC ({cloud}): a missing and an extra grant are both reported",
              "declared but not granted: provisioner: create core/pods/eviction" in found
              and "granted but no code makes the call: provisioner: get core/secrets" in found, found)
        for c in sorted(declared.excess_calls(cloud)):
            print(f"  known excess (rbac-calls.yaml knownExcess): {rbac_calls.fmt(c)}")
        asyncio.run(helm.Uninstall(config(ns)).run(f"rbac-{cloud}", wait=True, timeout=60))


def rbac_audit_fails():
    """e2e/rbac.py audit (what every e2e suite ends with) fails on a request the authorizer
    refused, on an undeclared call and on a component running under other credentials: fed an
    audit log with one of each next to good requests, it names all three (and not admission's
    403, which no grant can fix)."""
    sa = "system:serviceaccount:adze-system:adze-provisioner"

    def event(i, user, agent, verb, resource, code, ns=None, decision="allow"):
        ref = {"resource": resource, "apiGroup": "", "apiVersion": "v1"}
        if ns:
            ref["namespace"] = ns
        return json.dumps({"auditID": str(i), "stage": "ResponseComplete", "verb": verb,
                           "user": {"username": user}, "userAgent": agent, "objectRef": ref,
                           "requestURI": f"/api/v1/{resource}", "responseStatus": {"code": code},
                           "annotations": {"authorization.k8s.io/decision": decision}})
    lines = [event(1, sa, "adze-provisioner/0.1.0", "list", "nodes", 200),
             # admission's 403 (an Event into a terminating namespace): not RBAC's, not named
             event(5, sa, "adze-provisioner/0.1.0", "create", "events", 403, "gone"),
             event(2, sa, "adze-provisioner/0.1.0", "delete", "pods", 403, "web", "forbid"),
             event(3, sa, "adze-provisioner/0.1.0", "get", "secrets", 200, "web"),
             event(4, "admin", "adze-agent/0.1.0", "get", "nodes", 200)]
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "audit.log"
        log.write_text("\n".join(lines) + "\n")
        r = subprocess.run([sys.executable, str(ROOT / "e2e" / "rbac.py"), "audit", "simulated",
                            "adze-system", str(log), str(pathlib.Path(tmp) / "used.txt")],
                           capture_output=True, text=True)
    out = r.stdout + r.stderr
    check("e2e/rbac.py audit fails on a 403, an undeclared call and a component run as admin",
          r.returncode == 1 and "REFUSED: provisioner: delete core/pods" in out
          and "REFUSED: provisioner: create core/events" not in out
          and "NOT DECLARED in charts/ci/rbac-calls.yaml: provisioner: get core/secrets" in out
          and "WRONG CREDENTIALS: adze-agent made requests as admin" in out, out)


def rejections():
    for what, values, needle in BAD:
        try:
            install("bad", "check-bad", values)
            check(f"rejects {what}", False, "install succeeded")
            asyncio.run(helm.Uninstall(config("check-bad")).run("bad", wait=False))
        except helm.HelmError as e:
            msg = str(e)
            check(f"rejects {what} with a message naming it", needle in msg, msg)
            if what == "bad duration":
                print("      e.g. " + msg.strip().splitlines()[-1].strip())


def upgrade_uninstall():
    ns = "check-simulated"
    values = {"cloudProvider": "simulated", "provisioner": {"maxInstanceTypes": 20}}
    try:
        r = asyncio.run(helm.Upgrade(config(ns)).run("simulated", str(CHART), values=values, wait=False))
        check("upgrade: revision 2 deployed", r["version"] == 2 and r["info"]["status"] == "deployed")
    except helm.HelmError as e:
        check("upgrade", False, str(e))
    out = kubectl("-n", ns, "get", "deploy", "simulated-adze-provisioner", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
    check("upgrade: the cluster's Deployment carries the new flag", "--max-instance-types=20" in out.stdout, out.stdout + out.stderr)
    asyncio.run(helm.Uninstall(config(ns)).run("simulated", wait=True, timeout=60))
    out = kubectl("get", "clusterrole", "simulated-adze-provisioner")
    check("uninstall: cluster-scoped objects removed", out.returncode != 0 and "NotFound" in out.stderr, out.stderr)
    out = kubectl("get", "crd", "nodeclaims.adze.sh")
    check("uninstall: CRDs kept (Helm never deletes crds/)", out.returncode == 0)


def kind_config():
    """e2e/kind/values.yaml, as e2e/kind/run.sh installs it on a 1.20 kind cluster: the chart's
    own kube-scheduler, calling the extender at its Service's fixed ClusterIP over HTTPS."""
    kind_values = yaml.safe_load((ROOT / "e2e/kind/values.yaml").read_text())
    values = merge(kind_values, {"scheduler": {"image": {"tag": "v1.20.2"},
                                               "configApiVersion": "kubescheduler.config.k8s.io/v1beta1"}})
    try:
        docs = docs_of(install("kind", "check-kind", values)["manifest"])
        cm = one(docs, "ConfigMap", "-scheduler-config")
        svc = one(docs, "Service", "-extender")
        url = f"https://{svc['spec']['clusterIP']}:{svc['spec']['ports'][0]['port']}"
        for key in ("scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"):
            prefix = yaml.safe_load(cm["data"][key])["extenders"][0]["urlPrefix"]
            check(f"kind: {key} calls the extender at its Service's fixed ClusterIP ({url})", prefix == url, prefix)
        dep = one(docs, "Deployment", "-scheduler")
        check("kind: the chart's kube-scheduler is rendered (1 replica, image v1.20.2)",
              dep["spec"]["replicas"] == 1 and container(dep)["image"].endswith(":v1.20.2"), container(dep)["image"])
    except (helm.HelmError, AssertionError) as e:
        check("kind: e2e/kind/values.yaml installs", False, str(e))


# ---- manifests/ ----------------------------------------------------------------------

MANIFEST_VALUES = merge(AWS, {
    "clusterName": "CLUSTER_NAME",
    "clusterEndpoint": "https://CLUSTER_ENDPOINT",
    "clusterCABundle": "",
    "aws": {"region": "us-west-2", "interruptionQueue": "CLUSTER_NAME", "kubernetesVersion": ""},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::ACCOUNT_ID:role/AdzeController-CLUSTER_NAME"}},
    # The chart's defaults for the gates: manifests users apply as they are stay without them
    # (node repair, terminate-first drift and pod deletion cost are Karpenter's opt-in gates; Karpenter's labels
    # would be counted by a Karpenter still running during a cutover). Zonal shift likewise: it
    # needs zonal shift enabled on the EKS cluster (docs/zonal-shift.md).
    "provisioner": {"capacityBuffers": False, "zonalShift": False, "karpenterLabels": False,
                    "nodeRepair": False, "terminateFirstDrift": False, "podDeletionCost": False,
                    "vpaPredictions": False},
    "image": {"repository": "adze", "tag": "0.1.0"},
    "extender": {"tls": {"certManager": {"enabled": True}}},
    "scheduler": {"enabled": True},
    "webhook": {"enabled": True},
})
MANIFEST_FILES = {
    "rbac-provisioner.yaml": "rbac/provisioner.yaml",
    "rbac-extender.yaml": "rbac/extender.yaml",
    "rbac-agent.yaml": "rbac/agent.yaml",
    "provisioner.yaml": "provisioner.yaml",
    "extender.yaml": "extender.yaml",
    "agent.yaml": "agent.yaml",
    "scheduler-config.yaml": "scheduler/scheduler-config.yaml",
    "scheduler.yaml": "scheduler/second-scheduler.yaml",
    "webhook.yaml": "scheduler/webhook.yaml",
}


def split_manifest(manifest, files):
    """Helm's manifest as {path under manifests/: [object texts]}, by source template."""
    parts = {}
    for chunk in manifest.split("\n---\n"):
        m = re.search(r"^# Source: adze/templates/(\S+)$", chunk, re.M)
        if not m:
            continue
        text = "\n".join(
            line for line in chunk.strip("\n-").splitlines()
            if not re.search(r"helm\.sh/chart:|app\.kubernetes\.io/managed-by:|^# Source:", line)
        )
        parts.setdefault(files.get(m.group(1), m.group(1)), []).append(text.strip() + "\n")
    return parts


def manifests_from_chart():
    r = install("adze", "adze-system", MANIFEST_VALUES)
    parts = {path: [t.replace("apiVersion: policy/v1beta1", "apiVersion: policy/v1  # policy/v1beta1 on 1.20")
                    for t in texts]
             for path, texts in split_manifest(r["manifest"], MANIFEST_FILES).items()}
    header = ("# Generated from charts/adze by `charts/ci/check.sh --write-manifests`; do not edit.\n"
              "# Replace CLUSTER_NAME, CLUSTER_ENDPOINT, ACCOUNT_ID and the region (us-west-2); prefer\n"
              "# the chart, which also sets --cluster-ca and --kubernetes-version.\n")
    out = {path: header + "---\n".join(texts) for path, texts in parts.items()}
    sched = one(docs_of(r["manifest"]), "ConfigMap", "-scheduler-config")
    for key in ["scheduler-config-v1.yaml", "scheduler-config-v1beta1.yaml"]:
        out[f"scheduler/kube-{key}"] = (
            "# kube-scheduler --config for a self-managed control plane: the default scheduler with\n"
            "# the Adze extender. Generated from charts/adze; do not edit.\n" + sched["data"][key])
    asyncio.run(helm.Uninstall(config("adze-system")).run("adze", wait=True, timeout=60))
    return out


def manifests(write):
    out = manifests_from_chart()
    base = ROOT / "manifests"
    if write:
        for path, text in out.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text)
        print(f"wrote {len(out)} files under manifests/")
        return
    stale = [p for p, t in out.items() if not (base / p).is_file() or (base / p).read_text() != t]
    check("manifests/ is what the chart renders (charts/ci/check.sh --write-manifests)", not stale, str(stale))
    for crd in (CHART / "crds").iterdir():
        check(f"chart crds/{crd.name} equals manifests/crds/{crd.name}",
              crd.read_text() == (base / "crds" / crd.name).read_text())


# Kubernetes version families the chart renders differently (.Capabilities: policy/v1beta1
# PodDisruptionBudgets and the v1beta1 scheduler config before 1.25, the agent's
# ValidatingAdmissionPolicy and binding through the extender from 1.30), and the version
# each is rendered at: the oldest of the family, whose API versions the newer ones serve too.
VERSION_FAMILIES = [("1.20", "1.20-1.24", "1.20.0"), ("1.25", "1.25-1.29", "1.25.0"), ("1.30", "1.30+", "1.30.0")]


def offline_manifests():
    import offline
    out = {}
    files = dict(MANIFEST_FILES, **{"agent-admission-policy.yaml": "agent-admission-policy.yaml"})
    for short, family, version in VERSION_FAMILIES:
        manifest = offline.render(version, MANIFEST_VALUES)
        header = (f"# Kubernetes {family}: rendered from charts/adze as for a {version} API server, with no\n"
                  f"# cluster (`charts/ci/check.py --write-offline-manifests`); do not edit.\n"
                  "# Replace CLUSTER_NAME, CLUSTER_ENDPOINT, ACCOUNT_ID and the region (us-west-2); prefer\n"
                  "# the chart, which also sets --cluster-ca and --kubernetes-version. Certificates: cert-manager\n"
                  "# issues the extender's and kube-scheduler's (extender.tls.certManager.enabled), so nothing\n"
                  "# here depends on `lookup` or on keys generated at render time.\n")
        base = f"kubernetes-{short}"
        for path, texts in split_manifest(manifest, files).items():
            out[f"{base}/{path}"] = header + "---\n".join(texts)
        for chunk in manifest.split("\n---\n"):
            doc = yaml.safe_load(chunk) if "-scheduler-config" in chunk else None
            if doc and doc.get("kind") == "ConfigMap" and doc["metadata"]["name"].endswith("-scheduler-config"):
                for key in sorted(doc["data"]):
                    if key.startswith("scheduler-config-"):
                        out[f"{base}/scheduler/kube-{key}"] = (
                            f"# kube-scheduler --config for a self-managed Kubernetes {family} control plane: the\n"
                            f"# default scheduler with the Adze extender. Rendered from charts/adze as for {version}; do not edit.\n"
                            + doc["data"][key])
    return out


def nested(dotted, value):
    """{"a": {"b": value}} for "a.b"."""
    out = value
    for k in reversed(dotted.split(".")):
        out = {k: out}
    return out


def offline_value_dependent_rbac():
    """Without a cluster: each chart value a call depends on (rbac-calls.yaml `when`) grants
    its calls when true and nothing of them when false, for each cloudProvider; the comparison
    fails when a value-dependent grant is left on (or off) the other way."""
    import offline
    declared = rbac_calls.Declared()
    check("rbac-calls.yaml: well-formed, every entry names its code", not declared.errors,
          "\n      ".join(declared.errors))
    whens = declared.whens()
    check("rbac-calls.yaml: some calls depend on a chart value (provisioner.capacityBuffers)",
          "provisioner.capacityBuffers" in whens, str(whens))
    for cloud, base in [("aws", AWS), ("simulated", {"cloudProvider": "simulated"})]:
        for when in whens:
            rendered = {}
            for on in (False, True):
                values = merge(base, nested(when, on))
                docs = docs_of(offline.render("1.30.0", values))
                rendered[on] = docs
                problems = rbac_calls.compare(declared, cloud, docs, values)
                check(f"offline RBAC ({cloud}, {when}={str(on).lower()}): exactly the declared calls",
                      not problems, "\n      ".join(problems))
            # The comparison can fail: the "on" rules against the "off" values, and back.
            wrong = rbac_calls.compare(declared, cloud, rendered[True], merge(base, nested(when, False)))
            back = rbac_calls.compare(declared, cloud, rendered[False], merge(base, nested(when, True)))
            check(f"offline RBAC ({cloud}, {when}): a grant left on and one left off are both reported",
                  any("granted but no code makes the call" in p for p in wrong)
                  and any("declared but not granted" in p for p in back), f"{wrong} {back}")


def offline_capacity_buffer_crd():
    """The CapacityBuffer CRD: rendered only with provisioner.capacityBuffers, not with
    installCapacityBufferCRD=false, kept on uninstall, and the committed rendering
    (manifests/optional-crds/) with no other change."""
    import offline
    name = "autoscaling.x-k8s.io_capacitybuffers.yaml"
    committed = yaml.safe_load((ROOT / "manifests" / "optional-crds" / name).read_text())

    def crds(values):
        return [d for d in docs_of(offline.render("1.30.0", values))
                if d["kind"] == "CustomResourceDefinition"]
    sim = {"cloudProvider": "simulated"}
    off = crds(sim)
    check("CapacityBuffer CRD: not rendered by default (provisioner.capacityBuffers off)", off == [], str(len(off)))
    on = crds(merge(sim, {"provisioner": {"capacityBuffers": True}}))
    check("CapacityBuffer CRD: rendered with provisioner.capacityBuffers", len(on) == 1, str(len(on)))
    if len(on) == 1:
        crd = copy.deepcopy(on[0])
        annotations = crd["metadata"].pop("annotations", {})
        crd["metadata"].pop("labels", None)
        check("CapacityBuffer CRD: kept on uninstall (helm.sh/resource-policy: keep)",
              annotations.get("helm.sh/resource-policy") == "keep", str(annotations))
        check(f"CapacityBuffer CRD: the chart renders manifests/optional-crds/{name} unchanged",
              crd == committed)
    skip = crds(merge(sim, {"provisioner": {"capacityBuffers": True, "installCapacityBufferCRD": False}}))
    check("CapacityBuffer CRD: not rendered with installCapacityBufferCRD=false (another chart owns it)",
          skip == [], str(len(skip)))


def offline_cluster_limits():
    """provisioner.clusterLimits reaches the provisioner as --cluster-limits (names sorted,
    numbers whole), is absent by default, and a negative or unparsable quantity or a bad
    resource name is refused by the values schema naming the value."""
    import offline
    sim = {"cloudProvider": "simulated"}

    def args(values):
        return container(one(docs_of(offline.render("1.30.0", values)), "Deployment", "-provisioner"))["args"]
    default = args(sim)
    check("clusterLimits: no --cluster-limits by default",
          not any(a.startswith("--cluster-limits") for a in default), str(default))
    limits = {"nodes": 200, "cpu": 1000000, "memory": "4Ti", "nvidia.com/gpu": "64"}
    got = args(merge(sim, {"provisioner": {"clusterLimits": limits}}))
    want = "--cluster-limits=cpu=1000000,memory=4Ti,nodes=200,nvidia.com/gpu=64"
    check(f"clusterLimits: rendered as {want}", want in got, str(got))
    # Helm names a bad value by its path, a bad key only by the key itself.
    for bad, named in [({"cpu": "-1"}, "clusterLimits/cpu"), ({"cpu": -1}, "clusterLimits/cpu"),
                       ({"cpu": "lots"}, "clusterLimits/cpu"), ({"bad name": "1"}, "'bad name'")]:
        try:
            offline.render("1.30.0", merge(sim, {"provisioner": {"clusterLimits": bad}}))
            check(f"clusterLimits {bad}: refused by the values schema", False, "rendered")
        except Exception as e:  # helm's schema error
            check(f"clusterLimits {bad}: refused by the values schema naming {named}",
                  named in str(e), str(e)[:300])


def offline_reboot_for_repair():
    """provisioner.rebootForRepair reaches the provisioner as --reboot-for-repair with
    nodeRepair, is off by default, and is refused naming itself without nodeRepair or with
    legacyNodeRepair (as the flag is)."""
    import offline
    sim = {"cloudProvider": "simulated"}

    def args(values):
        return container(one(docs_of(offline.render("1.30.0", values)), "Deployment", "-provisioner"))["args"]
    check("rebootForRepair: no --reboot-for-repair by default", "--reboot-for-repair" not in args(sim))
    on = args(merge(sim, {"provisioner": {"nodeRepair": True, "rebootForRepair": True}}))
    check("rebootForRepair: with nodeRepair, rendered as --reboot-for-repair",
          "--reboot-for-repair" in on and "--node-repair" in on, str(on))
    for bad, why in [({"rebootForRepair": True}, "without nodeRepair"),
                     ({"nodeRepair": True, "legacyNodeRepair": True, "rebootForRepair": True},
                      "with legacyNodeRepair")]:
        try:
            offline.render("1.30.0", merge(sim, {"provisioner": bad}))
            check(f"rebootForRepair {why}: refused", False, "rendered")
        except Exception as e:  # helm's fail
            check(f"rebootForRepair {why}: refused naming provisioner.rebootForRepair",
                  "provisioner.rebootForRepair" in str(e), str(e)[:300])


def helm_set(values, dotted, value):
    """`helm --set KEY=VALUE` on a values dict: KEY split at dots not escaped with a backslash."""
    parts = [p.replace("\0", ".") for p in dotted.replace("\\.", "\0").split(".")]
    cur = values
    for p in parts[:-1]:
        if not isinstance(cur.get(p), dict):
            cur[p] = {}
        cur = cur[p]
    cur[parts[-1]] = value


def offline_values_eks():
    """charts/adze/values-eks.yaml, the file README and docs/install.md install EKS with: alone
    it is refused naming the first value it leaves empty; with the `--set`s its header's helm
    command gives (stand-in values for the stack outputs) it renders, and each setting it
    claims takes effect."""
    import offline
    path = CHART / "values-eks.yaml"
    text = path.read_text()
    eks = yaml.safe_load(text)
    try:
        offline.render("1.30.0", eks)
        check("values-eks.yaml alone is refused (cluster values left empty)", False, "rendered")
    except Exception as e:  # helm's install error
        check("values-eks.yaml alone is refused naming clusterName", "clusterName" in str(e), str(e)[:300])
    stand_in = {"image.repository": "registry.example/adze", "clusterName": "demo", "aws.region": "us-west-2", "aws.interruptionQueue": "adze-demo",
                "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn":
                    "arn:aws:iam::111122223333:role/AdzeController-demo"}
    keys = re.findall(r"--set '?([^=' ]+)'?=", text)
    check("values-eks.yaml's helm command sets the image, cluster name, region, queue and IRSA role",
          sorted(keys) == sorted(stand_in), str(keys))
    # The same command where users read it: each doc's helm install with values-eks.yaml.
    for doc in ["docs/install.md", "docs/migrate-from-karpenter.md"]:
        blocks = [b for b in (ROOT / doc).read_text().split("```") if "helm install" in b and "values-eks.yaml" in b]
        doc_keys = {k for b in blocks for k in re.findall(r"--set '?([^=' ]+)'?=", b)}
        check(f"{doc}: its helm install with values-eks.yaml sets what the file's header does",
              len(blocks) == 1 and set(keys) <= doc_keys, f"{len(blocks)} block(s), keys {sorted(doc_keys)}")
    values = copy.deepcopy(eks)
    for k in keys:
        if k in stand_in:
            helm_set(values, k, stand_in[k])
    try:
        release = offline.render_release("1.30.0", values)
        docs = docs_of(release["manifest"])
    except Exception as e:
        check("values-eks.yaml with the header's --set values renders", False, str(e)[:500])
        return
    check("values-eks.yaml with the header's --set values renders", bool(docs))
    notes = release.get("info", {}).get("notes", "")
    check("values-eks.yaml: the install's notes send users to examples/eks/ (apply-ready), not the scenarios",
          "examples/eks/" in notes, notes)
    check("values-eks.yaml: the image from image.repository",
          container(one(docs, "Deployment", "-provisioner"))["image"].startswith("registry.example/adze:"))
    args = container(one(docs, "Deployment", "-provisioner"))["args"]
    for flag in ["--cloud-provider=aws", "--cluster-name=demo", "--region=us-west-2",
                 "--interruption-queue=adze-demo"]:
        check(f"values-eks.yaml: provisioner has {flag}", flag in args, str(args))
    check("values-eks.yaml: Karpenter labels off unless asked for (the migration guide sets them)",
          "--karpenter-labels" not in args, str(args))
    sa = one(docs, "ServiceAccount", "-provisioner")
    check("values-eks.yaml: the IRSA role on the provisioner's ServiceAccount",
          sa["metadata"].get("annotations", {}).get("eks.amazonaws.com/role-arn")
          == stand_in["serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn"], json.dumps(sa["metadata"]))
    sched = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-scheduler")]
    check("values-eks.yaml: a second kube-scheduler (EKS gives no access to the default one)",
          len(sched) == 1 and container(sched[0])["image"].endswith(":" + eks["scheduler"]["image"]["tag"]),
          str([container(d)["image"] for d in sched]))
    hooks = [d for d in docs if d["kind"] == "MutatingWebhookConfiguration"]
    check("values-eks.yaml: the namespace webhook sends labelled namespaces' pods to adze-scheduler",
          len(hooks) == 1 and hooks[0]["webhooks"][0]["namespaceSelector"]
          == {"matchLabels": {"adze.sh/scheduler": "enabled"}}
          and "--webhook-scheduler-name=adze-scheduler" in container(one(docs, "Deployment", "-extender"))["args"],
          json.dumps([h["webhooks"] for h in hooks])[:400])
    on = merge(values, {"provisioner": {"karpenterLabels": True}})
    args = container(one(docs_of(offline.render("1.30.0", on)), "Deployment", "-provisioner"))["args"]
    check("values-eks.yaml + provisioner.karpenterLabels=true: --karpenter-labels", "--karpenter-labels" in args)


def schema_errors(value, schema, path="."):
    """What a CRD's structural schema refuses in `value` (types, required, enum, pattern,
    unknown fields, bounds); CEL rules (x-kubernetes-validations) are not evaluated."""
    errs = []
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null"]
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: not int or string: {value!r}"]
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    t = schema.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}
    if t in kinds and (not isinstance(value, kinds[t]) or (t in ("integer", "number") and isinstance(value, bool))):
        return [f"{path}: {type(value).__name__}, not {t}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if t == "string" and "pattern" in schema and not re.search(schema["pattern"], value):
        errs.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if t == "string" and len(value) > schema.get("maxLength", len(value)):
        errs.append(f"{path}: longer than {schema['maxLength']}")
    if t in ("integer", "number") and "minimum" in schema and value < schema["minimum"]:
        errs.append(f"{path}: below {schema['minimum']}")
    if t == "object":
        props = schema.get("properties")
        for k in schema.get("required", []):
            if k not in value:
                errs.append(f"{path}: {k} is required")
        for k, v in value.items():
            if props is not None and k in props:
                errs += schema_errors(v, props[k], f"{path}.{k}" if path != "." else f".{k}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errs += schema_errors(v, schema["additionalProperties"], f"{path}.{k}")
            elif props is not None and path != ".":
                errs.append(f"{path}: unknown field {k}")
    if t == "array":
        for i, v in enumerate(value):
            errs += schema_errors(v, schema.get("items", {}), f"{path}[{i}]")
    return errs


def offline_examples_eks():
    """examples/eks/, the objects the chart's NOTES.txt and examples/README.md tell users to
    apply: every document is a kind the chart's CRDs define, valid against that CRD's schema,
    the class names the stack's node role and the discovery tag docs/install.md tells users to
    set, and the NodePool points at the class."""
    crds = {}
    for f in (CHART / "crds").glob("*.yaml"):
        crd = yaml.safe_load(f.read_text())
        for v in crd["spec"]["versions"]:
            if v.get("served"):
                crds[(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    docs = [d for f in sorted((ROOT / "examples" / "eks").glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]
    check("examples/eks: an EC2NodeClass and a NodePool",
          sorted(d["kind"] for d in docs) == ["EC2NodeClass", "NodePool"], str([d.get("kind") for d in docs]))
    for d in docs:
        schema = crds.get((d.get("apiVersion"), d.get("kind")))
        errs = schema_errors(d, schema) if schema else [f"no CRD serves {d.get('apiVersion')} {d.get('kind')}"]
        check(f"examples/eks: {d.get('kind')} {d['metadata']['name']} is valid against the chart's CRD", not errs, str(errs))
    # The validator refuses what the API server would (so the check above can fail).
    if docs:
        bad = copy.deepcopy(docs[0])
        bad["spec"]["notAField"] = 1
        kind_schema = crds.get((bad["apiVersion"], bad["kind"]))
        check("examples/eks: the schema check refuses an unknown field",
              bool(kind_schema) and any("notAField" in e for e in schema_errors(bad, kind_schema)))
    stack = yaml.safe_load((ROOT / "deploy" / "aws" / "adze.yaml").read_text())
    role = stack["Resources"]["NodeRole"]["Properties"]["RoleName"]["Fn::Sub"].replace("${ClusterName}", "my-cluster")
    classes = [d for d in docs if d["kind"] == "EC2NodeClass"]
    pools = [d for d in docs if d["kind"] == "NodePool"]
    install = (ROOT / "docs" / "install.md").read_text()
    for c in classes:
        spec = c["spec"]
        check(f"examples/eks: EC2NodeClass role is the stack's node role ({role})", spec.get("role") == role, spec.get("role"))
        tags = [t.get("tags", {}) for t in spec["subnetSelectorTerms"] + spec["securityGroupSelectorTerms"]]
        check("examples/eks: subnets and security groups by the discovery tag docs/install.md tells users to set",
              tags and all(t == {"adze.sh/discovery": "my-cluster"} for t in tags)
              and "adze.sh/discovery: CLUSTER_NAME" in install, str(tags))
    names = {c["metadata"]["name"] for c in classes}
    for p in pools:
        ref = p["spec"]["template"]["spec"]["nodeClassRef"]
        check(f"examples/eks: NodePool {p['metadata']['name']} uses the EC2NodeClass beside it",
              ref == {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": ref.get("name")} and ref["name"] in names,
              str(ref))


def offline(write):
    if not write:
        offline_value_dependent_rbac()
        offline_capacity_buffer_crd()
        offline_cluster_limits()
        offline_reboot_for_repair()
        offline_values_eks()
        offline_examples_eks()
    out = offline_manifests()
    base = ROOT / "manifests"
    if write:
        for short, _, _ in VERSION_FAMILIES:
            shutil.rmtree(base / f"kubernetes-{short}", ignore_errors=True)
        for path, text in out.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text)
        print(f"wrote {len(out)} files under manifests/kubernetes-*/")
        return
    committed = {str(p.relative_to(base)) for short, _, _ in VERSION_FAMILIES
                 for p in (base / f"kubernetes-{short}").rglob("*") if p.is_file()}
    stale = sorted(p for p, t in out.items() if not (base / p).is_file() or (base / p).read_text() != t)
    extra = sorted(committed - set(out))
    check(f"manifests/kubernetes-*/ are what the chart renders per version family ({len(out)} files; "
          "charts/ci/check.py --write-offline-manifests)", bool(out) and not stale and not extra,
          f"stale: {stale}, not rendered any more: {extra}")
    by_family = {short: {p.split("/", 1)[1]: t for p, t in out.items() if p.startswith(f"kubernetes-{short}/")}
                 for short, _, _ in VERSION_FAMILIES}
    for short, family, _ in VERSION_FAMILIES:
        docs = [d for t in by_family[short].values() for d in yaml.safe_load_all(t) if d]
        pdbs = {d["apiVersion"] for d in docs if d["kind"] == "PodDisruptionBudget"}
        want = {"policy/v1beta1"} if short == "1.20" else {"policy/v1"}
        check(f"offline {family}: PodDisruptionBudgets are {sorted(want)[0]}", pdbs == want, str(pdbs))
        vap = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
        check(f"offline {family}: the agent's ValidatingAdmissionPolicy {'rendered' if short == '1.30' else 'absent'}",
              bool(vap) == (short == "1.30"), str(len(vap)))
        cfg = yaml.safe_load(by_family[short].get("scheduler/kube-scheduler-config-v1.yaml", "{}")) or {}
        ext = (cfg.get("extenders") or [{}])[0]
        check(f"offline {family}: the control plane's config binds through the extender only on 1.30+ (ignorable)",
              bool(ext) and ("bindVerb" in ext) == (short == "1.30"), json.dumps(ext))
        check(f"offline {family}: a v1beta1 scheduler config only before 1.25",
              ("scheduler/kube-scheduler-config-v1beta1.yaml" in by_family[short]) == (short == "1.20"))
    # manifests/*.yaml (top level) are rendered against a live 1.20 API server, so only the full
    # check regenerates them; their containers' commands and arguments are compared here, against
    # the 1.20 family rendered offline, so a changed flag or chart default fails without a cluster.
    def containers(text):
        return {(d["kind"], d["metadata"]["name"], c["name"]): (c.get("command"), c.get("args"))
                for d in yaml.safe_load_all(text) if d and d["kind"] in ("Deployment", "DaemonSet")
                for c in d["spec"]["template"]["spec"].get("containers", [])}
    for path in ["provisioner.yaml", "extender.yaml", "agent.yaml"]:
        live = containers((base / path).read_text()) if (base / path).is_file() else {}
        rendered = containers(by_family["1.20"].get(path, ""))
        differ = sorted(f"{k[1]}/{k[2]}" for k in set(live) | set(rendered) if live.get(k) != rendered.get(k))
        check(f"manifests/{path}: containers' commands and flags are what the chart renders "
              "(charts/ci/check.sh --write-manifests)", bool(rendered) and not differ, str(differ))


def main():
    if "--offline" in sys.argv or "--write-offline-manifests" in sys.argv:
        offline("--write-offline-manifests" in sys.argv)
        if "--offline" in sys.argv:
            print(f"{passed} passed, {failed} failed")
        return 0 if failed == 0 else 1
    if "--write-manifests" in sys.argv:
        manifests(True)
        return 0
    metrics_static()
    lint()
    render_sets()
    rbac_exact()
    rbac_audit_fails()
    insecure_opt_out()
    upgrade_keeps_ca()
    rejections()
    upgrade_uninstall()
    kind_config()
    manifests(False)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
