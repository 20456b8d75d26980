"""What a new EC2 instance's boot does with its user data before kubelet joins the cluster,
as the e2e registrar plays it: nodeadm on AL2023, Bottlerocket's settings API, cloud-init and
/etc/eks/bootstrap.sh on AL2, EC2Launch and Start-EKSBootstrap.ps1 on Windows, and kubelet's
own rules. Each check refuses what the real part refuses (documented behaviour), so user data
Adze renders wrongly leaves the instance without a Node, as it would on AWS.

join(family, user_data, cluster) -> Join (kubelet settings) or raises Refused(reason).
No I/O: e2e/aws-registrar.py feeds it; e2e/emulation/test_nodejoin.py proves it refuses.
"""
import base64
import email
import email.policy
import re
import shlex
import struct
import tomllib

import yaml

# kubelet: labels in these namespaces may only be its own (Kubernetes >= 1.16 refuses to start).
KUBELET_OWN_LABELS = {
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
}
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
# nodeadm decodes NodeConfig strictly against its schema: unknown fields are errors.
NODECONFIG_SPEC = {"cluster", "containerd", "instance", "kubelet", "featureGates"}
NODECONFIG_CLUSTER = {"name", "apiServerEndpoint", "certificateAuthority", "cidr", "enableOutpost", "id"}
NODECONFIG_KUBELET = {"config", "flags"}
NODECONFIG_INSTANCE = {"localStorage"}
# Bottlerocket's settings API refuses settings it does not know.
BOTTLEROCKET_KUBERNETES = {
    "cluster-name", "api-server", "cluster-certificate", "cluster-dns-ip", "cluster-domain", "max-pods",
    "node-labels", "node-taints", "kube-reserved", "system-reserved", "eviction-hard", "eviction-soft",
    "eviction-soft-grace-period", "eviction-max-pod-grace-period", "pod-pids-limit", "cpu-manager-policy",
    "topology-manager-policy", "image-gc-high-threshold-percent", "image-gc-low-threshold-percent", "registry-qps", "registry-burst",
    "event-qps", "event-burst", "kube-api-qps", "kube-api-burst", "shutdown-grace-period",
    "shutdown-grace-period-for-critical-pods", "standalone-mode", "authentication-mode", "bootstrap-token",
    "container-log-max-size", "container-log-max-files", "cpu-cfs-quota-enforced", "allowed-unsafe-sysctls",
    "server-tls-bootstrap", "cloud-provider", "credential-providers", "static-pods", "seccomp-default",
    "hostname-override", "hostname-override-source", "device-ownership-from-security-context",
}


class Refused(Exception):
    """The boot stops here: no kubelet, no Node."""


class Join:
    """What kubelet starts with. reserved: {"kube": {...}, "system": {...}, "eviction": {...}}
    resource name -> quantity string (eviction signals as kubelet names them)."""

    def __init__(self, endpoint, ca_pem, labels, taints, max_pods, dns, reserved=None, tuning=None):
        self.endpoint, self.ca_pem, self.labels = endpoint, ca_pem, labels
        self.taints, self.max_pods, self.dns = taints, max_pods, dns
        self.reserved = reserved or {}
        # Kubelet settings that shape no resource: KubeletConfiguration key -> value
        # (evictionMaxPodGracePeriod, imageGC{High,Low}ThresholdPercent, cpuCFSQuota, podPidsLimit,
        # eventRecordQPS, eventBurst, kubeAPIQPS, kubeAPIBurst, kernelMemcgNotification; the
        # durations shutdownGracePeriod, shutdownGracePeriodCriticalPods,
        # streamingConnectionIdleTimeout as nanoseconds).
        self.tuning = tuning or {}


def kubelet_may_set(key):
    if "/" not in key:
        return True
    domain = key.split("/", 1)[0]
    under = lambda d, ns: d == ns or d.endswith("." + ns)
    if not (under(domain, "kubernetes.io") or under(domain, "k8s.io")):
        return True
    return key in KUBELET_OWN_LABELS or under(domain, "kubelet.kubernetes.io") or under(domain, "node.kubernetes.io")


def check_labels(labels):
    bad = sorted(k for k in labels if not kubelet_may_set(k))
    if bad:
        raise Refused(f"kubelet: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: {bad}")


def pem_of(ca_b64, where):
    try:
        pem = base64.b64decode(ca_b64 or "", validate=True).decode()
    except Exception as e:
        raise Refused(f"{where}: certificate authority is not base64: {e}")
    if "-----BEGIN CERTIFICATE-----" not in pem:
        raise Refused(f"{where}: certificate authority is not a PEM certificate")
    return pem


def check_cluster(endpoint, pem, cluster, where):
    # kubelet would fail TLS against any other endpoint or CA: no Node either way.
    if endpoint.rstrip("/") != cluster["endpoint"].rstrip("/"):
        raise Refused(f"{where}: kubelet cannot reach the API server at {endpoint!r}")
    if pem.strip() != cluster["ca_pem"].strip():
        raise Refused(f"{where}: x509: certificate signed by unknown authority (CA in user data is not the cluster's)")


def parse_flags(flags):
    labels, taints = {}, []
    for f in flags or []:
        if f.startswith("--node-labels="):
            for kv in filter(None, f[len("--node-labels="):].split(",")):
                k, _, v = kv.partition("=")
                labels[k] = v
        elif f.startswith("--register-with-taints="):
            for t in filter(None, f[len("--register-with-taints="):].split(",")):
                kv, _, effect = t.rpartition(":")
                if effect not in TAINT_EFFECTS:
                    raise Refused(f"kubelet: invalid taint {t!r}: effect must be one of {sorted(TAINT_EFFECTS)}")
                k, _, v = kv.partition("=")
                taints.append({"key": k, "value": v, "effect": effect})
    return labels, taints


# The integer settings check_tuning knows; kubelet refuses a wrong type in any of them.
INTEGER_TUNING_KEYS = ("evictionMaxPodGracePeriod", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
                       "podPidsLimit", "eventRecordQPS", "eventBurst", "kubeAPIQPS", "kubeAPIBurst")
# Rates kubelet's validation refuses below zero, with the flag its message names.
NON_NEGATIVE_RATES = {"eventRecordQPS": "--event-qps", "eventBurst": "--event-burst",
                      "kubeAPIQPS": "--kube-api-qps", "kubeAPIBurst": "--kube-api-burst"}
# Settings kubelet reads as booleans, and as durations (metav1.Duration: a Go duration string).
BOOL_TUNING_KEYS = ("cpuCFSQuota", "kernelMemcgNotification")
DURATION_TUNING_KEYS = ("shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "streamingConnectionIdleTimeout")
GO_DURATION_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
                     "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def go_duration(text):
    """Go's time.ParseDuration, in nanoseconds; ValueError as Go would refuse it."""
    if not isinstance(text, str):
        raise ValueError(f"time: invalid duration {text!r}")
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if body == "0":
        return 0
    total, at = 0, 0
    for m in GO_DURATION.finditer(body):
        if m.start() != at:
            break
        total += float(m.group(1)) * GO_DURATION_UNITS[m.group(2)]
        at = m.end()
    if not body or at != len(body):
        raise ValueError(f"time: invalid duration {text!r}")
    return sign * int(total)


# Kubelet's defaults for the image GC thresholds, which its validation fills in for an unset one.
IMAGE_GC_HIGH_DEFAULT, IMAGE_GC_LOW_DEFAULT = 85, 80


def check_tuning(tuning, who):
    """Kubelet's own validation of the settings in `tuning` (KubeletConfiguration keys): it
    refuses to start on a wrong type, a GC threshold outside 0..100, or low >= high once its
    defaults fill in the one not set."""
    for key in INTEGER_TUNING_KEYS:
        v = tuning.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise Refused(f"kubelet ({who}): {key} must be an integer, got {v!r}")
    for key, flag in NON_NEGATIVE_RATES.items():
        v = tuning.get(key)
        if v is not None and v < 0:
            raise Refused(f"kubelet ({who}): invalid configuration: {key} ({flag}) {v} must not be a negative number")
    for key in BOOL_TUNING_KEYS:
        if key in tuning and not isinstance(tuning[key], bool):
            raise Refused(f"kubelet ({who}): {key} must be a boolean, got {tuning[key]!r}")
    for key in DURATION_TUNING_KEYS:
        if key in tuning:
            try:
                tuning[key] = go_duration(tuning[key])
            except ValueError as e:
                raise Refused(f"kubelet ({who}): {key}: {e}")
    total = tuning.get("shutdownGracePeriod", 0)
    critical = tuning.get("shutdownGracePeriodCriticalPods", 0)
    for key, v in (("shutdownGracePeriod", total), ("shutdownGracePeriodCriticalPods", critical)):
        if v < 0:
            raise Refused(f"kubelet ({who}): invalid configuration: {key} {v}ns must be >= 0")
    if critical > total:
        raise Refused(f"kubelet ({who}): invalid configuration: shutdownGracePeriodCriticalPods {critical}ns "
                      f"must be <= shutdownGracePeriod {total}ns")
    high = tuning.get("imageGCHighThresholdPercent", IMAGE_GC_HIGH_DEFAULT)
    low = tuning.get("imageGCLowThresholdPercent", IMAGE_GC_LOW_DEFAULT)
    for key, v in (("imageGCHighThresholdPercent", high), ("imageGCLowThresholdPercent", low)):
        if not 0 <= v <= 100:
            raise Refused(f"kubelet ({who}): invalid configuration: {key} ({v}) must be between 0 and 100, inclusive")
    if low >= high:
        raise Refused(f"kubelet ({who}): invalid configuration: imageGCLowThresholdPercent ({low}) must be less than imageGCHighThresholdPercent ({high})")
    return {k: v for k, v in tuning.items() if v is not None}


TUNING_KEYS = INTEGER_TUNING_KEYS + BOOL_TUNING_KEYS + DURATION_TUNING_KEYS


def merge(a, b):
    """nodeadm merges NodeConfig documents in order: later values win, maps merge, lists append."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        elif isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = out[k] + v
        else:
            out[k] = v
    return out


def strict(obj, allowed, where):
    extra = sorted(set(obj or {}) - allowed)
    if extra:
        raise Refused(f"nodeadm: {where}: unknown field(s) {extra}")


def al2023(user_data, cluster):
    if not user_data.lstrip().startswith("MIME-Version"):
        raise Refused("nodeadm: user data is not a MIME multipart document; no NodeConfig found")
    msg = email.message_from_string(user_data, policy=email.policy.compat32)
    if not msg.is_multipart():
        raise Refused("nodeadm: user data is not multipart")
    config = {}
    found = False
    for part in msg.get_payload():
        if part.get_content_type() != "application/node.eks.aws":
            continue
        for doc in yaml.safe_load_all(part.get_payload()):
            if not doc:
                continue
            if doc.get("apiVersion") != "node.eks.aws/v1alpha1" or doc.get("kind") != "NodeConfig":
                raise Refused(f"nodeadm: unsupported document {doc.get('apiVersion')}/{doc.get('kind')}")
            found = True
            config = merge(config, doc)
    if not found:
        raise Refused("nodeadm: no NodeConfig in user data")
    spec = config.get("spec") or {}
    strict(spec, NODECONFIG_SPEC, "spec")
    c = spec.get("cluster") or {}
    strict(c, NODECONFIG_CLUSTER, "spec.cluster")
    strict(spec.get("kubelet"), NODECONFIG_KUBELET, "spec.kubelet")
    strict(spec.get("instance"), NODECONFIG_INSTANCE, "spec.instance")
    # nodeadm's ValidateNodeConfig, in its order and words.
    if not c.get("name"):
        raise Refused("nodeadm: Name is missing in cluster configuration")
    if not c.get("apiServerEndpoint"):
        raise Refused("nodeadm: Apiserver endpoint is missing in cluster configuration")
    if not c.get("certificateAuthority"):
        raise Refused("nodeadm: Certificate authority is missing in cluster configuration")
    if not c.get("cidr"):
        raise Refused("nodeadm: CIDR is missing in cluster configuration")
    pem = pem_of(c["certificateAuthority"], "nodeadm")
    check_cluster(c["apiServerEndpoint"], pem, cluster, "nodeadm")
    kubelet = spec.get("kubelet") or {}
    labels, taints = parse_flags(kubelet.get("flags"))
    check_labels(labels)
    max_pods = (kubelet.get("config") or {}).get("maxPods")
    if max_pods is not None and (not isinstance(max_pods, int) or max_pods < 1):
        raise Refused(f"kubelet: invalid maxPods {max_pods!r}")
    dns = cidr_dns(c["cidr"])
    cfg = kubelet.get("config") or {}
    reserved = {"kube": cfg.get("kubeReserved") or {}, "system": cfg.get("systemReserved") or {},
                "eviction": cfg.get("evictionHard") or {}}
    tuning = check_tuning({k: cfg[k] for k in TUNING_KEYS if k in cfg}, "nodeadm")
    return Join(c["apiServerEndpoint"], pem, labels, taints, max_pods, dns, reserved, tuning)


def cidr_dns(cidr):
    import ipaddress
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError as e:
        raise Refused(f"nodeadm: invalid cluster CIDR {cidr!r}: {e}")
    return str(net.network_address + 10)


def bottlerocket(user_data, cluster):
    try:
        doc = tomllib.loads(user_data)
    except tomllib.TOMLDecodeError as e:
        raise Refused(f"bottlerocket: user data is not TOML: {e}")
    settings = doc.get("settings") or {}
    k = settings.get("kubernetes") or {}
    strict_keys = sorted(set(k) - BOTTLEROCKET_KUBERNETES)
    if strict_keys:
        raise Refused(f"bottlerocket: unknown settings settings.kubernetes.{strict_keys}")
    for key in ("cluster-name", "api-server", "cluster-certificate"):
        if not k.get(key):
            raise Refused(f"bottlerocket: settings.kubernetes.{key} is required to join a cluster")
    pem = pem_of(k["cluster-certificate"], "bottlerocket")
    check_cluster(k["api-server"], pem, cluster, "bottlerocket")
    labels = {str(a): str(b) for a, b in (k.get("node-labels") or {}).items()}
    check_labels(labels)
    taints = []
    for key, values in (k.get("node-taints") or {}).items():
        for v in values if isinstance(values, list) else [values]:
            value, _, effect = str(v).rpartition(":")
            if effect not in TAINT_EFFECTS:
                raise Refused(f"bottlerocket: node-taints.{key}: effect {effect!r} is not one of {sorted(TAINT_EFFECTS)}")
            taints.append({"key": key, "value": value, "effect": effect})
    max_pods = k.get("max-pods")
    reserved = {"kube": k.get("kube-reserved") or {}, "system": k.get("system-reserved") or {},
                "eviction": k.get("eviction-hard") or {}}
    tuning = check_tuning({key: k[br] for key, br in BOTTLEROCKET_TUNING.items() if br in k}, "bottlerocket")
    return Join(k["api-server"], pem, labels, taints, max_pods, k.get("cluster-dns-ip"), reserved, tuning)


# Bottlerocket's names for the kubelet settings check_tuning knows.
BOTTLEROCKET_TUNING = {
    "evictionMaxPodGracePeriod": "eviction-max-pod-grace-period",
    "imageGCHighThresholdPercent": "image-gc-high-threshold-percent",
    "imageGCLowThresholdPercent": "image-gc-low-threshold-percent",
    "cpuCFSQuota": "cpu-cfs-quota-enforced",
    "podPidsLimit": "pod-pids-limit",
    "eventRecordQPS": "event-qps",
    "eventBurst": "event-burst",
    "kubeAPIQPS": "kube-api-qps",
    "kubeAPIBurst": "kube-api-burst",
    "shutdownGracePeriod": "shutdown-grace-period",
    "shutdownGracePeriodCriticalPods": "shutdown-grace-period-for-critical-pods",
}


# kubelet flags the EKS bootstraps pass through (--kubelet-extra-args, -KubeletExtraArgs) that
# this emulation reads; kubelet refuses a flag it does not define ("unknown flag"), and the
# emulation refuses any other rather than pretend to know it.
KUBELET_FLAGS = {
    "--node-labels", "--register-with-taints", "--max-pods", "--kube-reserved", "--system-reserved",
    "--eviction-hard", "--eviction-soft", "--eviction-soft-grace-period",
    "--eviction-max-pod-grace-period", "--image-gc-high-threshold", "--image-gc-low-threshold", "--cpu-cfs-quota",
    "--pod-max-pids", "--event-qps", "--event-burst", "--kube-api-qps", "--kube-api-burst",
    "--kernel-memcg-notification", "--streaming-connection-idle-timeout",
}
# Those flags' KubeletConfiguration keys.
TUNING_FLAGS = {
    "--eviction-max-pod-grace-period": "evictionMaxPodGracePeriod",
    "--image-gc-high-threshold": "imageGCHighThresholdPercent",
    "--image-gc-low-threshold": "imageGCLowThresholdPercent",
    "--cpu-cfs-quota": "cpuCFSQuota",
    "--pod-max-pids": "podPidsLimit",
    "--event-qps": "eventRecordQPS",
    "--event-burst": "eventBurst",
    "--kube-api-qps": "kubeAPIQPS",
    "--kube-api-burst": "kubeAPIBurst",
}
# Go's strconv.ParseBool, which kubelet's boolean flags use.
GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
# /etc/eks/bootstrap.sh (amazon-eks-ami, AL2): its getopt long options, each taking a value.
BOOTSTRAP_SH_OPTIONS = {
    "--use-max-pods", "--b64-cluster-ca", "--apiserver-endpoint", "--kubelet-extra-args",
    "--enable-docker-bridge", "--aws-api-retry-attempts", "--docker-config-json",
    "--containerd-config-file", "--pause-container-account", "--pause-container-version",
    "--dns-cluster-ip", "--container-runtime", "--ip-family", "--service-ipv6-cidr",
    "--enable-local-outpost", "--cluster-id", "--mount-bpf-fs", "--local-disks",
}
# Start-EKSBootstrap.ps1 (EKS Windows AMIs): its parameters; EKSClusterName is mandatory.
EKS_PS1_PARAMETERS = [
    "EKSClusterName", "KubeletExtraArgs", "KubeProxyExtraArgs", "APIServerEndpoint",
    "Base64ClusterCA", "DNSClusterIP", "ContainerRuntime", "ServiceCIDR", "ExcludedSnatCIDRs",
]


def kubelet_args(args, who):
    """kubelet's command line as the bootstraps hand it over: --flag=value words."""
    flags, max_pods, reserved = [], None, {"kube": {}, "system": {}, "eviction": {}}
    tuning = {}
    pairs = lambda v, sep: dict(kv.split(sep, 1) for kv in filter(None, v.split(",")))
    for word in args:
        name, eq, value = word.partition("=")
        if name not in KUBELET_FLAGS:
            raise Refused(f"kubelet ({who}): unknown flag: {name}")
        if not eq:
            raise Refused(f"kubelet ({who}): flag needs an argument: {name}")
        try:
            if name in ("--node-labels", "--register-with-taints"):
                flags.append(word)
            elif name == "--max-pods":
                max_pods = int(value)
                if max_pods < 1:
                    raise ValueError(value)
            elif name in ("--kube-reserved", "--system-reserved"):
                reserved["kube" if name == "--kube-reserved" else "system"] = pairs(value, "=")
            elif name == "--eviction-hard":
                reserved["eviction"] = pairs(value, "<")
            elif name in ("--cpu-cfs-quota", "--kernel-memcg-notification"):
                if value not in GO_BOOLS:
                    raise ValueError(f"strconv.ParseBool: parsing {value!r}: invalid syntax")
                key = "cpuCFSQuota" if name == "--cpu-cfs-quota" else "kernelMemcgNotification"
                tuning[key] = GO_BOOLS[value]
            elif name == "--streaming-connection-idle-timeout":
                tuning["streamingConnectionIdleTimeout"] = value
            elif name in TUNING_FLAGS:
                tuning[TUNING_FLAGS[name]] = int(value)
            else:
                pairs(value, "<" if name == "--eviction-soft" else "=")
        except ValueError as e:
            raise Refused(f"kubelet ({who}): invalid value for {name}: {e}")
    labels, taints = parse_flags(flags)
    check_labels(labels)
    return labels, taints, max_pods, reserved, check_tuning(tuning, who)


def cloud_init_parts(user_data):
    """(content type, body) of each part cloud-init handles, in order."""
    if user_data.lstrip().startswith("MIME-Version"):
        msg = email.message_from_string(user_data, policy=email.policy.compat32)
        if not msg.is_multipart():
            raise Refused("cloud-init: MIME user data without parts")
        return [(p.get_content_type(), p.get_payload()) for p in msg.get_payload()]
    return [("text/x-shellscript", user_data)]


def bootstrap_sh(words):
    """Reads bootstrap.sh's arguments as its getopt does; returns (cluster, options)."""
    opts, positional, i = {}, [], 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name not in BOOTSTRAP_SH_OPTIONS:
                raise Refused(f"bootstrap.sh: getopt: unrecognized option '{name}'")
            if not eq:
                i += 1
                if i >= len(words):
                    raise Refused(f"bootstrap.sh: getopt: option '{name}' requires an argument")
                value = words[i]
            opts[name] = value
        else:
            positional.append(w)
        i += 1
    if not positional:
        raise Refused("bootstrap.sh: You must specify a cluster name")
    if len(positional) > 1:
        raise Refused(f"bootstrap.sh: unexpected arguments {positional[1:]}")
    if opts.get("--use-max-pods", "true") not in ("true", "false"):
        raise Refused("bootstrap.sh: --use-max-pods must be true or false")
    if opts.get("--local-disks", "raid0") not in ("raid0", "raid10", "mount"):
        raise Refused(f"bootstrap.sh: --local-disks must be raid0, raid10 or mount, got {opts['--local-disks']!r}")
    return positional[0], opts


def al2(user_data, cluster):
    calls = []
    for ctype, body in cloud_init_parts(user_data):
        if ctype == "text/cloud-config":
            try:
                yaml.safe_load(body)
            except yaml.YAMLError as e:
                raise Refused(f"cloud-init: cloud-config is not YAML: {e}")
            continue
        if ctype != "text/x-shellscript":
            continue
        if not body.startswith("#!"):
            raise Refused("cloud-init: a shell script part without #! cannot be executed")
        script = body.replace("\\\n", " ")
        for line in script.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "/etc/eks/bootstrap.sh":
                calls.append(words[1:])
    if not calls:
        raise Refused("AL2: no /etc/eks/bootstrap.sh call in user data: kubelet never starts")
    name, opts = bootstrap_sh(calls[-1])
    endpoint, ca = opts.get("--apiserver-endpoint"), opts.get("--b64-cluster-ca")
    if not endpoint or not ca:
        raise Refused("bootstrap.sh: without --apiserver-endpoint and --b64-cluster-ca it calls eks:DescribeCluster, which the node role may not")
    pem = pem_of(ca, "bootstrap.sh")
    check_cluster(endpoint, pem, cluster, "bootstrap.sh")
    labels, taints, max_pods, reserved, tuning = kubelet_args(
        shlex.split(opts.get("--kubelet-extra-args", "")), "bootstrap.sh")
    if max_pods is None and opts.get("--use-max-pods", "true") == "false":
        raise Refused("bootstrap.sh: --use-max-pods false and no --max-pods: kubelet would run with 110, not the plan's")
    j = Join(endpoint, pem, labels, taints, max_pods, opts.get("--dns-cluster-ip"), reserved, tuning)
    j.cluster_name, j.local_disks = name, opts.get("--local-disks")
    return j


def powershell_words(line):
    """A command line as PowerShell splits it: '' inside single quotes is one quote, words in
    double quotes keep their spaces; stream redirections (3>&1) are not arguments."""
    words, i = [], 0
    while i < len(line):
        c = line[i]
        if c.isspace():
            i += 1
        elif c == "'":
            j, buf = i + 1, []
            while True:
                if j >= len(line):
                    raise Refused("powershell: The string is missing the terminator: '.")
                if line[j] == "'" and line[j + 1:j + 2] == "'":
                    buf.append("'")
                    j += 2
                elif line[j] == "'":
                    break
                else:
                    buf.append(line[j])
                    j += 1
            words.append("".join(buf))
            i = j + 1
        elif c == '"':
            j = line.find('"', i + 1)
            if j < 0:
                raise Refused('powershell: The string is missing the terminator: ".')
            words.append(line[i + 1:j])
            i = j + 1
        else:
            j = i
            while j < len(line) and not line[j].isspace():
                j += 1
            word = line[i:j]
            if not re.fullmatch(r"[1-6*]?>&[12]", word):
                words.append(word)
            i = j
    return words


def bind_ps1(words):
    """Binds words to Start-EKSBootstrap.ps1's parameters the way PowerShell does: -Name
    value, names case-insensitive and abbreviable while unambiguous."""
    bound, i = {}, 0
    while i < len(words):
        w = words[i]
        if not w.startswith("-"):
            raise Refused(f"Start-EKSBootstrap.ps1: A positional parameter cannot be found that accepts argument '{w}'.")
        name = w[1:].rstrip(":")
        matches = [p for p in EKS_PS1_PARAMETERS if p.lower() == name.lower()] or \
            [p for p in EKS_PS1_PARAMETERS if p.lower().startswith(name.lower())]
        if not matches:
            raise Refused(f"Start-EKSBootstrap.ps1: A parameter cannot be found that matches parameter name '{name}'.")
        if len(matches) > 1:
            raise Refused(f"Start-EKSBootstrap.ps1: Parameter cannot be processed because the parameter name '{name}' is ambiguous.")
        if i + 1 >= len(words):
            raise Refused(f"Start-EKSBootstrap.ps1: Missing an argument for parameter '{matches[0]}'.")
        if matches[0] in bound:
            raise Refused(f"Start-EKSBootstrap.ps1: Cannot bind parameter because parameter '{matches[0]}' is specified more than once.")
        bound[matches[0]] = words[i + 1]
        i += 2
    if not bound.get("EKSClusterName"):
        raise Refused("Start-EKSBootstrap.ps1: Cannot process command because of one or more missing mandatory parameters: EKSClusterName.")
    return bound


def windows(user_data, cluster):
    # EC2Launch runs what is between <powershell> and </powershell>, nothing else.
    m = re.search(r"<powershell>(.*?)</powershell>", user_data, re.S)
    if not m:
        raise Refused("EC2Launch: no <powershell> block in user data: nothing runs")
    script_vars, calls = {}, []
    for line in m.group(1).splitlines():
        line = line.strip()
        assign = re.fullmatch(r"(?:\[string\])?\$(\w+)\s*=\s*\"(.*)\"", line)
        if assign:
            script_vars[assign.group(1).lower()] = assign.group(2).replace("$env:ProgramFiles", r"C:\Program Files")
            continue
        if line.startswith("& "):
            words = powershell_words(line[2:])
            if not words:
                continue
            target = words[0]
            if target.startswith("$"):
                target = script_vars.get(target[1:].lower(), "")
            if target.replace("$env:ProgramFiles", r"C:\Program Files") == r"C:\Program Files\Amazon\EKS\Start-EKSBootstrap.ps1":
                calls.append(words[1:])
    if not calls:
        raise Refused(r"Windows: no call of C:\Program Files\Amazon\EKS\Start-EKSBootstrap.ps1: kubelet never starts")
    p = bind_ps1(calls[-1])
    endpoint, ca = p.get("APIServerEndpoint"), p.get("Base64ClusterCA")
    if not endpoint or not ca:
        raise Refused("Start-EKSBootstrap.ps1: without -APIServerEndpoint and -Base64ClusterCA it calls eks:DescribeCluster, which the node role may not")
    pem = pem_of(ca, "Start-EKSBootstrap.ps1")
    check_cluster(endpoint, pem, cluster, "Start-EKSBootstrap.ps1")
    labels, taints, max_pods, reserved, tuning = kubelet_args(
        shlex.split(p.get("KubeletExtraArgs", "")), "Start-EKSBootstrap.ps1")
    j = Join(endpoint, pem, labels, taints, max_pods, p.get("DNSClusterIP"), reserved, tuning)
    j.cluster_name = p["EKSClusterName"]
    return j


def join(family, user_data, cluster):
    """cluster: {"endpoint": URL, "ca_pem": PEM}."""
    if not user_data:
        raise Refused("no user data: nothing on the instance knows the cluster")
    if family == "bottlerocket":
        return bottlerocket(user_data, cluster)
    if family == "al2":
        return al2(user_data, cluster)
    if family.startswith("windows"):
        return windows(user_data, cluster)
    return al2023(user_data, cluster)


MIB = 1 << 20
GIB = 1 << 30
SUFFIX = {"Ki": 1 << 10, "Mi": MIB, "Gi": GIB, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(q, whole=None):
    """A Kubernetes quantity in base units (cpu in millicores when the unit is cores:
    callers pass cpu=True by using millicores()). `N%` needs `whole`."""
    q = str(q).strip()
    if q.endswith("%"):
        # As the kubelet: the percentage is parsed into a float32 fraction (10% is a little over
        # a tenth) and capacity times it truncated.
        f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
        return int(whole * f32(f32(float(q[:-1])) / 100))
    for suf, mult in sorted(SUFFIX.items(), key=lambda kv: -len(kv[0])):
        if q.endswith(suf):
            return int(float(q[: -len(suf)]) * mult)
    return int(float(q))


def millicores(q):
    q = str(q).strip()
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def kube_reserved_cpu(vcpus):
    band = lambda lo, hi: max(min(vcpus, hi) - lo, 0)
    return band(0, 1) * 60 + band(1, 2) * 10 + band(2, 4) * 5 + band(4, 1 << 30) * 5 // 2


def node_resources(vcpus, advertised_mib, root_gib, join):
    """capacity and allocatable as kubelet reports them on an EKS image: memory less the VM's
    share, kube-reserved by the EKS formula unless the config sets it, system-reserved as set,
    hard eviction (memory.available 100Mi, nodefs.available 10%) unless set."""
    max_pods = join.max_pods or 110
    mem = (advertised_mib * 925 // 1000) * MIB
    eph = root_gib * GIB
    capacity = {"cpu": vcpus * 1000, "memory": mem, "ephemeral-storage": eph, "pods": max_pods}
    kube = {"cpu": kube_reserved_cpu(vcpus), "memory": 11 * MIB * max_pods + 255 * MIB, "ephemeral-storage": GIB}
    for k, v in (join.reserved.get("kube") or {}).items():
        kube[k] = millicores(v) if k == "cpu" else quantity(v)
    system = {k: (millicores(v) if k == "cpu" else quantity(v)) for k, v in (join.reserved.get("system") or {}).items()}
    ev = {"memory.available": "100Mi", "nodefs.available": "10%"}
    ev.update(join.reserved.get("eviction") or {})
    eviction = {"memory": quantity(ev["memory.available"], mem), "ephemeral-storage": quantity(ev["nodefs.available"], eph)}
    alloc = {}
    for r, total in capacity.items():
        if r == "pods":
            alloc[r] = total
            continue
        alloc[r] = max(total - kube.get(r, 0) - system.get(r, 0) - eviction.get(r, 0), 0)
    fmt = lambda r, v: f"{v}m" if r == "cpu" else str(v)
    return ({r: fmt(r, v) for r, v in capacity.items()}, {r: fmt(r, v) for r, v in alloc.items()})


def kubelet_sizing(vcpus, advertised_mib, root_gib, join):
    """The kubelet's sizing settings, as the flags of e2e/harness/hollow-node.sh start take them
    (one value each, "" where none): the same capacity and reservations node_resources computes,
    so a real kubelet started with them reports that allocatable. cpu in cores, memory and
    ephemeral storage in bytes; kube-reserved by the EKS formula unless the user data sets it,
    eviction-hard with the EKS images' defaults under what the user data sets."""
    max_pods = join.max_pods or 110
    mem = (advertised_mib * 925 // 1000) * MIB
    kube = {"cpu": f"{kube_reserved_cpu(vcpus)}m", "memory": str(11 * MIB * max_pods + 255 * MIB),
            "ephemeral-storage": str(GIB)}
    kube.update({k: str(v) for k, v in (join.reserved.get("kube") or {}).items()})
    system = {k: str(v) for k, v in (join.reserved.get("system") or {}).items()}
    ev = {"memory.available": "100Mi", "nodefs.available": "10%"}
    ev.update({k: str(v) for k, v in (join.reserved.get("eviction") or {}).items()})
    kv = lambda d, sep: ",".join(f"{k}{sep}{v}" for k, v in sorted(d.items()))
    return {
        "--cpu": str(vcpus),
        "--memory": str(mem),
        "--ephemeral-storage": str(root_gib * GIB),
        "--max-pods": str(max_pods),
        "--kube-reserved": kv(kube, "="),
        "--system-reserved": kv(system, "="),
        "--eviction-hard": kv(ev, "<"),
    }
