"""The node-join emulation refuses what nodeadm, Bottlerocket, bootstrap.sh (AL2),
Start-EKSBootstrap.ps1 (Windows) and kubelet refuse.
Run: python3 -m unittest discover -s e2e/emulation (needs PyYAML; the moto venv has it)."""
import base64
import os
import unittest

from nodejoin import Refused, join, kubelet_may_set

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CA = base64.b64encode(PEM.encode()).decode()
CLUSTER = {"endpoint": "https://127.0.0.1:6443", "ca_pem": PEM}


def mime(node_config, user=None):
    parts = ""
    if user:
        parts += f"--B\nContent-Type: text/x-shellscript\n\n{user}\n\n"
    parts += f"--B\nContent-Type: application/node.eks.aws\n\n{node_config}\n--B--\n"
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n{parts}'


def node_config(cidr='"10.100.0.0/16"', ca=None, flags='["--node-labels=team=web", "--register-with-taints=a=b:NoSchedule"]', extra=""):
    ca = CA if ca is None else ca
    return f"""apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: "e2e"
    apiServerEndpoint: "https://127.0.0.1:6443"
    certificateAuthority: "{ca}"
""" + (f"    cidr: {cidr}\n" if cidr else "") + f"""  kubelet:
    config:
      maxPods: 29
    flags: {flags}
{extra}"""


def toml(extra="", ca=None, labels='"team" = "web"'):
    ca = CA if ca is None else ca
    return f"""[settings.kubernetes]
cluster-name = "e2e"
api-server = "https://127.0.0.1:6443"
cluster-certificate = "{ca}"
cluster-dns-ip = "10.100.0.10"
max-pods = 29
{extra}
[settings.kubernetes.node-labels]
{labels}

[settings.kubernetes.node-taints]
"dedicated" = ["gpu:NoSchedule"]
"""


class AL2023(unittest.TestCase):
    def test_a_complete_node_config_joins_with_its_labels_taints_and_dns(self):
        j = join("al2023", mime(node_config(), user="echo hi"), CLUSTER)
        self.assertEqual(j.labels, {"team": "web"})
        self.assertEqual(j.taints, [{"key": "a", "value": "b", "effect": "NoSchedule"}])
        self.assertEqual(j.max_pods, 29)
        self.assertEqual(j.dns, "10.100.0.10")

    def test_missing_cidr_is_refused_with_nodeadms_words(self):
        with self.assertRaisesRegex(Refused, "CIDR is missing in cluster configuration"):
            join("al2023", mime(node_config(cidr=None)), CLUSTER)

    def test_empty_or_foreign_ca_is_refused(self):
        with self.assertRaisesRegex(Refused, "Certificate authority is missing"):
            join("al2023", mime(node_config(ca="")), CLUSTER)
        other = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nOTHER\n-----END CERTIFICATE-----\n").decode()
        with self.assertRaisesRegex(Refused, "unknown authority"):
            join("al2023", mime(node_config(ca=other)), CLUSTER)

    def test_kubelet_label_rule_agrees_with_adze(self):
        # The same keys as scheduling/src/labels.rs kubelet_refuses_kubernetes_io_labels_outside_its_own.
        for ok in ["team", "example.com/tier", "kubernetes.io/arch", "topology.kubernetes.io/zone",
                   "node.kubernetes.io/instance-type", "node.kubernetes.io/lifecycle",
                   "kubelet.kubernetes.io/x", "adze.sh/nodepool"]:
            self.assertTrue(kubelet_may_set(ok), ok)
        for refused in ["node-restriction.kubernetes.io/team", "node-role.kubernetes.io/worker",
                        "kubernetes.io/role", "k8s.io/x", "example.k8s.io/x"]:
            self.assertFalse(kubelet_may_set(refused), refused)

    def test_kubelet_refuses_restricted_labels(self):
        flags = '["--node-labels=node-restriction.kubernetes.io/team=a"]'
        with self.assertRaisesRegex(Refused, "unknown 'kubernetes.io' or 'k8s.io' labels"):
            join("al2023", mime(node_config(flags=flags)), CLUSTER)

    def test_unknown_fields_and_shell_only_user_data_are_refused(self):
        with self.assertRaisesRegex(Refused, "unknown field"):
            join("al2023", mime(node_config(extra="  bogus: 1\n")), CLUSTER)
        with self.assertRaisesRegex(Refused, "not a MIME"):
            join("al2023", "#!/bin/bash\necho hi", CLUSTER)
        with self.assertRaisesRegex(Refused, "no user data"):
            join("al2023", "", CLUSTER)

    def test_later_documents_win_when_merged(self):
        first = node_config(cidr='"172.20.0.0/16"')
        ud = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n'
              f"--B\nContent-Type: application/node.eks.aws\n\n{first}\n"
              f"--B\nContent-Type: application/node.eks.aws\n\n{node_config()}\n--B--\n")
        self.assertEqual(join("al2023", ud, CLUSTER).dns, "10.100.0.10")


    def test_kubelet_tuning_reaches_kubelet_and_its_validation_applies(self):
        tuned = node_config().replace("      maxPods: 29\n", "      maxPods: 29\n      evictionMaxPodGracePeriod: 60\n"
                                      "      imageGCHighThresholdPercent: 70\n      imageGCLowThresholdPercent: 50\n"
                                      "      cpuCFSQuota: false\n")
        j = join("al2023", mime(tuned), CLUSTER)
        self.assertEqual(j.tuning, {"evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 70,
                                    "imageGCLowThresholdPercent": 50, "cpuCFSQuota": False})
        # A lone high threshold under kubelet's default low one (80): kubelet refuses to start.
        lone = node_config().replace("      maxPods: 29\n", "      maxPods: 29\n      imageGCHighThresholdPercent: 70\n")
        with self.assertRaisesRegex(Refused, r"imageGCLowThresholdPercent \(80\) must be less than imageGCHighThresholdPercent \(70\)"):
            join("al2023", mime(lone), CLUSTER)
        with self.assertRaisesRegex(Refused, "cpuCFSQuota must be a boolean"):
            join("al2023", mime(node_config().replace("      maxPods: 29\n", "      maxPods: 29\n      cpuCFSQuota: \"no\"\n")), CLUSTER)

    def test_shutdown_grace_and_stream_timeout_are_durations_kubelet_checks(self):
        def cfg(lines):
            return mime(node_config().replace("      maxPods: 29\n", "      maxPods: 29\n" + lines))
        j = join("al2023", cfg('      shutdownGracePeriod: "2m30s"\n      shutdownGracePeriodCriticalPods: "30s"\n'
                               '      streamingConnectionIdleTimeout: "5m"\n      kernelMemcgNotification: true\n'), CLUSTER)
        self.assertEqual(j.tuning, {"shutdownGracePeriod": 150 * 10**9, "shutdownGracePeriodCriticalPods": 30 * 10**9,
                                    "streamingConnectionIdleTimeout": 300 * 10**9, "kernelMemcgNotification": True})
        with self.assertRaisesRegex(Refused, "shutdownGracePeriodCriticalPods 60000000000ns must be <= shutdownGracePeriod 30000000000ns"):
            join("al2023", cfg('      shutdownGracePeriod: "30s"\n      shutdownGracePeriodCriticalPods: "1m"\n'), CLUSTER)
        with self.assertRaisesRegex(Refused, "must be <= shutdownGracePeriod 0ns"):
            join("al2023", cfg('      shutdownGracePeriodCriticalPods: "10s"\n'), CLUSTER)
        with self.assertRaisesRegex(Refused, "shutdownGracePeriod -10000000000ns must be >= 0"):
            join("al2023", cfg('      shutdownGracePeriod: "-10s"\n'), CLUSTER)
        with self.assertRaisesRegex(Refused, "invalid duration"):
            join("al2023", cfg("      streamingConnectionIdleTimeout: 30\n"), CLUSTER)
        with self.assertRaisesRegex(Refused, "kernelMemcgNotification must be a boolean"):
            join("al2023", cfg('      kernelMemcgNotification: "yes"\n'), CLUSTER)


class Bottlerocket(unittest.TestCase):
    def test_kubelet_tuning_settings_join_and_are_checked(self):
        j = join("bottlerocket", toml(extra="eviction-max-pod-grace-period = 60\nimage-gc-high-threshold-percent = 70\n"
                                            "image-gc-low-threshold-percent = 50\ncpu-cfs-quota-enforced = false"), CLUSTER)
        self.assertEqual(j.tuning, {"evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 70,
                                    "imageGCLowThresholdPercent": 50, "cpuCFSQuota": False})
        with self.assertRaisesRegex(Refused, "must be less than"):
            join("bottlerocket", toml(extra="image-gc-low-threshold-percent = 90"), CLUSTER)
        with self.assertRaisesRegex(Refused, "must be between 0 and 100"):
            join("bottlerocket", toml(extra="image-gc-high-threshold-percent = 101"), CLUSTER)

    def test_pid_limit_and_api_rates_join_and_are_checked(self):
        j = join("bottlerocket", toml(extra="pod-pids-limit = 4096\nevent-qps = 0\nevent-burst = 20\n"
                                            "kube-api-qps = 30\nkube-api-burst = 60"), CLUSTER)
        self.assertEqual(j.tuning, {"podPidsLimit": 4096, "eventRecordQPS": 0, "eventBurst": 20,
                                    "kubeAPIQPS": 30, "kubeAPIBurst": 60})
        with self.assertRaisesRegex(Refused, r"eventBurst \(--event-burst\) -5 must not be a negative number"):
            join("bottlerocket", toml(extra="event-burst = -5"), CLUSTER)

    def test_shutdown_grace_settings_join_and_are_checked(self):
        j = join("bottlerocket", toml(extra='shutdown-grace-period = "45s"\nshutdown-grace-period-for-critical-pods = "15s"'), CLUSTER)
        self.assertEqual(j.tuning, {"shutdownGracePeriod": 45 * 10**9, "shutdownGracePeriodCriticalPods": 15 * 10**9})
        with self.assertRaisesRegex(Refused, "must be <= shutdownGracePeriod"):
            join("bottlerocket", toml(extra='shutdown-grace-period-for-critical-pods = "15s"'), CLUSTER)
        # Settings Bottlerocket does not have stop the boot (Adze refuses them for this family).
        with self.assertRaisesRegex(Refused, "streaming-connection-idle-timeout"):
            join("bottlerocket", toml(extra='streaming-connection-idle-timeout = "5m"'), CLUSTER)

    def test_complete_settings_join(self):
        j = join("bottlerocket", toml(), CLUSTER)
        self.assertEqual(j.labels, {"team": "web"})
        self.assertEqual(j.taints, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        self.assertEqual(j.dns, "10.100.0.10")

    def test_unknown_settings_missing_certificate_and_restricted_labels_are_refused(self):
        with self.assertRaisesRegex(Refused, "unknown settings"):
            join("bottlerocket", toml(extra="not-a-setting = 1"), CLUSTER)
        with self.assertRaisesRegex(Refused, "cluster-certificate is required"):
            join("bottlerocket", toml(ca=""), CLUSTER)
        with self.assertRaisesRegex(Refused, "labels"):
            join("bottlerocket", toml(labels='"node-role.kubernetes.io/x" = "y"'), CLUSTER)

    def test_mime_user_data_is_not_toml(self):
        with self.assertRaisesRegex(Refused, "not TOML"):
            join("bottlerocket", mime(node_config()), CLUSTER)


TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def rendered(name):
    """User data as Adze renders it (aws/src/userdata.rs keeps these copies equal to its output)."""
    with open(os.path.join(TESTDATA, name)) as f:
        return f.read()


def al2_script(args, user=None):
    parts = ""
    if user:
        parts += f"--B\nContent-Type: text/x-shellscript\n\n{user}\n"
    parts += f"--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n/etc/eks/bootstrap.sh {args}\n--B--\n"
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n{parts}'


AL2_OK = f"e2e --apiserver-endpoint https://127.0.0.1:6443 --b64-cluster-ca {CA} --dns-cluster-ip 10.100.0.10 --use-max-pods false --kubelet-extra-args '--node-labels=team=web --max-pods=29'"


class AL2(unittest.TestCase):
    def test_adzes_rendering_joins_with_labels_taints_max_pods_and_reservations(self):
        j = join("al2", rendered("al2.userdata"), CLUSTER)
        self.assertEqual(j.cluster_name, "e2e")
        self.assertEqual(j.labels, {"adze.sh/nodepool": "default"})
        self.assertEqual(j.taints, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        self.assertEqual(j.max_pods, 29)
        self.assertEqual(j.dns, "10.100.0.10")
        self.assertEqual(j.reserved["kube"], {"cpu": "250m"})
        self.assertEqual(j.reserved["eviction"], {"memory.available": "5%"})
        self.assertEqual(j.tuning, {"evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 70,
                                    "imageGCLowThresholdPercent": 50, "eventRecordQPS": 0, "eventBurst": 20,
                                    "kubeAPIQPS": 30, "kubeAPIBurst": 60, "podPidsLimit": 4096,
                                    "cpuCFSQuota": False, "kernelMemcgNotification": True,
                                    "streamingConnectionIdleTimeout": 30 * 60 * 10**9})
        self.assertIsNone(j.local_disks)

    def test_kubelet_refuses_bad_tuning_flags(self):
        with self.assertRaisesRegex(Refused, "invalid value for --cpu-cfs-quota"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --cpu-cfs-quota=maybe")), CLUSTER)
        with self.assertRaisesRegex(Refused, "invalid value for --image-gc-high-threshold"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --image-gc-high-threshold=high")), CLUSTER)
        with self.assertRaisesRegex(Refused, r"imageGCLowThresholdPercent \(90\) must be less than"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --image-gc-low-threshold=90")), CLUSTER)
        with self.assertRaisesRegex(Refused, r"kubeAPIQPS \(--kube-api-qps\) -1 must not be a negative number"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --kube-api-qps=-1")), CLUSTER)
        with self.assertRaisesRegex(Refused, "invalid value for --kernel-memcg-notification"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --kernel-memcg-notification=on")), CLUSTER)
        with self.assertRaisesRegex(Refused, "streamingConnectionIdleTimeout: time: invalid duration"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --streaming-connection-idle-timeout=5")), CLUSTER)
        # Kubelet has no flag for the shutdown grace: Adze refuses it for AL2 and Windows.
        with self.assertRaisesRegex(Refused, "unknown flag: --shutdown-grace-period"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --shutdown-grace-period=30s")), CLUSTER)
        with self.assertRaisesRegex(Refused, "invalid value for --pod-max-pids"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --pod-max-pids=lots")), CLUSTER)

    def test_adzes_rendering_with_the_users_mime_parts_and_raid0_joins(self):
        j = join("al2", rendered("al2-user-mime.userdata"), CLUSTER)
        self.assertEqual(j.local_disks, "raid0")
        self.assertEqual(j.max_pods, 29)

    def test_bootstrap_sh_refuses_what_its_getopt_and_checks_refuse(self):
        with self.assertRaisesRegex(Refused, "unrecognized option '--bogus'"):
            join("al2", al2_script(AL2_OK + " --bogus 1"), CLUSTER)
        with self.assertRaisesRegex(Refused, "You must specify a cluster name"):
            join("al2", al2_script(AL2_OK.replace("e2e ", "", 1)), CLUSTER)
        with self.assertRaisesRegex(Refused, "requires an argument"):
            join("al2", al2_script(AL2_OK + " --dns-cluster-ip"), CLUSTER)
        with self.assertRaisesRegex(Refused, "--use-max-pods must be true or false"):
            join("al2", al2_script(AL2_OK.replace("--use-max-pods false", "--use-max-pods no")), CLUSTER)
        with self.assertRaisesRegex(Refused, "eks:DescribeCluster"):
            join("al2", al2_script("e2e --use-max-pods false --kubelet-extra-args '--max-pods=29'"), CLUSTER)

    def test_kubelet_refuses_unknown_flags_and_restricted_labels_from_extra_args(self):
        with self.assertRaisesRegex(Refused, "unknown flag: --bogus"):
            join("al2", al2_script(AL2_OK.replace("--max-pods=29", "--max-pods=29 --bogus=1")), CLUSTER)
        with self.assertRaisesRegex(Refused, "unknown 'kubernetes.io' or 'k8s.io' labels"):
            join("al2", al2_script(AL2_OK.replace("team=web", "node-role.kubernetes.io/x=y")), CLUSTER)
        with self.assertRaisesRegex(Refused, "unknown authority"):
            other = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nOTHER\n-----END CERTIFICATE-----\n").decode()
            join("al2", al2_script(AL2_OK.replace(CA, other)), CLUSTER)

    def test_no_bootstrap_call_or_a_script_without_shebang_never_joins(self):
        with self.assertRaisesRegex(Refused, "no /etc/eks/bootstrap.sh call"):
            join("al2", "#!/bin/bash\necho hi\n", CLUSTER)
        ud = al2_script(AL2_OK).replace("#!/bin/bash\n", "")
        with self.assertRaisesRegex(Refused, "without #!"):
            join("al2", ud, CLUSTER)


def ps(call, before=""):
    return ("<powershell>\n" + before +
            '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n'
            f"& $EKSBootstrapScriptFile {call} 3>&1 4>&1\n</powershell>\n")


WIN_OK = f"-EKSClusterName 'e2e' -APIServerEndpoint 'https://127.0.0.1:6443' -Base64ClusterCA '{CA}' -DNSClusterIP '10.100.0.10' -KubeletExtraArgs '--node-labels=team=web --max-pods=29'"


class Windows(unittest.TestCase):
    def test_adzes_rendering_joins_with_labels_taints_and_max_pods(self):
        j = join("windows2022", rendered("windows2022.userdata"), CLUSTER)
        self.assertEqual(j.cluster_name, "e2e")
        self.assertEqual(j.labels, {"adze.sh/nodepool": "default"})
        self.assertEqual(j.taints, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        self.assertEqual(j.max_pods, 29)
        self.assertEqual(j.dns, "10.100.0.10")
        self.assertEqual(j.reserved["kube"], {"cpu": "250m"})
        self.assertEqual(j.tuning, {"evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 70,
                                    "imageGCLowThresholdPercent": 50})

    def test_powershell_binds_parameters_case_blind_and_by_unambiguous_prefix(self):
        j = join("windows2019", ps(WIN_OK.replace("-EKSClusterName", "-eksclustern").replace("-DNSClusterIP", "-DNS")), CLUSTER)
        self.assertEqual((j.cluster_name, j.dns), ("e2e", "10.100.0.10"))
        quoted = join("windows2019", ps(WIN_OK.replace("'e2e'", "'o''brien'")), {**CLUSTER})
        self.assertEqual(quoted.cluster_name, "o'brien")

    def test_start_eksbootstrap_refuses_unknown_ambiguous_and_missing_parameters(self):
        with self.assertRaisesRegex(Refused, "cannot be found that matches parameter name 'Bogus'"):
            join("windows2022", ps(WIN_OK + " -Bogus 1"), CLUSTER)
        with self.assertRaisesRegex(Refused, "'E' is ambiguous"):
            join("windows2022", ps(WIN_OK.replace("-EKSClusterName", "-E")), CLUSTER)
        with self.assertRaisesRegex(Refused, "missing mandatory parameters: EKSClusterName"):
            join("windows2022", ps(WIN_OK.replace("-EKSClusterName 'e2e' ", "")), CLUSTER)
        with self.assertRaisesRegex(Refused, "Missing an argument for parameter 'KubeletExtraArgs'"):
            join("windows2022", ps(WIN_OK + " -KubeletExtraArgs"), CLUSTER)
        with self.assertRaisesRegex(Refused, "eks:DescribeCluster"):
            join("windows2022", ps("-EKSClusterName 'e2e'"), CLUSTER)
        with self.assertRaisesRegex(Refused, "unknown flag: --bogus"):
            join("windows2022", ps(WIN_OK.replace("--max-pods=29", "--bogus=1")), CLUSTER)

    def test_without_a_powershell_block_or_a_bootstrap_call_nothing_joins(self):
        with self.assertRaisesRegex(Refused, "no <powershell> block"):
            join("windows2022", ps(WIN_OK).replace("<powershell>", "").replace("</powershell>", ""), CLUSTER)
        with self.assertRaisesRegex(Refused, "no call of"):
            join("windows2022", "<powershell>\nWrite-Host hi\n</powershell>", CLUSTER)
        with self.assertRaisesRegex(Refused, "missing the terminator"):
            join("windows2022", ps(WIN_OK[:-1]), CLUSTER)


class Resources(unittest.TestCase):
    def test_allocatable_follows_the_eks_formula_and_the_users_reservations(self):
        from nodejoin import node_resources
        j = join("al2023", mime(node_config()), CLUSTER)
        cap, alloc = node_resources(2, 8192, 20, j)  # m5.large, 29 pods
        self.assertEqual(cap["cpu"], "2000m")
        self.assertEqual(alloc["cpu"], "1930m")  # 60m + 10m kube-reserved
        self.assertEqual(int(cap["memory"]), 7577 * (1 << 20))
        self.assertEqual(int(alloc["memory"]), (7577 - 574 - 100) * (1 << 20))
        j.reserved = {"kube": {"cpu": "200m"}, "system": {"memory": "1Gi"}, "eviction": {"memory.available": "5%"}}
        _, alloc = node_resources(2, 8192, 20, j)
        self.assertEqual(alloc["cpu"], "1800m")
        mem = 7577 * (1 << 20)
        # 5 % as the kubelet takes it: a float32 fraction, capacity times it truncated (6 bytes
        # more than an exact 5 % of 7577 MiB).
        self.assertEqual(int(alloc["memory"]), mem - 574 * (1 << 20) - (1 << 30) - 397_253_023)
        self.assertEqual(397_253_023 - mem // 20, 6)


if __name__ == "__main__":
    unittest.main()
