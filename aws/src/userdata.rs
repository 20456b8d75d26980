//! User data: what an instance runs at boot to join the cluster. The AMI family decides the
//! format; the EC2NodeClass's own `userData` is merged in, never replaced, so a user cannot
//! accidentally drop the join settings.
//!
//! * AL2023 boots with `nodeadm`, which reads `NodeConfig` documents from a MIME multipart
//!   archive. Ours is one part; the user's part (a NodeConfig or a shell script) goes first, so
//!   `nodeadm` merges ours over it.
//! * Bottlerocket reads one TOML document. Ours is `[settings.kubernetes]` keys; the user's
//!   TOML is kept and ours appended where the user did not set the same table.
//! * AL2 boots with `/etc/eks/bootstrap.sh`, run from a shell part of a MIME multipart
//!   archive. The user's data (a script, or a MIME archive whose parts are kept) goes first,
//!   as Karpenter merges it; ours is the last part and passes the join settings as
//!   bootstrap.sh flags, kubelet settings in `--kubelet-extra-args`.
//! * Windows (2019, 2022, 2025) runs one `<powershell>` block at boot: the user's PowerShell
//!   (their own tags removed) first, then `Start-EKSBootstrap.ps1` with the join settings as
//!   its parameters, kubelet settings in `-KubeletExtraArgs`.
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
    /// Seconds; kubelet's `evictionMaxPodGracePeriod`.
    pub eviction_max_pod_grace_period: Option<i32>,
    pub image_gc_high_threshold_percent: Option<i32>,
    pub image_gc_low_threshold_percent: Option<i32>,
    pub cpu_cfs_quota: Option<bool>,
    pub pod_pids_limit: Option<i64>,
    pub event_record_qps: Option<i32>,
    pub event_burst: Option<i32>,
    pub kube_api_qps: Option<i32>,
    pub kube_api_burst: Option<i32>,
    pub shutdown_grace_period: Option<String>,
    pub shutdown_grace_period_critical_pods: Option<String>,
    pub streaming_connection_idle_timeout: Option<String>,
    pub kernel_memcg_notification: Option<bool>,
}

/// One scalar kubelet setting as each format writes it. A family without a way to write it
/// (`flag` or `bottlerocket` is `None`) never sees it: `validate()` refuses the field for that
/// family ([`adze_api::ec2nodeclass::KubeletConfiguration::unsupported_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scalar {
    /// The KubeletConfiguration key (nodeadm's `spec.kubelet.config`).
    key: &'static str,
    flag: Option<&'static str>,
    bottlerocket: Option<&'static str>,
    value: String,
    /// A duration: quoted in YAML and TOML, where a bare `0` would read as a number.
    text: bool,
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
            eviction_max_pod_grace_period: k.eviction_max_pod_grace_period,
            image_gc_high_threshold_percent: k.image_gc_high_threshold_percent,
            image_gc_low_threshold_percent: k.image_gc_low_threshold_percent,
            cpu_cfs_quota: k.cpu_cfs_quota,
            pod_pids_limit: k.pod_pids_limit,
            event_record_qps: k.event_record_qps,
            event_burst: k.event_burst,
            kube_api_qps: k.kube_api_qps,
            kube_api_burst: k.kube_api_burst,
            shutdown_grace_period: k.shutdown_grace_period.as_ref().map(|d| d.to_string()),
            shutdown_grace_period_critical_pods: k
                .shutdown_grace_period_critical_pods
                .as_ref()
                .map(|d| d.to_string()),
            streaming_connection_idle_timeout: k
                .streaming_connection_idle_timeout
                .as_ref()
                .map(|d| d.to_string()),
            kernel_memcg_notification: k.kernel_memcg_notification,
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

    /// Each scalar setting that is set, in a fixed order.
    fn scalars(&self) -> Vec<Scalar> {
        let number = |key, flag, br, v: Option<String>| {
            v.map(|value| Scalar {
                key,
                flag: Some(flag),
                bottlerocket: br,
                value,
                text: false,
            })
        };
        let duration = |key, flag, br, v: &Option<String>| {
            v.clone().map(|value| Scalar {
                key,
                flag,
                bottlerocket: br,
                value,
                text: true,
            })
        };
        let int = |v: Option<i32>| v.map(|v| v.to_string());
        [
            number(
                "evictionMaxPodGracePeriod",
                "--eviction-max-pod-grace-period",
                Some("eviction-max-pod-grace-period"),
                int(self.eviction_max_pod_grace_period),
            ),
            number(
                "imageGCHighThresholdPercent",
                "--image-gc-high-threshold",
                Some("image-gc-high-threshold-percent"),
                int(self.image_gc_high_threshold_percent),
            ),
            number(
                "imageGCLowThresholdPercent",
                "--image-gc-low-threshold",
                Some("image-gc-low-threshold-percent"),
                int(self.image_gc_low_threshold_percent),
            ),
            number(
                "eventRecordQPS",
                "--event-qps",
                Some("event-qps"),
                int(self.event_record_qps),
            ),
            number(
                "eventBurst",
                "--event-burst",
                Some("event-burst"),
                int(self.event_burst),
            ),
            number(
                "kubeAPIQPS",
                "--kube-api-qps",
                Some("kube-api-qps"),
                int(self.kube_api_qps),
            ),
            number(
                "kubeAPIBurst",
                "--kube-api-burst",
                Some("kube-api-burst"),
                int(self.kube_api_burst),
            ),
            number(
                "podPidsLimit",
                "--pod-max-pids",
                Some("pod-pids-limit"),
                self.pod_pids_limit.map(|v| v.to_string()),
            ),
            number(
                "cpuCFSQuota",
                "--cpu-cfs-quota",
                Some("cpu-cfs-quota-enforced"),
                self.cpu_cfs_quota.map(|b| b.to_string()),
            ),
            number(
                "kernelMemcgNotification",
                "--kernel-memcg-notification",
                None,
                self.kernel_memcg_notification.map(|b| b.to_string()),
            ),
            duration(
                "shutdownGracePeriod",
                None,
                Some("shutdown-grace-period"),
                &self.shutdown_grace_period,
            ),
            duration(
                "shutdownGracePeriodCriticalPods",
                None,
                Some("shutdown-grace-period-for-critical-pods"),
                &self.shutdown_grace_period_critical_pods,
            ),
            duration(
                "streamingConnectionIdleTimeout",
                Some("--streaming-connection-idle-timeout"),
                None,
                &self.streaming_connection_idle_timeout,
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
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
        for s in self.scalars() {
            let value = if s.text {
                yaml_quote(&s.value)
            } else {
                s.value
            };
            out += &format!("      {}: {value}\n", s.key);
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
        AmiFamily::AL2 => al2(boot, user),
        AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025 => {
            windows(boot, user)
        }
        AmiFamily::Custom => user.unwrap_or_default().to_string(),
    }
}

/// The cluster DNS address kubelet is given: the class's first clusterDNS, else the service
/// CIDR's tenth address (what the EKS images derive themselves).
fn dns_ip(boot: &Bootstrap) -> String {
    boot.kubelet
        .cluster_dns
        .first()
        .cloned()
        .unwrap_or_else(|| crate::cluster::cluster_dns(&boot.service_cidr).unwrap_or_default())
}

/// Kubelet command-line flags for the families that take them as one string (AL2's
/// `--kubelet-extra-args`, Windows' `-KubeletExtraArgs`): labels, taints, max pods,
/// reservations and eviction thresholds, each in kubelet's own flag syntax.
fn kubelet_flags(boot: &Bootstrap) -> Vec<String> {
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
    flags.push(format!("--max-pods={}", boot.max_pods));
    let k = &boot.kubelet;
    for (flag, map, sep) in [
        ("--system-reserved", &k.system_reserved, "="),
        ("--kube-reserved", &k.kube_reserved, "="),
        ("--eviction-hard", &k.eviction_hard, "<"),
        ("--eviction-soft", &k.eviction_soft, "<"),
        (
            "--eviction-soft-grace-period",
            &k.eviction_soft_grace_period,
            "=",
        ),
    ] {
        if map.is_empty() {
            continue;
        }
        let pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k}{sep}{v}")).collect();
        flags.push(format!("{flag}={}", pairs.join(",")));
    }
    for s in k.scalars() {
        if let Some(flag) = s.flag {
            flags.push(format!("{flag}={}", s.value));
        }
    }
    flags
}

/// A word for a POSIX shell: single-quoted, with each `'` closed, escaped and reopened.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A PowerShell literal string: single quotes, a `'` doubled.
fn ps_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The user's data as MIME parts for an AL2 archive: the parts of their own MIME archive, or
/// their text as one part (cloud-config when it says so, a shell script otherwise).
fn user_mime_parts(user: &str) -> Vec<String> {
    let trimmed = user.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    if let Some(parts) = mime_parts(trimmed) {
        return parts;
    }
    let content_type = if trimmed.starts_with("#cloud-config") {
        "text/cloud-config; charset=\"us-ascii\""
    } else {
        "text/x-shellscript; charset=\"us-ascii\""
    };
    vec![format!("Content-Type: {content_type}\n\n{}\n", trimmed)]
}

/// The parts (headers and body) of a MIME multipart document, or None when `doc` is not one.
fn mime_parts(doc: &str) -> Option<Vec<String>> {
    let (headers, body) = doc.split_once("\n\n")?;
    if !headers
        .lines()
        .any(|l| l.trim().eq_ignore_ascii_case("MIME-Version: 1.0"))
    {
        return None;
    }
    let boundary = headers.lines().find_map(|l| {
        let (_, rest) = l.split_once("boundary=")?;
        Some(rest.trim().trim_matches('"').to_string())
    })?;
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    for chunk in body.split(&delimiter).skip(1) {
        if chunk.starts_with("--") {
            break;
        }
        let part = chunk.trim_start_matches('\n').trim_end();
        if !part.is_empty() {
            parts.push(format!("{part}\n"));
        }
    }
    Some(parts)
}

fn al2(boot: &Bootstrap, user: Option<&str>) -> String {
    let mut script = format!(
        "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log | logger -t user-data -s 2>/dev/console) 2>&1\n/etc/eks/bootstrap.sh {} --apiserver-endpoint {} --b64-cluster-ca {} --dns-cluster-ip {} --use-max-pods false",
        sh_quote(&boot.cluster_name),
        sh_quote(&boot.cluster_endpoint),
        sh_quote(&boot.cluster_ca),
        sh_quote(&dns_ip(boot)),
    );
    if boot.instance_store_raid0 {
        script += " --local-disks raid0";
    }
    script += &format!(
        " --kubelet-extra-args {}\n",
        sh_quote(&kubelet_flags(boot).join(" "))
    );
    let mut out = format!(
        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"{MIME_BOUNDARY}\"\n\n"
    );
    for part in user_mime_parts(user.unwrap_or_default()) {
        out += &format!("--{MIME_BOUNDARY}\n{part}\n");
    }
    out += &format!(
        "--{MIME_BOUNDARY}\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n{script}\n--{MIME_BOUNDARY}--\n"
    );
    out
}

fn windows(boot: &Bootstrap, user: Option<&str>) -> String {
    let user = user
        .unwrap_or_default()
        .replace("<powershell>", "")
        .replace("</powershell>", "");
    let mut out = String::from("<powershell>\n");
    if !user.trim().is_empty() {
        out += user.trim();
        out += "\n";
    }
    out += "[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n";
    out += &format!(
        "& $EKSBootstrapScriptFile -EKSClusterName {} -APIServerEndpoint {} -Base64ClusterCA {} -DNSClusterIP {} -KubeletExtraArgs {} 3>&1 4>&1 5>&1 6>&1\n",
        ps_quote(&boot.cluster_name),
        ps_quote(&boot.cluster_endpoint),
        ps_quote(&boot.cluster_ca),
        ps_quote(&dns_ip(boot)),
        ps_quote(&kubelet_flags(boot).join(" ")),
    );
    out += "</powershell>\n";
    out
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
        // Integers and booleans as TOML writes them, which is also how they print.
        for s in boot.kubelet.scalars() {
            if let Some(key) = s.bottlerocket {
                let value = if s.text { toml_str(&s.value) } else { s.value };
                out += &format!("{key} = {value}\n");
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
                eviction_max_pod_grace_period: Some(60),
                image_gc_high_threshold_percent: Some(70),
                image_gc_low_threshold_percent: Some(50),
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
        assert!(out.contains("      evictionSoftGracePeriod: {\"memory.available\": \"1m\"}\n      evictionMaxPodGracePeriod: 60\n      imageGCHighThresholdPercent: 70\n      imageGCLowThresholdPercent: 50\n    flags:"), "{out}");
        assert!(
            !out.contains("cpuCFSQuota"),
            "kubelet's own default unless the class sets it"
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
        assert!(
            out.contains("cluster-dns-ip = \"10.100.0.10\"\neviction-max-pod-grace-period = 60\nimage-gc-high-threshold-percent = 70\nimage-gc-low-threshold-percent = 50\n\n"),
            "in [settings.kubernetes], before its subtables: {out}"
        );
        assert!(!out.contains("cpu-cfs-quota-enforced"));
    }

    #[test]
    fn cpu_cfs_quota_reaches_every_linux_family_in_its_own_syntax() {
        let b = Bootstrap {
            kubelet: KubeletConfig {
                cpu_cfs_quota: Some(false),
                ..Default::default()
            },
            ..boot()
        };
        assert!(render(AmiFamily::AL2023, &b, None).contains("      cpuCFSQuota: false\n"));
        assert!(
            render(AmiFamily::Bottlerocket, &b, None).contains("cpu-cfs-quota-enforced = false\n")
        );
        assert!(render(AmiFamily::AL2, &b, None).contains(" --cpu-cfs-quota=false'"));
    }

    /// Karpenter v1.15's added kubelet fields reach each family under that family's own
    /// names: nodeadm's KubeletConfiguration keys, Bottlerocket's settings, kubelet's flags
    /// (AL2 and Windows).
    #[test]
    fn pid_limit_and_api_rates_reach_every_family_in_its_own_syntax() {
        let b = Bootstrap {
            kubelet: KubeletConfig {
                pod_pids_limit: Some(4096),
                event_record_qps: Some(0),
                event_burst: Some(20),
                kube_api_qps: Some(30),
                kube_api_burst: Some(60),
                ..Default::default()
            },
            ..boot()
        };
        let al2023 = render(AmiFamily::AL2023, &b, None);
        for line in [
            "      eventRecordQPS: 0
",
            "      eventBurst: 20
",
            "      kubeAPIQPS: 30
",
            "      kubeAPIBurst: 60
",
            "      podPidsLimit: 4096
",
        ] {
            assert!(al2023.contains(line), "{line:?} in {al2023}");
        }
        let br = render(AmiFamily::Bottlerocket, &b, None);
        for line in [
            "event-qps = 0
",
            "event-burst = 20
",
            "kube-api-qps = 30
",
            "kube-api-burst = 60
",
            "pod-pids-limit = 4096
",
        ] {
            assert!(br.contains(line), "{line:?} in {br}");
        }
        let al2 = render(AmiFamily::AL2, &b, None);
        assert!(
            al2.contains(
                " --event-qps=0 --event-burst=20 --kube-api-qps=30 --kube-api-burst=60 --pod-max-pids=4096"
            ),
            "{al2}"
        );
        // Windows: the rates as flags (validation refuses podPidsLimit there).
        let b = Bootstrap {
            kubelet: KubeletConfig {
                kube_api_qps: Some(30),
                ..Default::default()
            },
            ..boot()
        };
        assert!(render(AmiFamily::Windows2022, &b, None).contains("--kube-api-qps=30"));
        let plain = render(AmiFamily::AL2023, &boot(), None);
        assert!(
            !plain.contains("podPidsLimit") && !plain.contains("kubeAPIQPS"),
            "kubelet's own defaults unless the class sets them"
        );
    }

    /// Every scalar kubelet setting is either written in each family's user data or refused
    /// for that family by validation: the user data's table and
    /// `KubeletConfiguration::unsupported_with` agree, so no field is dropped on the way.
    #[test]
    fn each_kubelet_setting_is_written_or_refused_for_every_family() {
        let d = |s: &str| Some(adze_api::duration::GoDuration::parse(s).unwrap());
        let spec = adze_api::ec2nodeclass::KubeletConfiguration {
            eviction_max_pod_grace_period: Some(60),
            image_gc_high_threshold_percent: Some(90),
            image_gc_low_threshold_percent: Some(70),
            cpu_cfs_quota: Some(false),
            pod_pids_limit: Some(4096),
            event_record_qps: Some(0),
            event_burst: Some(20),
            kube_api_qps: Some(30),
            kube_api_burst: Some(60),
            shutdown_grace_period: d("2m30s"),
            shutdown_grace_period_critical_pods: d("30s"),
            streaming_connection_idle_timeout: d("5m"),
            kernel_memcg_notification: Some(true),
            ..Default::default()
        };
        let kubelet = KubeletConfig::from_spec(Some(&spec));
        let b = Bootstrap {
            kubelet: kubelet.clone(),
            ..boot()
        };
        let scalars = kubelet.scalars();
        assert_eq!(scalars.len(), 13, "every scalar above is in the table");
        for family in AmiFamily::ALL {
            if family == AmiFamily::Custom {
                continue;
            }
            let out = render(family, &b, None);
            let refused: Vec<&str> = spec
                .unsupported_with(family)
                .into_iter()
                .map(|(f, _)| f)
                .collect();
            for s in &scalars {
                let written = match family {
                    AmiFamily::AL2023 => Some(format!(
                        "      {}: {}\n",
                        s.key,
                        if s.text {
                            yaml_quote(&s.value)
                        } else {
                            s.value.clone()
                        }
                    )),
                    AmiFamily::Bottlerocket => s.bottlerocket.map(|k| {
                        let v = if s.text {
                            toml_str(&s.value)
                        } else {
                            s.value.clone()
                        };
                        format!("\n{k} = {v}\n")
                    }),
                    _ => s.flag.map(|f| format!(" {f}={}", s.value)),
                };
                match written {
                    Some(text) if !refused.contains(&s.key) => {
                        assert!(
                            out.contains(&text),
                            "{family:?} {}: {text:?} in {out}",
                            s.key
                        )
                    }
                    // Refused at validation; never reaches a launch.
                    Some(_) => {}
                    None => assert!(
                        refused.contains(&s.key),
                        "{family:?} cannot write {}, so validation must refuse it",
                        s.key
                    ),
                }
            }
        }
    }

    #[test]
    fn al2_runs_bootstrap_sh_with_the_join_settings_after_the_users_part() {
        let out = render(
            AmiFamily::AL2,
            &with_kubelet(),
            Some("#!/bin/bash\necho hi"),
        );
        assert!(out.starts_with("MIME-Version: 1.0\n"));
        let user_at = out.find("echo hi").unwrap();
        let ours_at = out.find("/etc/eks/bootstrap.sh 'prod'").unwrap();
        assert!(
            user_at < ours_at,
            "the user's part runs first, as Karpenter orders it"
        );
        assert_eq!(out.matches("Content-Type: text/x-shellscript").count(), 2);
        assert!(out.contains("--apiserver-endpoint 'https://k8s.example:6443'"));
        assert!(out.contains("--b64-cluster-ca 'Q0EK'"));
        assert!(out.contains("--dns-cluster-ip '10.100.0.10'"));
        assert!(out.contains("--use-max-pods false"));
        assert!(!out.contains("--local-disks"));
        let extra = "--kubelet-extra-args '--node-labels=adze.sh/nodepool=default --register-with-taints=dedicated=gpu:NoSchedule --max-pods=29 --kube-reserved=cpu=250m --eviction-hard=memory.available<5% --eviction-soft=memory.available<1Gi --eviction-soft-grace-period=memory.available=1m --eviction-max-pod-grace-period=60 --image-gc-high-threshold=70 --image-gc-low-threshold=50'";
        assert!(out.contains(extra), "{out}");
        assert!(
            !out.contains("node-restriction"),
            "kubelet refuses those labels"
        );
        assert!(out.trim_end().ends_with(&format!("--{MIME_BOUNDARY}--")));
    }

    #[test]
    fn al2_keeps_the_parts_of_a_users_mime_archive_and_quotes_for_the_shell() {
        let user = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XX\"\n\n--XX\nContent-Type: text/cloud-config\n\npackages: [jq]\n--XX\nContent-Type: text/x-shellscript\n\n#!/bin/sh\ntouch /x\n--XX--\n";
        let b = Bootstrap {
            cluster_name: "it's".into(),
            instance_store_raid0: true,
            ..boot()
        };
        let out = render(AmiFamily::AL2, &b, Some(user));
        assert_eq!(
            out.matches("MIME-Version").count(),
            1,
            "one archive, not nested"
        );
        assert!(out.contains("Content-Type: text/cloud-config\n\npackages: [jq]\n"));
        assert!(out.contains("#!/bin/sh\ntouch /x\n"));
        assert!(!out.contains("--XX"), "the user's boundary is gone");
        assert!(out.contains("/etc/eks/bootstrap.sh 'it'\\''s'"));
        assert!(out.contains("--local-disks raid0"));
        assert!(
            out.contains("--dns-cluster-ip '10.100.0.10'"),
            "derived from the service CIDR"
        );
    }

    #[test]
    fn windows_runs_start_eksbootstrap_after_the_users_powershell() {
        for family in [
            AmiFamily::Windows2019,
            AmiFamily::Windows2022,
            AmiFamily::Windows2025,
        ] {
            let out = render(
                family,
                &boot(),
                Some("<powershell>\nWrite-Host 'mine'\n</powershell>"),
            );
            assert!(
                out.starts_with("<powershell>\nWrite-Host 'mine'\n[string]$EKSBootstrapScriptFile")
            );
            assert_eq!(out.matches("<powershell>").count(), 1);
            assert!(out.trim_end().ends_with("</powershell>"));
            assert!(out.contains("\"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\""));
            assert!(out.contains("-EKSClusterName 'prod' -APIServerEndpoint 'https://k8s.example:6443' -Base64ClusterCA 'Q0EK' -DNSClusterIP '10.100.0.10'"));
            assert!(out.contains("-KubeletExtraArgs '--node-labels=adze.sh/nodepool=default --register-with-taints=dedicated=gpu:NoSchedule --max-pods=29'"), "{out}");
        }
        let quoted = Bootstrap {
            cluster_name: "o'brien".into(),
            ..boot()
        };
        assert!(
            render(AmiFamily::Windows2022, &quoted, None).contains("-EKSClusterName 'o''brien'")
        );
    }

    /// User data the boot emulation reads (e2e/emulation/test_nodejoin.py): rendered here for
    /// the emulation's test cluster, compared with the committed copies, so what the
    /// emulation accepts is what this code renders. `ADZE_UPDATE_FIXTURES=1` rewrites them.
    #[test]
    fn rendered_user_data_matches_what_the_boot_emulation_reads() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/emulation/testdata");
        let cluster = Bootstrap {
            cluster_name: "e2e".into(),
            cluster_endpoint: "https://127.0.0.1:6443".into(),
            cluster_ca:
                "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
                    .into(),
            ..with_kubelet()
        };
        let cfs = Bootstrap {
            kubelet: KubeletConfig {
                cpu_cfs_quota: Some(false),
                pod_pids_limit: Some(4096),
                kube_api_qps: Some(30),
                kube_api_burst: Some(60),
                event_record_qps: Some(0),
                event_burst: Some(20),
                streaming_connection_idle_timeout: Some("30m".into()),
                kernel_memcg_notification: Some(true),
                ..cluster.kubelet.clone()
            },
            ..cluster.clone()
        };
        let cases = [
            (
                "al2.userdata",
                render(AmiFamily::AL2, &cfs, Some("#!/bin/bash\necho hi")),
            ),
            (
                "al2-user-mime.userdata",
                render(
                    AmiFamily::AL2,
                    &Bootstrap {
                        instance_store_raid0: true,
                        ..cluster.clone()
                    },
                    Some(
                        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"U\"\n\n--U\nContent-Type: text/cloud-config\n\npackages: [jq]\n--U--\n",
                    ),
                ),
            ),
            (
                "windows2022.userdata",
                render(
                    AmiFamily::Windows2022,
                    &cluster,
                    Some("<powershell>\nWrite-Host 'before the join'\n</powershell>"),
                ),
            ),
        ];
        for (name, rendered) in cases {
            let path = dir.join(name);
            if std::env::var_os("ADZE_UPDATE_FIXTURES").is_some() {
                std::fs::write(&path, &rendered).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                committed, rendered,
                "{name} differs from the rendering; rerun with ADZE_UPDATE_FIXTURES=1 and rerun the emulation tests"
            );
        }
    }

    #[test]
    fn custom_family_passes_user_data_through() {
        assert_eq!(render(AmiFamily::Custom, &boot(), Some("x")), "x");
    }
}
