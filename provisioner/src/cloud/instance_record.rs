//! `--simulated-instance-dir DIR`: the simulated cloud launches an instance by writing its
//! record to `DIR/<name>.json` and terminates it by removing the file; it creates no Node.
//! Something outside the provisioner boots a kubelet for each record (the e2e starts a
//! kubemark hollow node, `e2e/harness/hollow-node.sh`), which registers the Node itself, so
//! registration goes through the same providerID match as on EC2.
//!
//! A record says what user data and the image's bootstrap would tell that kubelet: the
//! machine's size, the reservations and eviction thresholds the planner subtracted, the labels
//! kubelet may set on itself and the taints to register with. Labels kubelet may not set
//! (NodeRestriction's rule, [`labels::kubelet_may_set`]) are left out, as from EC2 user data;
//! the provisioner sets them at registration.

use std::collections::BTreeMap;

use adze_api::NodeClaim;
use adze_scheduling::disruption::repair::{CheckKind, CheckStatus, StatusCheck};
use adze_scheduling::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources};
use adze_scheduling::{InstanceType, labels};
use serde::{Deserialize, Serialize};

use super::Instance;

/// One launched instance, as the file in the instance directory holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceRecord {
    /// The Node name the kubelet registers as.
    pub name: String,
    #[serde(rename = "providerID")]
    pub provider_id: String,
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    /// What the planner assumed (quantities), for whoever checks the kubelet agrees.
    pub capacity: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
    pub kubelet: KubeletArgs,
    /// The instance's status checks as the simulated cloud reports them (node repair reads a
    /// failing one as unhealthy); a test edits the record to play an impaired instance.
    /// Launch writes none: every check is healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_checks: Vec<SimulatedCheck>,
}

/// One simulated status check, as an instance record or a simulated Node's
/// `adze.sh/simulated-status-checks` annotation holds it (JSON), e.g.
/// `{"kind": "system", "status": "failed", "impairedSince": "2026-01-01T00:00:00Z"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulatedCheck {
    /// `instance`, `system` or `attached-ebs`.
    pub kind: String,
    /// EC2's check name; `reachability` when left out.
    #[serde(default = "reachability")]
    pub name: String,
    /// `passed`, `failed`, `insufficient-data`, `initializing`, ...
    pub status: String,
    /// RFC 3339; left out, the check has no `impairedSince` (as EC2 may).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impaired_since: Option<String>,
}

fn reachability() -> String {
    "reachability".into()
}

impl SimulatedCheck {
    /// As the cloud reports it; an unknown kind or an unreadable time is an error naming it.
    pub fn to_check(&self) -> Result<StatusCheck, String> {
        let kind = match self.kind.as_str() {
            "instance" => CheckKind::Instance,
            "system" => CheckKind::System,
            "attached-ebs" => CheckKind::AttachedEbs,
            other => {
                return Err(format!(
                    "statusChecks[].kind: {other:?} is not instance, system or attached-ebs"
                ));
            }
        };
        let impaired_since = self
            .impaired_since
            .as_deref()
            .map(|t| {
                t.parse::<k8s_openapi::jiff::Timestamp>()
                    .map(|t| t.as_second())
                    .map_err(|e| format!("statusChecks[].impairedSince: {t:?}: {e}"))
            })
            .transpose()?;
        Ok(StatusCheck {
            kind,
            name: self.name.clone(),
            status: CheckStatus::parse(&self.status),
            impaired_since,
        })
    }
}

/// The kubelet's settings for this instance, in kubelet's own terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletArgs {
    /// Whole cores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
    /// Bytes.
    pub ephemeral_storage: i64,
    pub max_pods: i64,
    /// `--kube-reserved` / `--system-reserved`: resource name → quantity.
    pub kube_reserved: BTreeMap<String, String>,
    pub system_reserved: BTreeMap<String, String>,
    /// `--eviction-hard`: signal → quantity (only the signals that hold back allocatable).
    pub eviction_hard: BTreeMap<String, String>,
    /// `--node-labels`: only those kubelet may set on its own Node.
    pub node_labels: BTreeMap<String, String>,
    /// `--register-with-taints`: `key=value:Effect` (or `key:Effect`).
    pub register_with_taints: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RecordError {
    #[error(
        "instance type {instance_type}: cpu capacity {milli}m is not a whole number of cores, which a kubelet cannot report"
    )]
    FractionalCpu { instance_type: String, milli: i64 },
    #[error("instance type {instance_type}: {resource} capacity {value} must be positive")]
    NotPositive {
        instance_type: String,
        resource: &'static str,
        value: i64,
    },
}

/// The record for `instance`, launched for `claim` as a node of type `it`. Pure.
pub fn record_for(
    claim: &NodeClaim,
    instance: &Instance,
    it: &InstanceType,
) -> Result<InstanceRecord, RecordError> {
    let name = claim.metadata.name.clone().unwrap_or_default();
    let cap = &it.capacity;
    let milli = cap.get(CPU);
    if milli % 1000 != 0 {
        return Err(RecordError::FractionalCpu {
            instance_type: it.name.clone(),
            milli,
        });
    }
    for (resource, value) in [
        (CPU, milli),
        (MEMORY, cap.get(MEMORY)),
        (PODS, cap.get(PODS)),
    ] {
        if value <= 0 {
            return Err(RecordError::NotPositive {
                instance_type: it.name.clone(),
                resource,
                value,
            });
        }
    }
    let mut node_labels: BTreeMap<String, String> =
        claim.metadata.labels.clone().unwrap_or_default();
    node_labels.insert(labels::NODECLAIM.into(), name.clone());
    node_labels.insert(labels::ZONE.into(), instance.zone.clone());
    node_labels.insert(labels::INSTANCE_TYPE.into(), instance.instance_type.clone());
    node_labels.insert(labels::CAPACITY_TYPE.into(), instance.capacity_type.clone());
    // kubelet sets the hostname label itself, from its node name.
    node_labels.remove(labels::HOSTNAME);
    node_labels.retain(|k, _| labels::kubelet_may_set(k));
    let register_with_taints = claim
        .spec
        .taints
        .iter()
        .chain(&claim.spec.startup_taints)
        .map(|t| match t.value.as_deref() {
            Some(v) if !v.is_empty() => format!("{}={v}:{}", t.key, t.effect.as_str()),
            _ => format!("{}:{}", t.key, t.effect.as_str()),
        })
        .collect();
    let overhead = &it.overhead;
    let mut eviction_hard = BTreeMap::new();
    for (signal, resource) in [
        ("memory.available", MEMORY),
        ("nodefs.available", EPHEMERAL_STORAGE),
    ] {
        // kubelet refuses a zero threshold; zero holds nothing back anyway.
        let v = overhead.eviction_threshold.get(resource);
        if v > 0 {
            eviction_hard.insert(signal.to_string(), v.to_string());
        }
    }
    Ok(InstanceRecord {
        name,
        provider_id: instance.provider_id.clone(),
        instance_type: instance.instance_type.clone(),
        zone: instance.zone.clone(),
        capacity_type: instance.capacity_type.clone(),
        capacity: instance.capacity.clone(),
        allocatable: instance.allocatable.clone(),
        kubelet: KubeletArgs {
            cpu: milli / 1000,
            memory: cap.get(MEMORY),
            ephemeral_storage: cap.get(EPHEMERAL_STORAGE),
            max_pods: cap.get(PODS),
            kube_reserved: reserved(&overhead.kube_reserved),
            system_reserved: reserved(&overhead.system_reserved),
            eviction_hard,
            node_labels,
            register_with_taints,
        },
        status_checks: Vec::new(),
    })
}

/// cpu, memory and ephemeral-storage of `r` that are above zero, as kubelet quantities.
fn reserved(r: &Resources) -> BTreeMap<String, String> {
    r.to_quantities()
        .into_iter()
        .filter(|(k, _)| [CPU, MEMORY, EPHEMERAL_STORAGE].contains(&k.as_str()))
        .filter(|(k, _)| r.get(k) > 0)
        .collect()
}

impl InstanceRecord {
    pub fn instance(&self) -> Instance {
        Instance {
            provider_id: self.provider_id.clone(),
            instance_type: self.instance_type.clone(),
            zone: self.zone.clone(),
            capacity_type: self.capacity_type.clone(),
            capacity: self.capacity.clone(),
            allocatable: self.allocatable.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_api::{Taint, TaintEffect};
    use adze_scheduling::overhead::{Overhead, default_overhead};

    const GIB: i64 = 1 << 30;

    fn claim(labels: &[(&str, &str)]) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abcde", "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        c.spec.taints = vec![Taint::new(
            "dedicated",
            Some("gpu"),
            TaintEffect::NoSchedule,
        )];
        c.spec.startup_taints = vec![Taint::new("example.com/boot", None, TaintEffect::NoExecute)];
        c
    }

    fn it(cpu_milli: i64) -> InstanceType {
        let cap = Resources::new(cpu_milli, 8 * GIB)
            .with_pods(29)
            .with_ephemeral(20 * GIB);
        InstanceType::new(
            "m5.large",
            cap,
            default_overhead(2, 29, 20 * GIB),
            BTreeMap::new(),
            vec![],
        )
    }

    fn instance(it: &InstanceType) -> Instance {
        Instance {
            provider_id: "adze-sim:///us-east-1a/i-00".into(),
            instance_type: it.name.clone(),
            zone: "us-east-1a".into(),
            capacity_type: "on-demand".into(),
            capacity: it.capacity.to_quantities(),
            allocatable: it.allocatable().to_quantities(),
        }
    }

    #[test]
    fn record_gives_kubelet_the_size_and_overhead_the_planner_subtracted() {
        let t = it(2000);
        let r = record_for(&claim(&[]), &instance(&t), &t).unwrap();
        let k = &r.kubelet;
        assert_eq!((k.cpu, k.memory, k.max_pods), (2, 8 * GIB, 29));
        assert_eq!(k.ephemeral_storage, 20 * GIB);
        // default overhead: 70m cpu, 11 MiB × 29 + 255 MiB memory, 1 GiB disk
        assert_eq!(k.kube_reserved.get("cpu").map(String::as_str), Some("70m"));
        assert_eq!(
            k.kube_reserved.get("memory").map(String::as_str),
            Some("574Mi")
        );
        assert_eq!(
            k.kube_reserved.get("ephemeral-storage").map(String::as_str),
            Some("1Gi")
        );
        assert!(k.system_reserved.is_empty());
        assert_eq!(
            k.eviction_hard.get("memory.available").map(String::as_str),
            Some("104857600")
        );
        assert_eq!(
            k.eviction_hard.get("nodefs.available").map(String::as_str),
            // 10 % of 20 GiB as the kubelet rounds a percentage (float32): 32 bytes over 2 GiB.
            Some((2 * GIB + 32).to_string().as_str())
        );
        assert_eq!(r.allocatable, t.allocatable().to_quantities());
        assert_eq!(
            k.register_with_taints,
            vec!["dedicated=gpu:NoSchedule", "example.com/boot:NoExecute"]
        );
    }

    #[test]
    fn labels_kubelet_may_not_set_are_left_for_registration() {
        let t = it(2000);
        let c = claim(&[
            ("team", "a"),
            ("node-restriction.kubernetes.io/team", "a"),
            ("node.kubernetes.io/lifecycle", "x"),
            (labels::HOSTNAME, "ignored"),
        ]);
        let k = record_for(&c, &instance(&t), &t).unwrap().kubelet;
        assert_eq!(k.node_labels.get("team").map(String::as_str), Some("a"));
        assert!(k.node_labels.contains_key("node.kubernetes.io/lifecycle"));
        assert!(
            !k.node_labels
                .contains_key("node-restriction.kubernetes.io/team")
        );
        assert!(!k.node_labels.contains_key(labels::HOSTNAME));
        assert_eq!(
            k.node_labels.get(labels::NODECLAIM).map(String::as_str),
            Some("default-abcde")
        );
        assert_eq!(
            k.node_labels.get(labels::ZONE).map(String::as_str),
            Some("us-east-1a")
        );
    }

    #[test]
    fn fractional_or_empty_machines_are_refused() {
        let t = it(1500);
        assert_eq!(
            record_for(&claim(&[]), &instance(&t), &t),
            Err(RecordError::FractionalCpu {
                instance_type: "m5.large".into(),
                milli: 1500
            })
        );
        let t = InstanceType::new(
            "empty",
            Resources::new(1000, 0).with_pods(1),
            Overhead::default(),
            BTreeMap::new(),
            vec![],
        );
        assert!(matches!(
            record_for(&claim(&[]), &instance(&t), &t),
            Err(RecordError::NotPositive {
                resource: "memory",
                ..
            })
        ));
    }

    #[test]
    fn record_round_trips_through_json() {
        let t = it(2000);
        let r = record_for(&claim(&[]), &instance(&t), &t).unwrap();
        let back: InstanceRecord =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.instance(), instance(&t));
    }
}
