"""The node-join emulation refuses what nodeadm, Bottlerocket and kubelet refuse.
Run: python3 -m unittest discover -s e2e/emulation (needs PyYAML; the moto venv has it)."""
import base64
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


class Bottlerocket(unittest.TestCase):
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
        self.assertEqual(int(alloc["memory"]), mem - 574 * (1 << 20) - (1 << 30) - int(mem * 0.05))


if __name__ == "__main__":
    unittest.main()
