//! User data: what an instance runs at boot to join the cluster. The AMI family decides the
//! format; the EC2NodeClass's own `userData` is merged in, never replaced, so a user cannot
//! accidentally drop the join settings.
//!
//! * AL2023 boots with `nodeadm`, which reads `NodeConfig` documents from a MIME multipart
//!   archive. Ours is one part; the user's part (a NodeConfig or a shell script) goes first, so
//!   `nodeadm` merges ours over it.
//! * Bottlerocket reads one TOML document. Ours is `[settings.kubernetes]` keys; the user's
//!   TOML is kept and ours appended where the user did not set the same table.
//! * Custom: the user's data, unchanged.

use std::collections::BTreeMap;

use adze_api::ec2nodeclass::AmiFamily;

/// What a node needs to join the cluster and to carry the claim's labels and taints.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bootstrap {
    pub cluster_name: String,
    pub cluster_endpoint: String,
    /// Base64 PEM of the cluster CA.
    pub cluster_ca: String,
    /// The service CIDR: nodeadm requires it (`spec.cluster.cidr`) and derives the cluster
    /// DNS address from it; Bottlerocket is given that address (`cluster-dns-ip`).
    pub service_cidr: String,
    pub max_pods: i64,
    /// The EC2NodeClass's other kubelet settings (reservations, eviction, DNS).
    pub kubelet: KubeletConfig,
    /// `instanceStorePolicy: RAID0`: nodeadm stripes the local NVMe disks for pod storage
    /// (AL2023 only; validation refuses it with Bottlerocket).
    pub instance_store_raid0: bool,
    /// Only labels kubelet accepts ([`adze_scheduling::labels::kubelet_may_set`]); the rest
    /// are left to registration.
    pub labels: BTreeMap<String, String>,
    /// `key=value:Effect` (value may be empty).
    pub taints: Vec<String>,
}

/// Kubelet settings from `spec.kubelet`, as the user wrote them (validated at admission).
/// `maxPods` and `podsPerCore` are folded into [`Bootstrap::max_pods`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KubeletConfig {
    pub system_reserved: BTreeMap<String, String>,
    pub kube_reserved: BTreeMap<String, String>,
    pub eviction_hard: BTreeMap<String, String>,
    pub eviction_soft: BTreeMap<String, String>,
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    pub cluster_dns: Vec<String>,
}

impl KubeletConfig {
    pub fn from_spec(k: Option<&adze_api::ec2nodeclass::KubeletConfiguration>) -> Self {
        let Some(k) = k else {
            return Self::default();
        };
        KubeletConfig {
            system_reserved: k.system_reserved.clone(),
            kube_reserved: k.kube_reserved.clone(),
            eviction_hard: k.eviction_hard.clone(),
            eviction_soft: k.eviction_soft.clone(),
            eviction_soft_grace_period: k
                .eviction_soft_grace_period
                .iter()
                .map(|(s, d)| (s.clone(), d.to_string()))
                .collect(),
            cluster_dns: k.cluster_dns.clone(),
        }
    }

    /// (KubeletConfiguration key, Bottlerocket key, values) for each map setting.
    fn maps(&self) -> [(&'static str, &'static str, &BTreeMap<String, String>); 5] {
        [
            ("systemReserved", "system-reserved", &self.system_reserved),
            ("kubeReserved", "kube-reserved", &self.kube_reserved),
            ("evictionHard", "eviction-hard", &self.eviction_hard),
            ("evictionSoft", "eviction-soft", &self.eviction_soft),
            (
                "evictionSoftGracePeriod",
                "eviction-soft-grace-period",
                &self.eviction_soft_grace_period,
            ),
        ]
    }

    /// Extra `spec.kubelet.config` lines for a NodeConfig, indented to sit under `config:`.
    fn node_config_lines(&self) -> String {
        let mut out = String::new();
        if !self.cluster_dns.is_empty() {
            let ips: Vec<String> = self.cluster_dns.iter().map(|ip| yaml_quote(ip)).collect();
            out += &format!("      clusterDNS: [{}]\n", ips.join(", "));
        }
        for (key, _, map) in self.maps() {
            if map.is_empty() {
                continue;
            }
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", yaml_quote(k), yaml_quote(v)))
                .collect();
            out += &format!("      {key}: {{{}}}\n", entries.join(", "));
        }
        out
    }
}

pub const MIME_BOUNDARY: &str = "//ADZE-BOUNDARY";

/// The user data for `family`, before base64.
pub fn render(family: AmiFamily, boot: &Bootstrap, user: Option<&str>) -> String {
    match family {
        AmiFamily::AL2023 => al2023(boot, user),
        AmiFamily::Bottlerocket => bottlerocket(boot, user),
        AmiFamily::Custom => user.unwrap_or_default().to_string(),
    }
}

fn al2023(boot: &Bootstrap, user: Option<&str>) -> String {
    let mut flags = Vec::new();
    let l: Vec<String> = kubelet_labels(boot)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !l.is_empty() {
        flags.push(format!("--node-labels={}", l.join(",")));
    }
    if !boot.taints.is_empty() {
        flags.push(format!("--register-with-taints={}", boot.taints.join(",")));
    }
    let flags_yaml: String = flags
        .iter()
        .map(|f| format!("\n      - {}", yaml_quote(f)))
        .collect();
    let node_config = format!(
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: {}\n    apiServerEndpoint: {}\n    certificateAuthority: {}\n    cidr: {}\n{}  kubelet:\n    config:\n      maxPods: {}\n{}    flags:{}\n",
        yaml_quote(&boot.cluster_name),
        yaml_quote(&boot.cluster_endpoint),
        yaml_quote(&boot.cluster_ca),
        yaml_quote(&boot.service_cidr),
        if boot.instance_store_raid0 {
            "  instance:\n    localStorage:\n      strategy: RAID0\n"
        } else {
            ""
        },
        boot.max_pods,
        boot.kubelet.node_config_lines(),
        if flags_yaml.is_empty() {
            " []".to_string()
        } else {
            flags_yaml
        },
    );
    let mut out = format!(
        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"{MIME_BOUNDARY}\"\n\n"
    );
    if let Some(user) = user.filter(|u| !u.trim().is_empty()) {
        let content_type = if user.starts_with("#!") {
            "text/x-shellscript; charset=\"us-ascii\""
        } else {
            "application/node.eks.aws"
        };
        out += &format!(
            "--{MIME_BOUNDARY}\nContent-Type: {content_type}\n\n{}\n\n",
            user.trim_end()
        );
    }
    out += &format!(
        "--{MIME_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n{node_config}\n--{MIME_BOUNDARY}--\n"
    );
    out
}

fn bottlerocket(boot: &Bootstrap, user: Option<&str>) -> String {
    let user = user.unwrap_or_default().trim_end();
    let mut out = String::new();
    if !user.is_empty() {
        out += user;
        out += "\n\n";
    }
    let user_sets = |table: &str| user.lines().any(|l| l.trim() == format!("[{table}]"));
    if !user_sets("settings.kubernetes") {
        out += &format!(
            "[settings.kubernetes]\ncluster-name = {}\napi-server = {}\ncluster-certificate = {}\nmax-pods = {}\n",
            toml_str(&boot.cluster_name),
            toml_str(&boot.cluster_endpoint),
            toml_str(&boot.cluster_ca),
            boot.max_pods
        );
        // The class's clusterDNS when it sets one, else the service CIDR's tenth address
        // (what the EKS images derive): one key, never both (TOML refuses a repeated key).
        match boot.kubelet.cluster_dns.as_slice() {
            [] => {
                let dns = crate::cluster::cluster_dns(&boot.service_cidr).unwrap_or_default();
                out += &format!("cluster-dns-ip = {}\n", toml_str(&dns));
            }
            [one] => out += &format!("cluster-dns-ip = {}\n", toml_str(one)),
            many => {
                let ips: Vec<String> = many.iter().map(|ip| toml_str(ip)).collect();
                out += &format!("cluster-dns-ip = [{}]\n", ips.join(", "));
            }
        }
    }
    for (_, key, map) in boot.kubelet.maps() {
        let table = format!("settings.kubernetes.{key}");
        if map.is_empty() || user_sets(&table) {
            continue;
        }
        out += &format!("\n[{table}]\n");
        for (k, v) in map {
            out += &format!("{} = {}\n", toml_str(k), toml_str(v));
        }
    }
    if kubelet_labels(boot).next().is_some() && !user_sets("settings.kubernetes.node-labels") {
        out += "\n[settings.kubernetes.node-labels]\n";
        for (k, v) in kubelet_labels(boot) {
            out += &format!("{} = {}\n", toml_str(k), toml_str(v));
        }
    }
    if !boot.taints.is_empty() && !user_sets("settings.kubernetes.node-taints") {
        out += "\n[settings.kubernetes.node-taints]\n";
        let mut by_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for t in &boot.taints {
            let (key, rest) = t.split_once('=').unwrap_or((t, ""));
            by_key.entry(key).or_default().push(rest);
        }
        for (k, vs) in by_key {
            let list: Vec<String> = vs.iter().map(|v| toml_str(v)).collect();
            out += &format!("{} = [{}]\n", toml_str(k), list.join(", "));
        }
    }
    out
}

/// The labels kubelet will accept at registration.
fn kubelet_labels(boot: &Bootstrap) -> impl Iterator<Item = (&String, &String)> {
    boot.labels
        .iter()
        .filter(|(k, _)| adze_scheduling::labels::kubelet_may_set(k))
}

fn yaml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn toml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot() -> Bootstrap {
        Bootstrap {
            cluster_name: "prod".into(),
            cluster_endpoint: "https://k8s.example:6443".into(),
            cluster_ca: "Q0EK".into(),
            service_cidr: "10.100.0.0/16".into(),
            max_pods: 29,
            kubelet: KubeletConfig::default(),
            instance_store_raid0: false,
            labels: BTreeMap::from([
                ("adze.sh/nodepool".into(), "default".into()),
                ("node-restriction.kubernetes.io/team".into(), "a".into()),
            ]),
            taints: vec!["dedicated=gpu:NoSchedule".into()],
        }
    }

    #[test]
    fn al2023_user_data_is_mime_with_node_config_after_the_users_part() {
        let out = render(AmiFamily::AL2023, &boot(), Some("#!/bin/bash\necho hi"));
        assert!(out.starts_with("MIME-Version: 1.0\n"));
        let user_at = out.find("echo hi").unwrap();
        let ours_at = out.find("kind: NodeConfig").unwrap();
        assert!(
            user_at < ours_at,
            "ours must come last so nodeadm merges it over the user's"
        );
        assert!(out.contains("text/x-shellscript"));
        assert!(out.contains("apiServerEndpoint: \"https://k8s.example:6443\""));
        assert!(out.contains("maxPods: 29"));
        assert!(
            out.contains("    cidr: \"10.100.0.0/16\"\n"),
            "nodeadm refuses a NodeConfig without cidr"
        );
        assert!(out.contains("--node-labels=adze.sh/nodepool=default\""));
        assert!(
            !out.contains("node-restriction"),
            "kubelet refuses those labels"
        );
        assert!(out.contains("--register-with-taints=dedicated=gpu:NoSchedule"));
        assert!(out.trim_end().ends_with(&format!("--{MIME_BOUNDARY}--")));
    }

    #[test]
    fn bottlerocket_keeps_user_tables_and_adds_cluster_settings() {
        let user = "[settings.host-containers.admin]\nenabled = true";
        let out = render(AmiFamily::Bottlerocket, &boot(), Some(user));
        assert!(out.starts_with(user));
        assert!(out.contains("[settings.kubernetes]\ncluster-name = \"prod\""));
        assert!(out.contains("max-pods = 29"));
        assert!(out.contains("cluster-dns-ip = \"10.100.0.10\""));
        assert!(out.contains("\"adze.sh/nodepool\" = \"default\""));
        assert!(
            !out.contains("node-restriction"),
            "kubelet refuses those labels"
        );
        assert!(out.contains("\"dedicated\" = [\"gpu:NoSchedule\"]"));
    }

    #[test]
    fn bottlerocket_user_kubernetes_table_wins() {
        let user = "[settings.kubernetes]\ncluster-name = \"mine\"";
        let out = render(AmiFamily::Bottlerocket, &boot(), Some(user));
        assert_eq!(out.matches("[settings.kubernetes]").count(), 1);
        assert!(out.contains("\"mine\""));
    }

    fn with_kubelet() -> Bootstrap {
        Bootstrap {
            kubelet: KubeletConfig {
                kube_reserved: BTreeMap::from([("cpu".into(), "250m".into())]),
                eviction_hard: BTreeMap::from([("memory.available".into(), "5%".into())]),
                eviction_soft: BTreeMap::from([("memory.available".into(), "1Gi".into())]),
                eviction_soft_grace_period: BTreeMap::from([(
                    "memory.available".into(),
                    "1m".into(),
                )]),
                cluster_dns: vec!["10.100.0.10".into()],
                ..Default::default()
            },
            ..boot()
        }
    }

    #[test]
    fn al2023_node_config_carries_the_classs_kubelet_settings() {
        let out = render(AmiFamily::AL2023, &with_kubelet(), None);
        assert!(out.contains("      maxPods: 29\n      clusterDNS: [\"10.100.0.10\"]\n"));
        assert!(out.contains("      kubeReserved: {\"cpu\": \"250m\"}\n"));
        assert!(out.contains("      evictionHard: {\"memory.available\": \"5%\"}\n"));
        assert!(out.contains("      evictionSoft: {\"memory.available\": \"1Gi\"}\n"));
        assert!(
            out.contains(
                "      evictionSoftGracePeriod: {\"memory.available\": \"1m\"}\n    flags:"
            )
        );
        assert!(
            !out.contains("systemReserved"),
            "unset settings are left out"
        );
    }

    #[test]
    fn al2023_node_config_asks_nodeadm_for_raid0_local_storage() {
        assert!(!render(AmiFamily::AL2023, &boot(), None).contains("localStorage"));
        let boot = Bootstrap {
            instance_store_raid0: true,
            ..boot()
        };
        let out = render(AmiFamily::AL2023, &boot, None);
        assert!(
            out.contains("    cidr: \"10.100.0.0/16\"\n  instance:\n    localStorage:\n      strategy: RAID0\n  kubelet:\n"),
            "{out}"
        );
    }

    #[test]
    fn bottlerocket_carries_the_classs_kubelet_settings() {
        let out = render(AmiFamily::Bottlerocket, &with_kubelet(), None);
        assert!(out.contains("max-pods = 29\ncluster-dns-ip = \"10.100.0.10\"\n"));
        assert!(out.contains("[settings.kubernetes.kube-reserved]\n\"cpu\" = \"250m\"\n"));
        assert!(
            out.contains("[settings.kubernetes.eviction-hard]\n\"memory.available\" = \"5%\"\n")
        );
        assert!(out.contains(
            "[settings.kubernetes.eviction-soft-grace-period]\n\"memory.available\" = \"1m\"\n"
        ));
        assert!(!out.contains("system-reserved"));
    }

    #[test]
    fn custom_family_passes_user_data_through() {
        assert_eq!(render(AmiFamily::Custom, &boot(), Some("x")), "x");
    }
}
