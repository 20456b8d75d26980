//! A read-only snapshot of a live cluster as a scenario file (`adze-provisioner snapshot`,
//! `simulate --from-cluster`): what the cluster holds, trimmed to what the planner reads, so
//! `simulate` and `simulate --disruption` replay it offline.
//!
//! The reading itself (paginated lists through the Kubernetes client) is in [`live`], behind
//! the `controller` feature; everything here is pure, so the conversion of API objects to
//! scenario objects is tested without a cluster and built in the lean binary too.
//!
//! Which autoscaler objects become the scenario's NodePools ([`Autoscaler`]):
//! - Adze's own (`adze.sh/v1`, `aws.adze.sh/v1`, `adze.sh/v1alpha1` NodeOverlays), as they are;
//! - else Karpenter's (`karpenter.sh/v1` or `v1beta1`), converted by `migrate`'s rules
//!   ([`crate::migrate`]) with its report; Karpenter's NodeClaims are restated as Adze's
//!   (API group and label keys), and Nodes gain Adze's label beside each Karpenter label;
//! - else none (a Cluster Autoscaler or managed node group cluster): one NodePool is inferred
//!   per (instance family, capacity type, custom labels) of the nodes ([`infer_pools`]) and
//!   each node is labelled with its inferred pool, so its cost and disruption are planned.

#[cfg(feature = "controller")]
pub mod live;

use std::collections::{BTreeMap, BTreeSet};

use adze_scheduling::labels;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Node, NodeStatus, PersistentVolume, PersistentVolumeClaim, Pod,
    PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// kubectl's copy of the last applied object: often the largest annotation, never read.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Every (API group, resource) a snapshot lists ([`live`]): what its read-only ClusterRole
/// grants get, list and watch on, and nothing else (the chart's snapshotReader and
/// manifests/rbac/snapshot-reader.yaml, kept equal to this by a test).
pub const READS: &[(&str, &str)] = &[
    ("", "nodes"),
    ("", "pods"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("apps", "daemonsets"),
    ("policy", "poddisruptionbudgets"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
    ("adze.sh", "nodepools"),
    ("adze.sh", "nodeclaims"),
    ("adze.sh", "nodeoverlays"),
    ("aws.adze.sh", "ec2nodeclasses"),
    ("karpenter.sh", "nodepools"),
    ("karpenter.sh", "nodeclaims"),
    ("karpenter.k8s.aws", "ec2nodeclasses"),
    ("autoscaling.k8s.io", "verticalpodautoscalers"),
];

/// Objects read per list request; further pages follow the list's continue token.
pub const PAGE_SIZE: u32 = 500;

/// Where a snapshot's NodePools come from (`--nodepools-from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PoolSource {
    /// Adze's when the cluster serves its NodePool API, else Karpenter's (v1, then v1beta1),
    /// else inferred from the nodes.
    #[default]
    Auto,
    /// Adze's NodePools, EC2NodeClasses, NodeClaims and NodeOverlays (an error when the
    /// cluster does not serve adze.sh/v1 NodePools).
    Adze,
    /// Karpenter's (karpenter.sh v1, else v1beta1), converted by `migrate`'s rules, even
    /// when Adze's are installed too (a cluster moving from Karpenter to Adze).
    Karpenter,
    /// None: one pool inferred per instance family, capacity type and custom labels.
    Nodes,
}

/// The autoscaler objects found, by the first of Adze, Karpenter v1, Karpenter v1beta1 that
/// has a NodePool API in the cluster.
#[derive(Debug, Clone, Default)]
pub enum Autoscaler {
    /// Neither Adze's nor Karpenter's NodePool API is served.
    #[default]
    None,
    Adze {
        nodepools: Vec<Value>,
        ec2nodeclasses: Vec<Value>,
        nodeclaims: Vec<Value>,
        nodeoverlays: Vec<Value>,
    },
    Karpenter {
        /// `karpenter.sh/v1` or `karpenter.sh/v1beta1`.
        api_version: String,
        nodepools: Vec<Value>,
        ec2nodeclasses: Vec<Value>,
        nodeclaims: Vec<Value>,
    },
}

/// What was read from the cluster, each object already trimmed as its page arrived.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    /// PodDisruptionBudgets as policy/v1 JSON ([`pdb`]).
    pub pdbs: Vec<Value>,
    pub daemonsets: Vec<DaemonSet>,
    pub pvcs: Vec<PersistentVolumeClaim>,
    pub pvs: Vec<PersistentVolume>,
    pub storage_classes: Vec<StorageClass>,
    pub csinodes: Vec<CSINode>,
    /// VerticalPodAutoscalers as trimmed JSON ([`vpa`]), read only when asked for
    /// (`--vpa-predictions`).
    pub vpas: Vec<Value>,
    pub autoscaler: Autoscaler,
    /// Objects left out as they were read (terminal pods, budgets that select nothing), with why.
    pub notes: Vec<String>,
    /// Terminal (Succeeded/Failed) pods skipped.
    pub terminal_pods: usize,
}

/// The scenario a snapshot becomes, and what the conversion says about it.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The scenario's documents, in the order a person reads them (pools first, pods last).
    pub documents: Vec<Value>,
    /// What the snapshot changed or left out, for stderr and the file's header.
    pub notes: Vec<String>,
    /// `migrate`'s report when Karpenter's objects were converted.
    pub migration_report: Option<String>,
    /// One line: where the NodePools came from.
    pub source: String,
    /// Objects per kind, for the summary.
    pub counts: BTreeMap<&'static str, usize>,
}

impl Snapshot {
    /// The scenario file: a comment header (the source and the notes), then one YAML
    /// document per object.
    pub fn yaml(&self) -> String {
        let mut out = String::from(
            "# A read-only snapshot of a cluster by `adze-provisioner snapshot`; replay it with\n# `adze-provisioner simulate FILE` (pending pods) or `simulate --disruption FILE`.\n",
        );
        out += &format!("# {}\n", self.source.replace('\n', " "));
        for n in &self.notes {
            out += &format!("# note: {}\n", n.replace('\n', " "));
        }
        for d in &self.documents {
            out += "---\n";
            out += &serde_yaml::to_string(d).unwrap_or_default();
        }
        out
    }

    /// One line per kind with its count.
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        format!("snapshot: {}; {}\n", kinds.join(", "), self.source)
    }
}

/// `meta` without what no rule reads: managed fields, kubectl's last-applied copy, the
/// resource version and generation, self link.
pub fn meta(mut m: ObjectMeta) -> ObjectMeta {
    m.managed_fields = None;
    m.resource_version = None;
    m.generation = None;
    m.self_link = None;
    if let Some(a) = &mut m.annotations {
        a.remove(LAST_APPLIED);
        if a.is_empty() {
            m.annotations = None;
        }
    }
    m
}

/// Annotation domains a Node keeps (the rest, such as CSI node ids, no rule reads).
const NODE_ANNOTATION_DOMAINS: &[&str] = &["adze.sh/", "karpenter.sh/", "karpenter.k8s.aws/"];

/// A Node as the planner reads it: labels, taints, provider id, capacity, allocatable and
/// conditions; not its images, addresses, attached volumes or daemon endpoints.
pub fn node(mut n: Node) -> Node {
    n.metadata = meta(n.metadata);
    if let Some(a) = &mut n.metadata.annotations {
        a.retain(|k, _| NODE_ANNOTATION_DOMAINS.iter().any(|d| k.starts_with(d)));
        if a.is_empty() {
            n.metadata.annotations = None;
        }
    }
    if let Some(s) = n.status.take() {
        n.status = Some(NodeStatus {
            capacity: s.capacity,
            allocatable: s.allocatable,
            conditions: s.conditions.map(|c| {
                c.into_iter()
                    .map(|mut c| {
                        c.last_heartbeat_time = None;
                        c
                    })
                    .collect()
            }),
            phase: s.phase,
            ..Default::default()
        });
    }
    n
}

/// A container as placement reads it: name, requests and limits, host ports, restart policy
/// (a sidecar's `Always`); not its image, command, environment or probes.
fn container(c: Container) -> Container {
    Container {
        name: c.name,
        resources: c.resources,
        ports: c.ports,
        restart_policy: c.restart_policy,
        ..Default::default()
    }
}

/// Containers and init containers trimmed by [`container`]; the rest of the spec (node
/// selector, affinity, tolerations, spread, volumes, priority, overhead) is placement's.
fn pod_spec(mut s: PodSpec) -> PodSpec {
    s.containers = std::mem::take(&mut s.containers)
        .into_iter()
        .map(container)
        .collect();
    s.init_containers = s
        .init_containers
        .map(|c| c.into_iter().map(container).collect());
    s.ephemeral_containers = None;
    s
}

/// A pod as the planner reads it, or None for a terminal one (Succeeded or Failed), which
/// holds no room. Its status keeps the phase, conditions, start time and what an in-place
/// resize reads.
pub fn pod(mut p: Pod) -> Option<Pod> {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    p.metadata = meta(p.metadata);
    p.spec = p.spec.map(pod_spec);
    p.status = p.status.map(|s| PodStatus {
        phase: s.phase,
        conditions: s.conditions,
        start_time: s.start_time,
        nominated_node_name: s.nominated_node_name,
        // An in-place resize under way changes what the pod holds on its node.
        resize: s.resize,
        container_statuses: resize_statuses(s.container_statuses),
        init_container_statuses: resize_statuses(s.init_container_statuses),
        ..Default::default()
    });
    Some(p)
}

/// Of each container status, what an in-place resize reads: its name and its admitted and
/// applied requests. Statuses that report neither are dropped.
fn resize_statuses(list: Option<Vec<ContainerStatus>>) -> Option<Vec<ContainerStatus>> {
    let kept: Vec<_> = list?
        .into_iter()
        .filter(|c| c.resources.is_some())
        .map(|c| ContainerStatus {
            name: c.name,
            allocated_resources: c.allocated_resources,
            resources: c.resources.map(|r| ResourceRequirements {
                requests: r.requests,
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// A DaemonSet as placement reads it: its selector and pod template; not its status.
pub fn daemonset(mut d: DaemonSet) -> DaemonSet {
    d.metadata = meta(d.metadata);
    if let Some(spec) = &mut d.spec {
        spec.template.metadata = spec.template.metadata.take().map(meta);
        spec.template.spec = spec.template.spec.take().map(pod_spec);
    }
    d.status = None;
    d
}

pub fn pvc(mut c: PersistentVolumeClaim) -> PersistentVolumeClaim {
    c.metadata = meta(c.metadata);
    c
}

pub fn pv(mut v: PersistentVolume) -> PersistentVolume {
    v.metadata = meta(v.metadata);
    v
}

pub fn storage_class(mut c: StorageClass) -> StorageClass {
    c.metadata = meta(c.metadata);
    c
}

pub fn csinode(mut c: CSINode) -> CSINode {
    c.metadata = meta(c.metadata);
    c
}

/// A JSON object's metadata trimmed as [`meta`] trims a typed one.
pub fn meta_json(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["managedFields", "resourceVersion", "generation", "selfLink"] {
            m.remove(k);
        }
        if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(LAST_APPLIED);
        }
    }
}

/// An autoscaler object (NodePool, EC2NodeClass, NodeClaim, NodeOverlay) as JSON, trimmed;
/// a NodePool's status (resource counts the planner recomputes) is dropped.
pub fn autoscaler_object(mut v: Value) -> Value {
    meta_json(&mut v);
    if v["kind"] == "NodePool"
        && let Some(o) = v.as_object_mut()
    {
        o.remove("status");
    }
    v
}

/// Takes out of an autoscaler object the fields its Adze CRD does not declare, with a note
/// naming them: a live cluster's objects may come from another version of the API (a
/// Karpenter v1beta1 NodeClaim's `spec.kubelet`, a newer Adze's field), and the scenario the
/// snapshot becomes refuses unknown fields, so they are left out rather than failing it.
fn strip_unknown(v: &mut Value, notes: &mut Vec<String>) {
    let Some(kind) = v["kind"].as_str().map(str::to_string) else {
        return;
    };
    let removed = adze_api::validation::strip_unknown_fields(&kind, v);
    if removed.is_empty() {
        return;
    }
    let name = adze_api::validation::cut(v["metadata"]["name"].as_str().unwrap_or_default());
    notes.push(format!(
        "{kind} {name}: {} left out (Adze's {kind} has no such field)",
        removed
            .iter()
            .map(|(path, _)| path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
}

/// A VerticalPodAutoscaler as the scenario keeps it: metadata trimmed, `spec`, and of its
/// status only `recommendation` (conditions change nothing planned). One the disruption
/// planner cannot read is left out, with why, rather than written: the scenario would refuse
/// the whole file for it, and `run` leaves such a VPA out the same way.
pub fn vpa(mut v: Value) -> Result<Value, String> {
    crate::disruption::vpa::from_json(&v)?;
    meta_json(&mut v);
    if let Some(o) = v.as_object_mut() {
        let recommendation = o
            .get("status")
            .and_then(|s| s.get("recommendation"))
            .cloned();
        o.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "spec"));
        if let Some(r) = recommendation {
            o.insert("status".into(), json!({ "recommendation": r }));
        }
    }
    Ok(v)
}

/// A PodDisruptionBudget of policy/v1 or policy/v1beta1 as policy/v1 JSON, or why it is
/// left out. A v1beta1 budget whose selector is absent or empty selects no pod (v1 would
/// read an empty one as every pod), so it is left out rather than restated.
pub fn pdb(mut v: Value) -> Result<Value, String> {
    if !v.is_object() {
        return Err("a PodDisruptionBudget that is not an object left out".to_string());
    }
    meta_json(&mut v);
    let name = format!(
        "{}/{}",
        v["metadata"]["namespace"].as_str().unwrap_or_default(),
        v["metadata"]["name"].as_str().unwrap_or_default()
    );
    match v["apiVersion"].as_str() {
        Some("policy/v1") => Ok(v),
        Some("policy/v1beta1") => {
            let selector = &v["spec"]["selector"];
            let empty = selector.is_null()
                || selector.as_object().is_some_and(|s| {
                    s.values().all(|x| {
                        x.is_null()
                            || x.as_array().is_some_and(Vec::is_empty)
                            || x.as_object().is_some_and(|o| o.is_empty())
                    })
                });
            if empty {
                return Err(format!(
                    "PodDisruptionBudget {name} (policy/v1beta1) left out: its selector is empty, which selects no pod in v1beta1"
                ));
            }
            v["apiVersion"] = json!("policy/v1");
            Ok(v)
        }
        other => Err(format!(
            "PodDisruptionBudget {name} left out: apiVersion {other:?} is not policy/v1 or policy/v1beta1"
        )),
    }
}

/// Karpenter's domains whose keys may have an Adze name.
fn adze_key(key: &str) -> Option<&'static str> {
    labels::adze_key_for_karpenter(key)
}

/// The Node with Adze's label beside every Karpenter label that has an Adze name
/// (`karpenter.sh/nodepool` → `adze.sh/nodepool`, ...) and beside EKS's capacity-type label;
/// an Adze label already there is kept. Returns how many labels were added.
pub fn add_adze_labels(n: &mut Node) -> usize {
    let Some(l) = n.metadata.labels.as_mut() else {
        return 0;
    };
    let mut add: Vec<(String, String)> = l
        .iter()
        .filter_map(|(k, v)| Some((adze_key(k)?.to_string(), v.clone())))
        .collect();
    if let Some(ct) = l.get(EKS_CAPACITY_TYPE).and_then(|v| eks_capacity_type(v)) {
        add.push((labels::CAPACITY_TYPE.to_string(), ct.to_string()));
    }
    let mut added = 0;
    for (k, v) in add {
        if let std::collections::btree_map::Entry::Vacant(e) = l.entry(k) {
            e.insert(v);
            added += 1;
        }
    }
    added
}

/// EKS managed node groups' capacity-type label (`ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`).
const EKS_CAPACITY_TYPE: &str = "eks.amazonaws.com/capacityType";

fn eks_capacity_type(v: &str) -> Option<&'static str> {
    match v {
        "ON_DEMAND" => Some(labels::CAPACITY_TYPE_ON_DEMAND),
        "SPOT" => Some(labels::CAPACITY_TYPE_SPOT),
        "CAPACITY_BLOCK" => Some(labels::CAPACITY_TYPE_RESERVED),
        _ => None,
    }
}

/// A Karpenter NodeClaim (`karpenter.sh/v1` or `v1beta1`) restated as Adze's: its API
/// group, label and requirement keys with Adze names, its node class reference in Adze's
/// group. The caller parses it as Adze's type; one that does not parse is left out (the
/// planner then makes the claim `run` would have made for its Node).
pub fn karpenter_nodeclaim(mut v: Value) -> Value {
    if !v.is_object() {
        return v;
    }
    meta_json(&mut v);
    v["apiVersion"] = json!("adze.sh/v1");
    if let Some(l) = v["metadata"]["labels"].as_object_mut() {
        let add: Vec<(String, Value)> = l
            .iter()
            .filter_map(|(k, val)| Some((adze_key(k)?.to_string(), val.clone())))
            .collect();
        for (k, val) in add {
            l.entry(k).or_insert(val);
        }
    }
    let spec = &mut v["spec"];
    if let Some(reqs) = spec["requirements"].as_array_mut() {
        for r in reqs {
            if let Some(k) = r["key"].as_str().and_then(adze_key) {
                r["key"] = json!(k);
            }
        }
    }
    if let Some(r) = spec["nodeClassRef"].as_object_mut() {
        // v1 names the group; v1beta1 an apiVersion.
        r.remove("apiVersion");
        r.insert("group".into(), json!("aws.adze.sh"));
        r.entry("kind").or_insert(json!("EC2NodeClass"));
    }
    v
}

/// Label prefixes that describe the machine or the platform, not a group of nodes a person
/// made: left out of an inferred pool's identity.
const SYSTEM_LABEL_PREFIXES: &[&str] = &[
    "kubernetes.io/",
    "k8s.io/",
    "beta.kubernetes.io/",
    "node.kubernetes.io/",
    "topology.kubernetes.io/",
    "failure-domain.beta.kubernetes.io/",
    "node-role.kubernetes.io/",
    "eks.amazonaws.com/",
    "topology.k8s.aws/",
    "topology.ebs.csi.aws.com/",
    "k8s.amazonaws.com/",
    "karpenter.sh/",
    "karpenter.k8s.aws/",
    "adze.sh/",
    "aws.adze.sh/",
];

fn is_system_label(key: &str) -> bool {
    SYSTEM_LABEL_PREFIXES.iter().any(|p| key.starts_with(p))
        || key.contains(".kubernetes.io/")
        || key.contains(".k8s.io/")
}

/// The instance family of an EC2 type name: `m5` of `m5.large`.
fn family(instance_type: &str) -> &str {
    instance_type.split('.').next().unwrap_or(instance_type)
}

/// What identifies an inferred pool: family, capacity type, the node's custom labels.
type PoolKey = (String, String, BTreeMap<String, String>);

/// One NodePool per (instance family, capacity type, custom labels) of `nodes`, for a
/// cluster with no autoscaler objects: each pool requires its family and capacity type,
/// gives new nodes its labels, expires no node (`expireAfter: Never`, as node groups do not),
/// and references an EC2NodeClass `inferred` (absent, so
/// placement assumes a subnet in every zone and an image for every type). Every node so
/// described is labelled with its pool (`adze.sh/nodepool`) and capacity type; nodes
/// without an instance-type label stay out of every pool. Returns the pools and one note per
/// pool and per node left out.
pub fn infer_pools(nodes: &mut [Node]) -> (Vec<Value>, Vec<String>) {
    let mut groups: BTreeMap<PoolKey, Vec<usize>> = BTreeMap::new();
    let mut notes = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let l = n.metadata.labels.clone().unwrap_or_default();
        let name = n.metadata.name.as_deref().unwrap_or_default();
        let Some(it) = l
            .get(labels::INSTANCE_TYPE)
            .or_else(|| l.get("beta.kubernetes.io/instance-type"))
        else {
            notes.push(format!(
                "Node {name}: no {} label, so no pool was inferred for it; it is planned as capacity Adze does not manage",
                labels::INSTANCE_TYPE
            ));
            continue;
        };
        let ct = l
            .get(labels::CAPACITY_TYPE)
            .map(String::as_str)
            .or_else(|| l.get("karpenter.sh/capacity-type").map(String::as_str))
            .or_else(|| l.get(EKS_CAPACITY_TYPE).and_then(|v| eks_capacity_type(v)))
            .unwrap_or(labels::CAPACITY_TYPE_ON_DEMAND);
        let custom: BTreeMap<String, String> = l
            .iter()
            .filter(|(k, _)| !is_system_label(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        groups
            .entry((family(it).to_string(), ct.to_string(), custom))
            .or_default()
            .push(i);
    }
    // Pools of the same family and capacity type but other labels are told apart by a number.
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut pools = Vec::new();
    for ((fam, ct, custom), members) in groups {
        let n = seen.entry((fam.clone(), ct.clone())).or_insert(0);
        *n += 1;
        let name = if *n == 1 {
            format!("inferred-{fam}-{ct}")
        } else {
            format!("inferred-{fam}-{ct}-{n}")
        };
        for &i in &members {
            let l = nodes[i].metadata.labels.get_or_insert_with(BTreeMap::new);
            l.insert(labels::NODEPOOL.to_string(), name.clone());
            l.insert(labels::CAPACITY_TYPE.to_string(), ct.clone());
        }
        let names: BTreeSet<&str> = members
            .iter()
            .filter_map(|&i| nodes[i].metadata.name.as_deref())
            .collect();
        notes.push(format!(
            "NodePool {name} inferred (no Adze or Karpenter NodePools in the cluster): instance family {fam}, capacity type {ct}{}, from {} node(s): {}",
            if custom.is_empty() {
                String::new()
            } else {
                format!(
                    ", labels {}",
                    custom
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            },
            names.len(),
            names.into_iter().take(5).collect::<Vec<_>>().join(", ")
                + if members.len() > 5 { ", ..." } else { "" }
        ));
        pools.push(json!({
            "apiVersion": "adze.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name, "annotations": {"adze.sh/inferred-from": "node labels"}},
            "spec": {"template": {
                "metadata": {"labels": custom},
                "spec": {
                    "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "inferred"},
                    // Node groups do not expire nodes: with Adze's default (720h) every node
                    // older than 30 days would be planned away by expiry, hiding the rest.
                    "expireAfter": "Never",
                    "requirements": [
                        {"key": labels::INSTANCE_FAMILY, "operator": "In", "values": [fam]},
                        {"key": labels::CAPACITY_TYPE, "operator": "In", "values": [ct]},
                    ],
                },
            }},
        }));
    }
    (pools, notes)
}

/// The scenario of what was read: pools by [`Autoscaler`], then nodes, claims, workloads and
/// pods. Pods bound to a node not in the snapshot (created between the two lists) and
/// CSINodes of such nodes are left out with a note, as a scenario refuses them.
pub fn assemble(mut c: Collected) -> Snapshot {
    let mut s = Snapshot {
        notes: std::mem::take(&mut c.notes),
        ..Default::default()
    };
    let mut docs: Vec<Value> = Vec::new();
    let mut claims: Vec<Value> = Vec::new();
    fn count(s: &mut Snapshot, kind: &'static str, n: usize) {
        if n > 0 {
            *s.counts.entry(kind).or_default() += n;
        }
    }
    match std::mem::take(&mut c.autoscaler) {
        Autoscaler::Adze {
            nodepools,
            ec2nodeclasses,
            nodeclaims,
            nodeoverlays,
        } => {
            s.source = format!(
                "NodePools: Adze's own ({} NodePool(s), {} EC2NodeClass(es), {} NodeOverlay(s))",
                nodepools.len(),
                ec2nodeclasses.len(),
                nodeoverlays.len()
            );
            count(&mut s, "NodePools", nodepools.len());
            count(&mut s, "EC2NodeClasses", ec2nodeclasses.len());
            count(&mut s, "NodeOverlays", nodeoverlays.len());
            for mut v in nodepools
                .into_iter()
                .chain(ec2nodeclasses)
                .chain(nodeoverlays)
            {
                strip_unknown(&mut v, &mut s.notes);
                docs.push(v);
            }
            claims = nodeclaims;
        }
        Autoscaler::Karpenter {
            api_version,
            nodepools,
            ec2nodeclasses,
            nodeclaims,
        } => {
            let input = serde_json::to_string(
                &nodepools
                    .iter()
                    .chain(&ec2nodeclasses)
                    .collect::<Vec<&Value>>(),
            )
            .unwrap_or_default();
            match crate::migrate::migrate(&input) {
                Ok(m) => {
                    s.migration_report = Some(m.report());
                    let pools = m.objects.iter().filter(|o| o["kind"] == "NodePool").count();
                    count(&mut s, "NodePools", pools);
                    count(&mut s, "EC2NodeClasses", m.objects.len() - pools);
                    s.source = format!(
                        "NodePools: Karpenter's {api_version} ({} NodePool(s), {} EC2NodeClass(es)) converted by migrate's rules; {} converted, {} not converted, {} item(s) need action",
                        nodepools.len(),
                        ec2nodeclasses.len(),
                        m.objects.len(),
                        m.not_converted.len(),
                        m.actions()
                    );
                    docs.extend(m.objects);
                }
                Err(e) => {
                    s.source = format!(
                        "NodePools: Karpenter's {api_version}, not converted ({e}); the nodes are planned as capacity Adze does not manage"
                    );
                }
            }
            claims = nodeclaims.into_iter().map(karpenter_nodeclaim).collect();
            let added: usize = c.nodes.iter_mut().map(add_adze_labels).sum();
            if added > 0 {
                s.notes.push(format!(
                    "{added} Adze label(s) added to Nodes beside the Karpenter labels they restate (karpenter.sh/nodepool as adze.sh/nodepool, ...)"
                ));
            }
        }
        Autoscaler::None => {
            for n in &mut c.nodes {
                add_adze_labels(n);
            }
            let (pools, notes) = infer_pools(&mut c.nodes);
            s.source = format!(
                "NodePools: none in the cluster (no adze.sh or karpenter.sh NodePool API): {} inferred from the nodes' instance-type and capacity-type labels, one per (instance family, capacity type, custom labels); their limits, disruption settings and node classes are Adze's defaults (expireAfter Never), not the cluster's",
                pools.len()
            );
            count(&mut s, "NodePools (inferred)", pools.len());
            s.notes.extend(notes);
            docs.extend(pools);
        }
    }
    let node_names: BTreeSet<String> = c
        .nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    count(&mut s, "Nodes", c.nodes.len());
    docs.extend(c.nodes.into_iter().map(|n| to_doc(n, "v1", "Node")));
    let mut kept_claims = 0;
    for mut v in claims {
        strip_unknown(&mut v, &mut s.notes);
        let name = v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match serde_json::from_value::<adze_api::NodeClaim>(v.clone()) {
            Ok(_) => {
                kept_claims += 1;
                docs.push(v);
            }
            Err(e) => s.notes.push(format!(
                "NodeClaim {name} left out ({e}); its Node gets the claim `run` would have made"
            )),
        }
    }
    count(&mut s, "NodeClaims", kept_claims);
    count(&mut s, "DaemonSets", c.daemonsets.len());
    docs.extend(
        c.daemonsets
            .into_iter()
            .map(|d| to_doc(d, "apps/v1", "DaemonSet")),
    );
    count(&mut s, "StorageClasses", c.storage_classes.len());
    docs.extend(
        c.storage_classes
            .into_iter()
            .map(|x| to_doc(x, "storage.k8s.io/v1", "StorageClass")),
    );
    count(&mut s, "PersistentVolumes", c.pvs.len());
    docs.extend(
        c.pvs
            .into_iter()
            .map(|x| to_doc(x, "v1", "PersistentVolume")),
    );
    count(&mut s, "PersistentVolumeClaims", c.pvcs.len());
    docs.extend(
        c.pvcs
            .into_iter()
            .map(|x| to_doc(x, "v1", "PersistentVolumeClaim")),
    );
    let mut csinodes = 0;
    for x in c.csinodes {
        if x.metadata
            .name
            .as_ref()
            .is_some_and(|n| node_names.contains(n))
        {
            csinodes += 1;
            docs.push(to_doc(x, "storage.k8s.io/v1", "CSINode"));
        }
    }
    count(&mut s, "CSINodes", csinodes);
    count(&mut s, "PodDisruptionBudgets", c.pdbs.len());
    docs.extend(c.pdbs);
    count(&mut s, "VerticalPodAutoscalers", c.vpas.len());
    docs.extend(c.vpas);
    let (mut pending, mut bound, mut orphans) = (0, 0, 0);
    for p in c.pods {
        match p.spec.as_ref().and_then(|s| s.node_name.as_ref()) {
            Some(n) if !node_names.contains(n) => {
                orphans += 1;
                continue;
            }
            Some(_) => bound += 1,
            None => pending += 1,
        }
        docs.push(to_doc(p, "v1", "Pod"));
    }
    if orphans > 0 {
        s.notes.push(format!(
            "{orphans} pod(s) left out: bound to a node not in the snapshot (created or deleted between the lists)"
        ));
    }
    if c.terminal_pods > 0 {
        s.notes.push(format!(
            "{} terminal pod(s) (Succeeded or Failed) left out: they hold no room",
            c.terminal_pods
        ));
    }
    count(&mut s, "pending Pods", pending);
    count(&mut s, "bound Pods", bound);
    s.documents = docs;
    s
}

/// A typed object as a scenario document, with the apiVersion and kind a list's items lack.
fn to_doc<T: serde::Serialize>(x: T, api_version: &str, kind: &str) -> Value {
    let mut v = serde_json::to_value(x).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!(api_version));
        o.insert("kind".into(), json!(kind));
    }
    v
}

#[cfg(test)]
mod tests;
