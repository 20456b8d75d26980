//! A scenario file: one multi-document YAML of ordinary Kubernetes and Adze objects, read
//! into the scheduling core's [`Snapshot`].
//!
//! What each kind contributes:
//!
//! * **NodePool** (`adze.sh/v1`): validated like the apiserver would, then converted with
//!   the scenario's instance types.
//! * **EC2NodeClass** (`aws.adze.sh/v1`): validated, then shapes its pools' instance types
//!   by the rule `run` uses ([`adze_scheduling::node_class::instance_types`]): kubelet
//!   settings (`maxPods`, `podsPerCore`, reserved resources, eviction thresholds) in each
//!   type's pods and allocatable, the root volume's size or `instanceStorePolicy: RAID0` in
//!   its ephemeral storage, a Windows family's types as Windows nodes of that build (Windows
//!   prices and pod density; types with no Windows price are not offered), and the zones,
//!   images and capacity reservations of its `status` when the scenario gives one. Without a
//!   status (a class not resolved by a cluster) every zone of the catalog counts as having a
//!   subnet and every type as having an image.
//! * **Node**: existing capacity.
//! * **Pod**: with `spec.nodeName`, bound to that node (which must be in the scenario);
//!   otherwise pending. Pods owned by a DaemonSet are never pending, and `Succeeded` or
//!   `Failed` pods take no room and are left out.
//! * **Deployment**, **ReplicaSet**: `spec.replicas` (default 1) pending pods named
//!   `<name>-<i>`, from `i = 0`, with the template's labels. They are added whatever pods of
//!   theirs the scenario already lists.
//! * **DaemonSet**: overhead on every new node it would run on, and one bound pod on every
//!   existing node whose taints it tolerates and whose labels its node selector matches
//!   (unless the scenario lists that daemon's pod on the node already).
//! * **PodDisruptionBudget** (`policy/v1`): read and counted; placement does not use it, the
//!   disruption planner does ([`super::disruption`]).
//! * **NodeClaim** (`adze.sh/v1`): read for the disruption planner, which links each to its
//!   Node as `run` does (by `status.providerID`); placement does not use it.
//! * **PersistentVolumeClaim**, **PersistentVolume**, **StorageClass**
//!   (`storage.k8s.io/v1`): the volumes pods name, read by the rules `run` uses
//!   ([`adze_api::convert::with_volumes`]): a pending pod's claims tie it to their volumes'
//!   zones (a bound PV's node affinity, an unbound claim's class `allowedTopologies`), and a
//!   pending pod whose volumes cannot be placed (claim, volume or class missing, an unbound
//!   claim of an immediate class or of none, zones its own affinity rules out) is left out
//!   with the reason, listed among the plan's unschedulable pods ([`Scenario::unschedulable`]).
//!   Each claim also resolves to the CSI driver that attaches it, for the attach limits.
//! * **CSINode** (`storage.k8s.io/v1`): the attach limits of the Node of the same name (which
//!   must be in the scenario): per driver, `spec.drivers[].allocatable.count` volumes. Claims
//!   of the node's pods count once each; a pod whose new claims would pass a driver's count
//!   goes elsewhere. New capacity has no CSINode yet and no limits.
//! * **InstanceCatalog** (`adze.sh/v1alpha1`): replaces the embedded EC2 catalog. Several
//!   are concatenated. Without one, the embedded catalog of the region the scenario is
//!   planned in ([`Scenario::parse_in`], `simulate --region`; us-east-1 by default) is used,
//!   and a NodePool pinned (`In`) only to zones or a region of another known region is
//!   refused naming that region, rather than left to plan nothing.
//! * **NodeOverlay** (`adze.sh/v1alpha1`): validated, then applied to every NodePool's
//!   instance types by the rule `run` uses ([`crate::rules::apply_overlays`]); an overlay that
//!   conflicts with another is left out and reported in [`Scenario::overlays`].
//!
//! * **VerticalPodAutoscaler** (`autoscaling.k8s.io/v1`): read (the fields the rule uses,
//!   refused at their path when wrong) for the disruption planner with `--vpa-predictions`,
//!   which plans the pods it moves with their recommendation ([`adze_scheduling::vpa`]);
//!   `simulate` refuses a scenario holding one without that flag.
//! * **CapacityBuffer** (`autoscaling.x-k8s.io/v1alpha1`) and **PodTemplate** (`v1`): each
//!   buffer's placeholder pods, by the rule `run` uses ([`crate::rules::buffer_pods`]), are
//!   pending after every real pod (lowest priority), named `<buffer>-buffer-<i>` and listed
//!   in [`Scenario::buffer_pods`]; a `scalableRef` may name a Deployment or ReplicaSet of the
//!   scenario. A buffer the rule refuses is a [`ScenarioError`] at its field.
//!
//! Empty documents are skipped. Anything else — an unknown kind, a document that does not
//! parse, an invalid object, a duplicate name, a pod bound to a missing node — is a
//! [`ScenarioError`] naming the document (counted from 1, empty ones included).
//!
//! A scenario is user input, possibly hostile, so it is bounded: the YAML budgets of
//! [`super::yaml`] (input size, documents, depth, aliases), at most [`MAX_REPLICAS`] replicas
//! per workload, [`MAX_PENDING_PODS`] pending pods and [`MAX_BOUND_PODS`] pods on existing
//! nodes. Past a limit the scenario is refused with a message, never an allocation failure.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::sync::Arc;

use adze_api::convert::{self, ConvertError};
use adze_api::{EC2NodeClass, NodeOverlay, NodePool, ValidationError};
use adze_scheduling::catalog::{self, CatalogEntry};
use adze_scheduling::node_class::NodeClassFacts;
use adze_scheduling::plan::Unschedulable;
use adze_scheduling::{
    BoundPod, InstanceType, Offering, Pod, Requirements, Snapshot, labels, quantity,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

use super::yaml::{self, YamlError};

/// The API of SIG Autoscaling's CapacityBuffer.
const CAPACITY_BUFFER_API: &str = "autoscaling.x-k8s.io/v1alpha1";

/// Most replicas one Deployment or ReplicaSet may ask for in a scenario.
pub const MAX_REPLICAS: i32 = 100_000;
/// Most pending pods a scenario may hold in all (listed pods and workload replicas).
pub const MAX_PENDING_PODS: usize = 500_000;
/// Most pods on existing nodes, DaemonSet pods the scenario implies included.
pub const MAX_BOUND_PODS: usize = 1_000_000;
/// Most (DaemonSet, Node) pairs checked for DaemonSet pods on existing nodes: the check is
/// quadratic, so a few thousand of each would cost minutes.
pub const MAX_DAEMONSET_NODE_PAIRS: usize = 5_000_000;

/// The scenario's objects as placement sees them, plus what was read, for the summary.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub snapshot: Snapshot,
    pub counts: Counts,
    /// Instance types offered to every NodePool.
    pub instance_types: Vec<Arc<InstanceType>>,
    /// True when an InstanceCatalog replaced the embedded catalog.
    pub custom_catalog: bool,
    /// The region whose embedded catalog was used (when not [`Scenario::custom_catalog`]).
    pub region: String,
    /// What became of each NodeOverlay, by name.
    pub overlays: BTreeMap<String, crate::rules::OverlayVerdict>,
    /// Pending pods left out before placement because their volumes cannot be placed, with
    /// the reason; [`super::run`] lists them among the plan's unschedulable pods.
    pub unschedulable: Vec<Unschedulable>,
    /// Keys ("namespace/name") of the pending pods that are CapacityBuffer placeholders.
    pub buffer_pods: BTreeSet<String>,
    /// The objects as the scenario lists them, for the disruption planner
    /// ([`super::disruption`]), which builds its input from them by `run`'s own rule.
    pub objects: ClusterObjects,
    /// Pending pods' (by key) selectors for kube-scheduler's default topology spread, derived
    /// from the Deployment or ReplicaSet that makes them ([`super::with_default_spread`]).
    pub owner_selectors: BTreeMap<String, adze_scheduling::pod::PodSelector>,
}

/// A scenario's objects as `run` would watch them: what the disruption planner builds its
/// input from. Workload replicas (Deployments, ReplicaSets) are not Pods here: placement
/// plans them; the planner sees the Pods the scenario lists.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    pub nodes: Vec<core::Node>,
    pub pods: Vec<core::Pod>,
    pub nodeclaims: Vec<adze_api::NodeClaim>,
    pub nodepools: Vec<NodePool>,
    pub ec2nodeclasses: Vec<EC2NodeClass>,
    pub nodeoverlays: Vec<NodeOverlay>,
    pub daemonsets: Vec<DaemonSet>,
    pub pvcs: Vec<core::PersistentVolumeClaim>,
    pub pvs: Vec<core::PersistentVolume>,
    pub storage_classes: Vec<StorageClass>,
    pub csinodes: Vec<CSINode>,
    /// PodDisruptionBudgets as JSON (the planner reads them as `run` does).
    pub pdbs: Vec<Value>,
    /// VerticalPodAutoscalers, read only with `--vpa-predictions` (refused without it).
    pub vpas: Vec<adze_scheduling::vpa::Vpa>,
}

/// How many objects of each kind a scenario held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub nodepools: usize,
    pub ec2nodeclasses: usize,
    pub nodeoverlays: usize,
    pub nodes: usize,
    pub pending_pods: usize,
    /// Pods on existing nodes, DaemonSet pods included.
    pub bound_pods: usize,
    pub deployments: usize,
    pub replicasets: usize,
    pub daemonsets: usize,
    pub pod_disruption_budgets: usize,
    pub nodeclaims: usize,
    pub persistent_volume_claims: usize,
    pub persistent_volumes: usize,
    pub storage_classes: usize,
    pub csinodes: usize,
    pub capacity_buffers: usize,
    pub pod_templates: usize,
    pub vertical_pod_autoscalers: usize,
}

/// The document a problem is in: its position in the file (from 1; 0 for the input as a
/// whole) and, when it got that far, its kind and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRef {
    pub index: usize,
    pub object: Option<String>,
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            _ if self.index == 0 => write!(f, "the scenario"),
            Some(o) => write!(f, "document {} ({o})", self.index),
            None => write!(f, "document {}", self.index),
        }
    }
}

/// What is wrong with a scenario, and in which document.
#[derive(Debug, Error)]
#[error("{doc}: {problem}")]
pub struct ScenarioError {
    pub doc: DocRef,
    pub problem: Box<Problem>,
}

#[derive(Debug, Error)]
pub enum Problem {
    /// Not YAML, or past one of the reading budgets.
    #[error("{0}")]
    Yaml(YamlError),
    #[error(
        "kind {kind:?} with apiVersion {api_version:?} is not something a scenario can hold (expected NodePool, EC2NodeClass, NodeOverlay, Node, Pod, Deployment, ReplicaSet, DaemonSet, PodDisruptionBudget, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, InstanceCatalog, CapacityBuffer, PodTemplate or VerticalPodAutoscaler)"
    )]
    UnknownKind { kind: String, api_version: String },
    /// A kind the scenario knows, under another API group or version.
    #[error("{kind} must have apiVersion {expected}, got {got:?}")]
    ApiVersion {
        kind: String,
        expected: &'static str,
        got: String,
    },
    /// The document has a known kind but not its shape.
    #[error("malformed: {0}")]
    Malformed(String),
    /// A NodePool, EC2NodeClass or NodeOverlay that fails validation; lists every field at
    /// fault.
    #[error("{0}")]
    Invalid(ValidationError),
    #[error("{0}")]
    Convert(ConvertError),
    /// A field of a scenario-only object (InstanceCatalog, a workload's replicas) is out of
    /// range.
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    #[error("{what} is defined twice (first in document {first})")]
    Duplicate { what: String, first: usize },
    #[error("spec.nodeName: node {0:?} is not in the scenario")]
    UnknownNode(String),
    /// The scenario as a whole is past one of the size limits.
    #[error("too large: {0}")]
    Limit(String),
}

impl ScenarioError {
    fn new(doc: &DocRef, problem: Problem) -> ScenarioError {
        ScenarioError {
            doc: doc.clone(),
            problem: Box::new(problem),
        }
    }
}

/// One document, typed.
enum Object {
    NodePool(Box<NodePool>),
    EC2NodeClass(Box<EC2NodeClass>),
    NodeOverlay(Box<NodeOverlay>),
    Node(Box<core::Node>),
    Pod(Box<core::Pod>),
    Deployment(Box<Deployment>),
    ReplicaSet(Box<ReplicaSet>),
    DaemonSet(Box<DaemonSet>),
    PodDisruptionBudget(Box<Value>),
    NodeClaim(Box<adze_api::NodeClaim>),
    PersistentVolumeClaim(Box<core::PersistentVolumeClaim>),
    PersistentVolume(Box<core::PersistentVolume>),
    StorageClass(Box<StorageClass>),
    CSINode(Box<CSINode>),
    InstanceCatalog(InstanceCatalog),
    CapacityBuffer(Box<adze_api::CapacityBuffer>),
    PodTemplate(Box<core::PodTemplate>),
    VerticalPodAutoscaler(Box<adze_scheduling::vpa::Vpa>),
}

/// `apiVersion: adze.sh/v1alpha1, kind: InstanceCatalog`: instance types to use instead of
/// the embedded EC2 catalog.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InstanceCatalog {
    #[serde(rename = "apiVersion")]
    _api_version: String,
    #[serde(rename = "kind")]
    _kind: String,
    #[serde(default, rename = "metadata")]
    _metadata: Option<Value>,
    instance_types: Vec<CatalogType>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CatalogType {
    name: String,
    cpu: QuantityValue,
    memory: QuantityValue,
    pods: i64,
    arch: String,
    #[serde(default)]
    gpus: i64,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    offerings: Vec<CatalogOffering>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CatalogOffering {
    zone: String,
    /// The zone's AWS ID (`use1-az1`), labelled `topology.k8s.aws/zone-id` when given.
    #[serde(default)]
    zone_id: Option<String>,
    capacity_type: String,
    price: f64,
    #[serde(default = "yes")]
    available: bool,
}

fn yes() -> bool {
    true
}

/// A quantity as YAML may write it: `4`, `0.5` or `"16Gi"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum QuantityValue {
    Int(i64),
    Float(f64),
    Str(String),
}

impl QuantityValue {
    fn text(&self) -> String {
        match self {
            QuantityValue::Int(i) => i.to_string(),
            QuantityValue::Float(f) => f.to_string(),
            QuantityValue::Str(s) => s.clone(),
        }
    }
}

const ADZE_V1: &str = "adze.sh/v1";
const ADZE_V1ALPHA1: &str = "adze.sh/v1alpha1";
const AWS_ADZE_V1: &str = "aws.adze.sh/v1";

fn describe(value: &Value) -> Option<String> {
    let kind = value.get("kind")?.as_str()?;
    let meta = value.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("<unnamed>");
    // Cut: a hostile 10,000-character name is not echoed back in full.
    let cut = adze_api::validation::cut;
    let (kind, name) = (cut(kind), cut(name));
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(|n| n.as_str())
    {
        Some(ns) => Some(format!("{kind} {}/{name}", cut(ns))),
        None => Some(format!("{kind} {name}")),
    }
}

/// Reads a document as `T`. A value of the wrong shape or an unknown enum value (an operator,
/// a taint effect, a quantity given as a map) is reported at its field path, as the
/// conversion of a Node or a toleration reports its own.
fn typed<T: DeserializeOwned>(doc: &DocRef, value: Value) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(value).map_err(|e| malformed(doc, e))
}

/// A serde error at its field path.
fn malformed(doc: &DocRef, e: serde_path_to_error::Error<serde_json::Error>) -> ScenarioError {
    let path = e.path().to_string();
    let message = if path.is_empty() || path == "." {
        e.inner().to_string()
    } else {
        format!("{path}: {}", e.inner())
    };
    ScenarioError::new(doc, Problem::Malformed(message))
}

/// Reads one of Adze's CRD kinds as `T`, first refusing every field its CRD schema does not
/// declare (at its path), as a cluster with strict field validation would: serde alone would
/// drop a misspelt `requirments` without a word.
fn crd_typed<T: DeserializeOwned>(
    doc: &DocRef,
    kind: &'static str,
    value: Value,
) -> Result<T, ScenarioError> {
    adze_api::validation::check_unknown_fields(kind, &value)
        .map_err(|e| ScenarioError::new(doc, Problem::Invalid(e)))?;
    typed(doc, value)
}

/// Reads one of Kubernetes' own kinds as `T`, refusing every field the typed reading would
/// drop (at its path): k8s-openapi's types ignore unknown keys, so a misspelt `nodeSelecter`
/// or `metadata.lables` would otherwise vanish and the pod be planned without it. Writing
/// the typed value back and comparing keys finds exactly the fields it does not carry.
fn core_typed<T: DeserializeOwned + serde::Serialize>(
    doc: &DocRef,
    kind: &'static str,
    value: Value,
) -> Result<T, ScenarioError> {
    let typed_value: T = serde_path_to_error::deserialize(&value).map_err(|e| malformed(doc, e))?;
    let kept = serde_json::to_value(&typed_value)
        .map_err(|e| ScenarioError::new(doc, Problem::Malformed(e.to_string())))?;
    let errors = adze_api::validation::dropped_fields(&value, &kept);
    if !errors.is_empty() {
        let name = value
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(ScenarioError::new(
            doc,
            Problem::Invalid(adze_api::validation::ValidationError {
                kind,
                name: adze_api::validation::cut(name),
                errors,
            }),
        ));
    }
    Ok(typed_value)
}

fn read_object(doc: &DocRef, value: Value) -> Result<Object, ScenarioError> {
    let text = |k: &str| {
        value
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (kind, api_version) = (text("kind"), text("apiVersion"));
    if kind.is_empty() {
        return Err(ScenarioError::new(
            doc,
            Problem::Malformed("no kind".to_string()),
        ));
    }
    let unknown = || {
        ScenarioError::new(
            doc,
            Problem::UnknownKind {
                kind: kind.clone(),
                api_version: api_version.clone(),
            },
        )
    };
    // Core kinds check their own apiVersion when deserialising; ours are checked here.
    Ok(match kind.as_str() {
        "NodePool" if api_version == ADZE_V1 => {
            Object::NodePool(crd_typed(doc, "NodePool", value)?)
        }
        "EC2NodeClass" if api_version == AWS_ADZE_V1 => {
            Object::EC2NodeClass(crd_typed(doc, "EC2NodeClass", value)?)
        }
        "InstanceCatalog" if api_version == ADZE_V1ALPHA1 => {
            // Its own fields are checked by serde (deny_unknown_fields); its metadata here.
            adze_api::validation::check_unknown_fields("InstanceCatalog", &value)
                .map_err(|e| ScenarioError::new(doc, Problem::Invalid(e)))?;
            Object::InstanceCatalog(typed(doc, value)?)
        }
        "NodeOverlay" if api_version == ADZE_V1ALPHA1 => {
            Object::NodeOverlay(crd_typed(doc, "NodeOverlay", value)?)
        }
        "NodePool" | "EC2NodeClass" | "InstanceCatalog" | "NodeOverlay" => {
            let expected = match kind.as_str() {
                "NodePool" => ADZE_V1,
                "EC2NodeClass" => AWS_ADZE_V1,
                _ => ADZE_V1ALPHA1,
            };
            return Err(ScenarioError::new(
                doc,
                Problem::ApiVersion {
                    kind,
                    expected,
                    got: api_version,
                },
            ));
        }
        "Node" => Object::Node(core_typed(doc, "Node", value)?),
        "Pod" => Object::Pod(core_typed(doc, "Pod", value)?),
        "Deployment" => Object::Deployment(core_typed(doc, "Deployment", value)?),
        "ReplicaSet" => Object::ReplicaSet(core_typed(doc, "ReplicaSet", value)?),
        "DaemonSet" => Object::DaemonSet(core_typed(doc, "DaemonSet", value)?),
        "PodDisruptionBudget" => {
            core_typed::<PodDisruptionBudget>(doc, "PodDisruptionBudget", value.clone())?;
            Object::PodDisruptionBudget(Box::new(value))
        }
        "NodeClaim" if api_version == ADZE_V1 => {
            Object::NodeClaim(crd_typed(doc, "NodeClaim", value)?)
        }
        "NodeClaim" => {
            return Err(ScenarioError::new(
                doc,
                Problem::ApiVersion {
                    kind,
                    expected: ADZE_V1,
                    got: api_version,
                },
            ));
        }
        "PersistentVolumeClaim" => {
            Object::PersistentVolumeClaim(core_typed(doc, "PersistentVolumeClaim", value)?)
        }
        "PersistentVolume" => Object::PersistentVolume(core_typed(doc, "PersistentVolume", value)?),
        "StorageClass" => Object::StorageClass(core_typed(doc, "StorageClass", value)?),
        "CSINode" => Object::CSINode(core_typed(doc, "CSINode", value)?),
        "PodTemplate" => Object::PodTemplate(core_typed(doc, "PodTemplate", value)?),
        "CapacityBuffer" if api_version == CAPACITY_BUFFER_API => {
            Object::CapacityBuffer(crd_typed(doc, "CapacityBuffer", value)?)
        }
        "CapacityBuffer" => {
            return Err(ScenarioError::new(
                doc,
                Problem::ApiVersion {
                    kind,
                    expected: CAPACITY_BUFFER_API,
                    got: api_version,
                },
            ));
        }
        "VerticalPodAutoscaler" if api_version == crate::disruption::vpa::API_VERSION => {
            Object::VerticalPodAutoscaler(Box::new(
                crate::disruption::vpa::read(&value)
                    .map_err(|e| ScenarioError::new(doc, Problem::Malformed(e)))?,
            ))
        }
        "VerticalPodAutoscaler" => {
            return Err(ScenarioError::new(
                doc,
                Problem::ApiVersion {
                    kind,
                    expected: crate::disruption::vpa::API_VERSION,
                    got: api_version,
                },
            ));
        }
        _ => return Err(unknown()),
    })
}

/// Splits the file into typed documents, skipping empty ones.
fn read_documents(yaml: &str) -> Result<Vec<(DocRef, Object)>, ScenarioError> {
    let mut out = Vec::new();
    let mut nodepools = 0usize;
    let whole = DocRef {
        index: 0,
        object: None,
    };
    let docs = yaml::documents(yaml).map_err(|e| ScenarioError::new(&whole, Problem::Yaml(e)))?;
    for (index, value) in docs {
        let value = value.map_err(|error| {
            ScenarioError::new(
                &DocRef {
                    index,
                    object: None,
                },
                Problem::Yaml(error),
            )
        })?;
        let doc = DocRef {
            index,
            object: describe(&value),
        };
        if !value.is_object() {
            return Err(ScenarioError::new(
                &doc,
                Problem::Malformed(
                    "a document must be a mapping with apiVersion and kind".to_string(),
                ),
            ));
        }
        // Counted before the document is converted, so a file of 150,000 NodePools is
        // refused after 10,001 of them, not after converting and checking them all.
        if value.get("kind").and_then(Value::as_str) == Some("NodePool") {
            nodepools += 1;
            if nodepools > MAX_NODEPOOLS {
                return Err(ScenarioError::new(
                    &doc,
                    Problem::Limit(format!("more than {MAX_NODEPOOLS} NodePools in a scenario")),
                ));
            }
        }
        let object = read_object(&doc, value)?;
        out.push((doc, object));
    }
    Ok(out)
}

/// Most NodePools in a scenario: every pending pod group is checked against each pool.
pub const MAX_NODEPOOLS: usize = 10_000;
/// Most instance types in all InstanceCatalogs of a scenario.
pub const MAX_INSTANCE_TYPES: usize = 10_000;
/// Most values in one requirement or match expression (`values`).
pub const MAX_REQUIREMENT_VALUES: usize = 1_000;
/// Most entries in each list of terms of one pod or NodePool: `requirements`,
/// `nodeSelectorTerms` and their `matchExpressions`, preferred node terms, pod (anti-)affinity
/// terms (required and preferred), `topologySpreadConstraints`, a NodePool's taints. Each
/// preferred term is a step of relaxation, tried with each required term.
pub const MAX_TERMS: usize = 100;
/// Most containers (init containers included) in one pod spec.
pub const MAX_CONTAINERS: usize = 1_000;

fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace
        .as_deref()
        .unwrap_or(convert::DEFAULT_NAMESPACE)
}

use crate::rules::daemonset_owner as owned_by_daemonset;

impl Scenario {
    /// Reads a scenario file's text, planned in us-east-1.
    pub fn parse(yaml: &str) -> Result<Scenario, ScenarioError> {
        Self::parse_in(yaml, catalog::regions::DEFAULT_REGION)
    }

    /// Reads a scenario file's text, planned in `region` (its embedded catalog, unless the
    /// scenario has an InstanceCatalog). An unknown region is refused.
    pub fn parse_in(yaml: &str, region: &str) -> Result<Scenario, ScenarioError> {
        let docs = read_documents(yaml)?;
        limits(&docs)?;
        let mut b = Builder::default();
        b.s.region = region.to_string();
        b.catalog(&docs)?;
        let classes: BTreeMap<&str, (&DocRef, &EC2NodeClass)> = docs
            .iter()
            .filter_map(|(doc, o)| match o {
                Object::EC2NodeClass(nc) => {
                    Some((nc.metadata.name.as_deref()?, (doc, nc.as_ref())))
                }
                _ => None,
            })
            .collect();
        for (doc, object) in &docs {
            match object {
                Object::NodePool(np) => {
                    let class = &np.spec.template.spec.node_class_ref.name;
                    b.nodepool(doc, np, classes.get(class.as_str()).copied())?
                }
                Object::EC2NodeClass(nc) => {
                    nc.validate()
                        .map_err(|error| ScenarioError::new(doc, Problem::Invalid(error)))?;
                    b.s.counts.ec2nodeclasses += 1;
                }
                Object::NodeOverlay(o) => b.overlay(doc, o)?,
                Object::Node(n) => b.node(doc, n)?,
                Object::PodDisruptionBudget(_) => b.s.counts.pod_disruption_budgets += 1,
                Object::VerticalPodAutoscaler(_) => b.s.counts.vertical_pod_autoscalers += 1,
                Object::NodeClaim(c) => b.nodeclaim(doc, c)?,
                _ => {}
            }
        }
        let overlays = docs.iter().filter_map(|(_, o)| match o {
            Object::NodeOverlay(o) => Some(o.as_ref()),
            _ => None,
        });
        b.s.overlays = crate::rules::apply_overlays(&mut b.s.snapshot.nodepools, overlays);
        b.drop_startup_taints();
        let volumes = b.volume_objects(&docs)?;
        for (doc, object) in &docs {
            match object {
                Object::DaemonSet(ds) => b.daemonset(doc, ds)?,
                Object::Pod(p) => b.pod(doc, p, &volumes)?,
                Object::Deployment(d) => {
                    let replicas = d.spec.as_ref().and_then(|s| s.replicas);
                    let template = d.spec.as_ref().map(|s| &s.template);
                    let w = Workload {
                        kind: "deployment",
                        meta: &d.metadata,
                        selector: d.spec.as_ref().map(|s| &s.selector),
                        replicas,
                        template,
                    };
                    b.workload(doc, w, &volumes)?;
                    b.s.counts.deployments += 1;
                }
                Object::ReplicaSet(r) => {
                    let replicas = r.spec.as_ref().and_then(|s| s.replicas);
                    let template = r.spec.as_ref().and_then(|s| s.template.as_ref());
                    let w = Workload {
                        kind: "replicaset",
                        meta: &r.metadata,
                        selector: r.spec.as_ref().map(|s| &s.selector),
                        replicas,
                        template,
                    };
                    b.workload(doc, w, &volumes)?;
                    b.s.counts.replicasets += 1;
                }
                _ => {}
            }
        }
        b.charge_daemons()?;
        b.buffers(&docs)?;
        b.s.counts.pending_pods = b.s.snapshot.pending.len() + b.s.unschedulable.len();
        b.s.counts.bound_pods = b.s.snapshot.bound.len();
        b.s.objects = cluster_objects(&docs);
        Ok(b.s)
    }

    /// Every pending pod's "namespace/name", in scenario order.
    pub fn pending_keys(&self) -> Vec<String> {
        self.snapshot.pending.iter().map(Pod::key).collect()
    }
}

/// The listed objects, as `run` would watch them.
fn cluster_objects(docs: &[(DocRef, Object)]) -> ClusterObjects {
    let mut o = ClusterObjects::default();
    for (_, object) in docs {
        match object {
            Object::NodePool(x) => o.nodepools.push(x.as_ref().clone()),
            Object::EC2NodeClass(x) => o.ec2nodeclasses.push(x.as_ref().clone()),
            Object::NodeOverlay(x) => o.nodeoverlays.push(x.as_ref().clone()),
            Object::Node(x) => o.nodes.push(x.as_ref().clone()),
            Object::Pod(x) => o.pods.push(x.as_ref().clone()),
            Object::DaemonSet(x) => o.daemonsets.push(x.as_ref().clone()),
            Object::PodDisruptionBudget(x) => o.pdbs.push(x.as_ref().clone()),
            Object::VerticalPodAutoscaler(x) => o.vpas.push(x.as_ref().clone()),
            Object::NodeClaim(x) => o.nodeclaims.push(x.as_ref().clone()),
            Object::PersistentVolumeClaim(x) => o.pvcs.push(x.as_ref().clone()),
            Object::PersistentVolume(x) => o.pvs.push(x.as_ref().clone()),
            Object::StorageClass(x) => o.storage_classes.push(x.as_ref().clone()),
            Object::CSINode(x) => o.csinodes.push(x.as_ref().clone()),
            Object::Deployment(_)
            | Object::ReplicaSet(_)
            | Object::InstanceCatalog(_)
            | Object::CapacityBuffer(_)
            | Object::PodTemplate(_) => {}
        }
    }
    o
}

#[derive(Default)]
struct Builder {
    s: Scenario,
    /// Node name → document.
    nodes: BTreeMap<String, usize>,
    /// Pod key → document.
    pods: BTreeMap<String, usize>,
    nodepools: BTreeMap<String, usize>,
    nodeoverlays: BTreeMap<String, usize>,
    nodeclaims: BTreeMap<String, usize>,
    /// DaemonSet pods the scenario lists itself: (namespace, daemonset, node).
    listed_daemon_pods: HashSet<(String, String, String)>,
    /// The document of each of `s.snapshot.daemonsets`.
    daemonset_docs: Vec<DocRef>,
    /// Nodes on their way out (being deleted, or tainted disrupted or interrupted): they
    /// take no pods, and the pods they displace are pending, as in the live provisioner.
    leaving: BTreeSet<String>,
    /// Each NodePool's startup taint keys.
    startup_taints: BTreeMap<String, Vec<String>>,
    /// The pods each DaemonSet ((namespace, name)) runs, listed in the scenario.
    live_daemon_pods: BTreeMap<(String, String), Vec<Pod>>,
    /// EC2NodeClass name → the catalog as that class shapes it, worked out for its first
    /// NodePool: the same for every pool of the class, and each pool holds the shared
    /// types, not copies (thousands of pools × hundreds of reshaped types would otherwise
    /// exhaust memory while the scenario is still being read).
    class_types: BTreeMap<String, Vec<Arc<InstanceType>>>,
}

/// A Deployment's or ReplicaSet's pods, as [`Builder::workload`] reads them.
struct Workload<'a> {
    kind: &'static str,
    meta: &'a ObjectMeta,
    /// `spec.selector`: what kube-scheduler's default spread counts the replicas by.
    selector: Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    replicas: Option<i32>,
    template: Option<&'a core::PodTemplateSpec>,
}

/// Whether a pod spec names any claim (a `persistentVolumeClaim` or `ephemeral` volume).
fn has_claims(spec: Option<&core::PodSpec>) -> bool {
    spec.and_then(|s| s.volumes.as_ref()).is_some_and(|v| {
        v.iter()
            .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
    })
}

impl Builder {
    /// The CapacityBuffers' placeholder pods, pending after every real pod.
    fn buffers(&mut self, docs: &[(DocRef, Object)]) -> Result<(), ScenarioError> {
        let mut refs = crate::rules::BufferRefs::default();
        let mut buffers = Vec::new();
        for (doc, object) in docs {
            match object {
                Object::PodTemplate(t) => {
                    refs.templates.push(t.as_ref());
                    self.s.counts.pod_templates += 1;
                }
                Object::CapacityBuffer(b) => buffers.push((doc, b.as_ref())),
                Object::Deployment(d) => {
                    if let Some(spec) = &d.spec {
                        refs.targets.push(crate::rules::ScalableTarget {
                            api_group: "apps",
                            kind: "Deployment",
                            metadata: &d.metadata,
                            replicas: spec.replicas.unwrap_or(1),
                            template: &spec.template,
                        });
                    }
                }
                Object::ReplicaSet(r) => {
                    if let Some(spec) = &r.spec
                        && let Some(template) = &spec.template
                    {
                        refs.targets.push(crate::rules::ScalableTarget {
                            api_group: "apps",
                            kind: "ReplicaSet",
                            metadata: &r.metadata,
                            replicas: spec.replicas.unwrap_or(1),
                            template,
                        });
                    }
                }
                _ => {}
            }
        }
        self.s.counts.capacity_buffers = buffers.len();
        // The room left under the pending-pod limit bounds the expansion itself.
        let room = MAX_PENDING_PODS.saturating_sub(self.s.snapshot.pending.len());
        let out = crate::rules::buffer_pods_within(buffers.iter().map(|(_, b)| *b), &refs, room);
        for (doc, b) in &buffers {
            let key = format!(
                "{}/{}",
                namespace(&b.metadata),
                b.metadata.name.as_deref().unwrap_or_default()
            );
            if let Some(crate::rules::BufferVerdict::Invalid(why)) = out.verdicts.get(&key) {
                let (field, message) = why.split_once(": ").unwrap_or(("spec", why.as_str()));
                return Err(ScenarioError::new(
                    doc,
                    Problem::Field {
                        field: field.to_string(),
                        message: message.to_string(),
                    },
                ));
            }
        }
        debug_assert!(self.s.snapshot.pending.len() + out.pods.len() <= MAX_PENDING_PODS);
        for p in out.pods {
            self.s.buffer_pods.insert(p.key());
            self.s.snapshot.pending.push(p);
        }
        Ok(())
    }

    /// The scenario's claims, volumes and classes (each name once), and each CSINode's limits
    /// on its Node.
    fn volume_objects<'d>(
        &mut self,
        docs: &'d [(DocRef, Object)],
    ) -> Result<convert::VolumeObjects<'d>, ScenarioError> {
        let mut seen: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
        let mut once = |doc: &DocRef, kind: &'static str, name: String| match seen
            .insert((kind, name.clone()), doc.index)
        {
            Some(first) => Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("{kind} {name:?}"),
                    first,
                },
            )),
            None => Ok(()),
        };
        let name = |m: &ObjectMeta| m.name.clone().unwrap_or_default();
        let (mut claims, mut pvs, mut classes) = (Vec::new(), Vec::new(), Vec::new());
        let node_at: std::collections::HashMap<String, usize> = (self.s.snapshot.nodes.iter())
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        for (doc, object) in docs {
            match object {
                Object::PersistentVolumeClaim(c) => {
                    let key = format!("{}/{}", namespace(&c.metadata), name(&c.metadata));
                    once(doc, "PersistentVolumeClaim", key)?;
                    claims.push(c.as_ref());
                }
                Object::PersistentVolume(v) => {
                    once(doc, "PersistentVolume", name(&v.metadata))?;
                    pvs.push(v.as_ref());
                }
                Object::StorageClass(c) => {
                    once(doc, "StorageClass", name(&c.metadata))?;
                    classes.push(c.as_ref());
                }
                Object::CSINode(c) => {
                    let node = name(&c.metadata);
                    once(doc, "CSINode", node.clone())?;
                    let limits = convert::csinode_limits(c).map_err(Self::convert_err(doc))?;
                    let Some(&at) = node_at.get(&node) else {
                        return Err(ScenarioError::new(
                            doc,
                            Problem::Field {
                                field: "metadata.name".into(),
                                message: format!(
                                    "a CSINode describes the Node of its name, and node {node:?} is not in the scenario"
                                ),
                            },
                        ));
                    };
                    self.s.snapshot.nodes[at].volume_limits = limits;
                    self.s.counts.csinodes += 1;
                }
                _ => {}
            }
        }
        self.s.counts.persistent_volume_claims = claims.len();
        self.s.counts.persistent_volumes = pvs.len();
        self.s.counts.storage_classes = classes.len();
        Ok(convert::VolumeObjects::new(claims, pvs, classes))
    }

    /// A pending pod with its volumes' constraints; `None` when they leave it out (recorded
    /// in [`Scenario::unschedulable`]).
    fn pending_with_volumes(
        &mut self,
        p: &core::Pod,
        pod: Pod,
        volumes: &convert::VolumeObjects<'_>,
    ) -> Option<Pod> {
        if let Some(reason) = crate::rules::unplannable(p) {
            self.s.unschedulable.push(Unschedulable {
                pod: pod.key(),
                reason,
            });
            return None;
        }
        if !has_claims(p.spec.as_ref()) {
            return Some(pod);
        }
        let key = pod.key();
        match convert::with_volumes(p, pod, volumes) {
            Ok(pod) => Some(pod),
            Err(e) => {
                self.s.unschedulable.push(Unschedulable {
                    pod: key,
                    reason: e.to_string(),
                });
                None
            }
        }
    }

    fn convert_err(doc: &DocRef) -> impl FnOnce(ConvertError) -> ScenarioError + '_ {
        move |error| ScenarioError::new(doc, Problem::Convert(error))
    }

    fn catalog(&mut self, docs: &[(DocRef, Object)]) -> Result<(), ScenarioError> {
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        let mut types = Vec::new();
        let mut first_catalog: Option<&DocRef> = None;
        for (doc, object) in docs {
            let Object::InstanceCatalog(c) = object else {
                continue;
            };
            first_catalog.get_or_insert(doc);
            if c.instance_types.is_empty() {
                return Err(ScenarioError::new(
                    doc,
                    Problem::Field {
                        field: "instanceTypes".to_string(),
                        message: "must list at least one instance type".to_string(),
                    },
                ));
            }
            for (i, t) in c.instance_types.iter().enumerate() {
                let entry = catalog_entry(doc, &format!("instanceTypes[{i}]"), t)?;
                if let Some(first) = names.insert(entry.name.clone(), doc.index) {
                    return Err(ScenarioError::new(
                        doc,
                        Problem::Duplicate {
                            what: format!("instance type {:?}", entry.name),
                            first,
                        },
                    ));
                }
                types.push(entry.into_instance_type());
            }
            self.s.custom_catalog = true;
        }
        // An InstanceCatalog brings its own zones and prices: a region named besides it
        // would change nothing, so it is refused rather than ignored.
        if let Some(doc) = first_catalog
            && self.s.region != catalog::regions::DEFAULT_REGION
        {
            return Err(ScenarioError::new(
                doc,
                Problem::Field {
                    field: "--region".into(),
                    message: format!(
                        "{:?} has no effect with an InstanceCatalog (its types bring their own zones and prices); leave --region out or drop the InstanceCatalog",
                        self.s.region
                    ),
                },
            ));
        }
        self.s.instance_types = if self.s.custom_catalog {
            absent_catalog_labels(&mut types);
            types.into_iter().map(Arc::new).collect()
        } else {
            catalog::regions::embedded_in(&self.s.region).map_err(|e| {
                ScenarioError::new(
                    &DocRef {
                        index: 0,
                        object: None,
                    },
                    Problem::Field {
                        field: "--region".into(),
                        message: e.to_string(),
                    },
                )
            })?
        };
        Ok(())
    }

    /// A NodePool that allows only zones (or a region) of another region than the one
    /// planned in would plan nothing, and the scheduler could only blame its zone
    /// requirements; the scenario is refused naming the region those zones are in.
    fn other_region(&self, doc: &DocRef, np: &NodePool) -> Result<(), ScenarioError> {
        if self.s.custom_catalog {
            return Ok(());
        }
        let Ok(table) = catalog::regions::table() else {
            return Ok(());
        };
        let Ok(here) = table.region(&self.s.region) else {
            return Ok(());
        };
        for (i, r) in np.spec.template.spec.requirements.iter().enumerate() {
            if r.operator != adze_api::requirement::Operator::In {
                continue;
            }
            let elsewhere: BTreeMap<&str, Vec<&str>> = if r.key == labels::ZONE {
                if r.values.iter().any(|z| here.zones.contains(&z.as_str())) {
                    continue;
                }
                let mut m: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for z in &r.values {
                    // A zone of this region the table does not list (us-east-1d) is left
                    // to the scheduler's own message.
                    if let Some(region) = table.region_of_zone(z)
                        && region != self.s.region
                    {
                        m.entry(region).or_default().push(z);
                    }
                }
                m
            } else if r.key == labels::REGION {
                if r.values.contains(&self.s.region) {
                    continue;
                }
                r.values
                    .iter()
                    .filter_map(|v| table.region(v).ok())
                    .map(|reg| (reg.name, Vec::new()))
                    .collect()
            } else {
                continue;
            };
            let Some(first) = elsewhere.keys().next() else {
                continue;
            };
            let what = elsewhere
                .iter()
                .map(|(region, zones)| {
                    if zones.is_empty() {
                        format!("region {region}")
                    } else {
                        format!("zones {} are in {region}", zones.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ScenarioError::new(
                doc,
                Problem::Field {
                    field: format!("spec.template.spec.requirements[{i}]"),
                    message: format!(
                        "{what}, but this simulation plans in {}; run simulate --region {first}",
                        self.s.region
                    ),
                },
            ));
        }
        Ok(())
    }

    /// `class`: the pool's EC2NodeClass and its document, when the scenario has it; the pool
    /// then launches the catalog as that class shapes it ([`class_facts`], then
    /// [`adze_scheduling::node_class::instance_types`], as `run` does).
    fn nodepool(
        &mut self,
        doc: &DocRef,
        np: &NodePool,
        class: Option<(&DocRef, &EC2NodeClass)>,
    ) -> Result<(), ScenarioError> {
        np.validate()
            .map_err(|error| ScenarioError::new(doc, Problem::Invalid(error)))?;
        self.other_region(doc, np)?;
        // `run` keeps a static pool at its replicas whatever the pods; a scenario plans for
        // pods, so it has nothing to show for one: refused rather than skipped.
        if np.spec.is_static() {
            return Err(ScenarioError::new(
                doc,
                Problem::Field {
                    field: "spec.replicas".into(),
                    message: "static NodePools launch nothing for pods and are not simulated; give their nodes as Nodes instead".into(),
                },
            ));
        }
        let types = match class {
            Some((class_doc, class)) => {
                let name = class.metadata.name.clone().unwrap_or_default();
                match self.class_types.get(&name) {
                    Some(types) => types.clone(),
                    None => {
                        let facts = class_facts(class, &self.s.instance_types)
                            .map_err(Self::convert_err(class_doc))?;
                        let types = adze_scheduling::node_class::instance_types(
                            &self.s.instance_types,
                            &facts,
                        )
                        .map_err(|e| {
                            ScenarioError::new(
                                class_doc,
                                Problem::Field {
                                    field: format!("spec.kubelet.{}", e.field),
                                    message: format!("on {}: {}", e.instance_type, e.message),
                                },
                            )
                        })?;
                        self.class_types.insert(name, types.clone());
                        types
                    }
                }
            }
            None => self.s.instance_types.clone(),
        };
        let pool = convert::nodepool(np, types).map_err(Self::convert_err(doc))?;
        if let Some(first) = self.nodepools.insert(pool.name.clone(), doc.index) {
            return Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("NodePool {:?}", pool.name),
                    first,
                },
            ));
        }
        self.s.counts.nodepools += 1;
        // A NodePool being deleted launches nothing (the same rule as `run`).
        if crate::rules::nodepool_unusable(np).is_some() {
            return Ok(());
        }
        self.startup_taints.insert(
            pool.name.clone(),
            pool.startup_taints.iter().map(|t| t.key.clone()).collect(),
        );
        self.s.snapshot.nodepools.push(pool);
        Ok(())
    }

    /// Refuses an overlay `run` would leave out as invalid: in a scenario the user is there to
    /// fix it.
    fn overlay(&mut self, doc: &DocRef, o: &NodeOverlay) -> Result<(), ScenarioError> {
        o.validate()
            .map_err(|error| ScenarioError::new(doc, Problem::Invalid(error)))?;
        let overlay = convert::overlay(o).map_err(Self::convert_err(doc))?;
        if let Some(first) = self.nodeoverlays.insert(overlay.name.clone(), doc.index) {
            return Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("NodeOverlay {:?}", overlay.name),
                    first,
                },
            ));
        }
        self.s.counts.nodeoverlays += 1;
        Ok(())
    }

    /// A NodeClaim: named once; the planner links it to its Node.
    fn nodeclaim(&mut self, doc: &DocRef, c: &adze_api::NodeClaim) -> Result<(), ScenarioError> {
        let name = c.metadata.name.clone().unwrap_or_default();
        if name.is_empty() {
            return Err(ScenarioError::new(
                doc,
                Problem::Malformed("a NodeClaim needs metadata.name".to_string()),
            ));
        }
        if let Some(first) = self.nodeclaims.insert(name.clone(), doc.index) {
            return Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("NodeClaim {name:?}"),
                    first,
                },
            ));
        }
        self.s.counts.nodeclaims += 1;
        Ok(())
    }

    fn node(&mut self, doc: &DocRef, n: &core::Node) -> Result<(), ScenarioError> {
        let mut node = convert::node(n).map_err(Self::convert_err(doc))?;
        if crate::rules::is_terminating(&n.metadata)
            || crate::provisioning::leaving::is_leaving(n, None)
        {
            node.unschedulable = true;
            self.leaving.insert(node.name.clone());
        }
        if let Some(first) = self.nodes.insert(node.name.clone(), doc.index) {
            return Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("Node {:?}", node.name),
                    first,
                },
            ));
        }
        self.s.snapshot.nodes.push(node);
        self.s.counts.nodes += 1;
        Ok(())
    }

    /// A node of a NodePool that is not initialised yet (no `adze.sh/initialized: "true"`)
    /// loses its `not-ready` taint and its pool's startup taints, as in the live provisioner:
    /// they are about to go, and the pods planned there wait for them to.
    fn drop_startup_taints(&mut self) {
        for node in &mut self.s.snapshot.nodes {
            let label = |k: &str| node.requirements.get(k).and_then(|r| r.single_value());
            if label(labels::INITIALIZED) == Some("true") {
                continue;
            }
            let Some(startup) = label(labels::NODEPOOL).and_then(|p| self.startup_taints.get(p))
            else {
                continue;
            };
            let startup = startup.clone();
            node.taints.retain(|t| {
                t.key != crate::provisioning::snapshot::NOT_READY_TAINT && !startup.contains(&t.key)
            });
        }
    }

    /// Refuses `more` pending pods past [`MAX_PENDING_PODS`]; `field` names what asked for
    /// them (a workload's `spec.replicas`), or none for a listed Pod.
    fn pending_room(
        &self,
        doc: &DocRef,
        field: Option<&str>,
        more: usize,
    ) -> Result<(), ScenarioError> {
        let pending = self.s.snapshot.pending.len();
        if pending.saturating_add(more) <= MAX_PENDING_PODS {
            return Ok(());
        }
        let message = format!(
            "{more} more pending pod(s) after {pending} would pass the limit of {MAX_PENDING_PODS} pending pods in a scenario"
        );
        let problem = match field {
            Some(field) => Problem::Field {
                field: field.to_string(),
                message,
            },
            None => Problem::Limit(message),
        };
        Err(ScenarioError::new(doc, problem))
    }

    fn bound_room(&self, doc: &DocRef) -> Result<(), ScenarioError> {
        if self.s.snapshot.bound.len() >= MAX_BOUND_PODS {
            return Err(ScenarioError::new(
                doc,
                Problem::Limit(format!(
                    "more than {MAX_BOUND_PODS} pods on existing nodes (DaemonSet pods on every node they select included)"
                )),
            ));
        }
        Ok(())
    }

    fn claim_pod_name(&mut self, doc: &DocRef, key: String) -> Result<(), ScenarioError> {
        match self.pods.insert(key.clone(), doc.index) {
            Some(first) => Err(ScenarioError::new(
                doc,
                Problem::Duplicate {
                    what: format!("pod {key}"),
                    first,
                },
            )),
            None => Ok(()),
        }
    }

    fn pod(
        &mut self,
        doc: &DocRef,
        p: &core::Pod,
        volumes: &convert::VolumeObjects<'_>,
    ) -> Result<(), ScenarioError> {
        if crate::rules::is_terminal(p) {
            return Ok(());
        }
        let mut pod = convert::pod(p).map_err(Self::convert_err(doc))?;
        self.claim_pod_name(doc, pod.key())?;
        let daemon = owned_by_daemonset(&p.metadata);
        // A DaemonSet's pods, scheduled or not, say what it really asks of a node.
        if let Some(ds) = daemon
            && !crate::rules::is_terminating(&p.metadata)
        {
            self.live_daemon_pods
                .entry((pod.namespace.clone(), ds.to_string()))
                .or_default()
                .push(pod.clone());
        }
        match p.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            Some(node) => {
                if !self.nodes.contains_key(node) {
                    return Err(ScenarioError::new(
                        doc,
                        Problem::UnknownNode(node.to_string()),
                    ));
                }
                if crate::provisioning::leaving::is_displaced(p, &self.leaving) {
                    // Its node is going: it needs a new home, now.
                    self.pending_room(doc, None, 1)?;
                    if let Some(pod) = self.pending_with_volumes(p, pod, volumes) {
                        self.s.snapshot.pending.push(pod);
                    }
                    return Ok(());
                }
                self.bound_room(doc)?;
                if has_claims(p.spec.as_ref()) {
                    pod.volumes = convert::pod_volumes(p, volumes);
                }
                if let Some(ds) = daemon {
                    self.listed_daemon_pods.insert((
                        pod.namespace.clone(),
                        ds.to_string(),
                        node.to_string(),
                    ));
                }
                self.s.snapshot.bound.push(BoundPod {
                    node: node.to_string(),
                    pod,
                    daemon: crate::rules::stays_with_node(p),
                });
            }
            // The DaemonSet controller places its own pods; terminating and gated pods wait
            // for nothing new: the same rule as `run` (`rules::wants_node`).
            None if !crate::rules::wants_node(p) => {}
            None => {
                self.pending_room(doc, None, 1)?;
                if let Some(pod) = self.pending_with_volumes(p, pod, volumes) {
                    self.s.snapshot.pending.push(pod);
                }
            }
        }
        Ok(())
    }

    fn workload(
        &mut self,
        doc: &DocRef,
        w: Workload<'_>,
        volumes: &convert::VolumeObjects<'_>,
    ) -> Result<(), ScenarioError> {
        let Workload {
            kind,
            meta,
            selector,
            replicas,
            template,
        } = w;
        let Some(template) = template else {
            return Err(ScenarioError::new(
                doc,
                Problem::Convert(ConvertError::new(
                    &convert::ObjectRef::namespaced(
                        kind,
                        namespace(meta),
                        meta.name.as_deref().unwrap_or_default(),
                    ),
                    "spec.template",
                    convert::Problem::Missing,
                )),
            ));
        };
        let pod = convert::workload_pod(kind, meta, template).map_err(Self::convert_err(doc))?;
        // As the ReplicaSet controller's pods: their controller's selector (a Deployment's,
        // which its ReplicaSet narrows to one revision; a scenario holds one).
        let owner_selector = match selector {
            Some(sel) => Some(
                convert::controller_selector(kind, meta, sel).map_err(Self::convert_err(doc))?,
            ),
            None => None,
        };
        let replicas = replicas.unwrap_or(1);
        if !(0..=MAX_REPLICAS).contains(&replicas) {
            return Err(ScenarioError::new(
                doc,
                Problem::Field {
                    field: "spec.replicas".to_string(),
                    message: format!(
                        "must be between 0 and {MAX_REPLICAS} in a scenario, got {replicas}"
                    ),
                },
            ));
        }
        self.pending_room(doc, Some("spec.replicas"), replicas as usize)?;
        let claims = has_claims(template.spec.as_ref());
        for i in 0..replicas {
            let mut p = pod.clone();
            p.name = format!("{}-{i}", pod.name);
            self.claim_pod_name(doc, p.key())?;
            let p = if claims {
                // The replica as the apiserver would hold it: its ephemeral claims are named
                // after it.
                let replica = core::Pod {
                    metadata: ObjectMeta {
                        name: Some(p.name.clone()),
                        namespace: Some(p.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: template.spec.clone(),
                    status: None,
                };
                match self.pending_with_volumes(&replica, p, volumes) {
                    Some(p) => p,
                    None => continue,
                }
            } else {
                p
            };
            if let Some(sel) = &owner_selector {
                self.s.owner_selectors.insert(p.key(), sel.clone());
            }
            self.s.snapshot.pending.push(p);
        }
        Ok(())
    }

    fn daemonset(&mut self, doc: &DocRef, ds: &DaemonSet) -> Result<(), ScenarioError> {
        let pod = convert::daemonset_pod(ds).map_err(Self::convert_err(doc))?;
        self.s.snapshot.daemonsets.push(pod);
        self.daemonset_docs.push(doc.clone());
        self.s.counts.daemonsets += 1;
        Ok(())
    }

    /// One daemon pod on every existing node each DaemonSet would run on, unless the
    /// scenario lists it already.
    fn charge_daemons(&mut self) -> Result<(), ScenarioError> {
        let snap = &mut self.s.snapshot;
        for d in &mut snap.daemonsets {
            if let Some(live) = self
                .live_daemon_pods
                .get(&(d.namespace.clone(), d.name.clone()))
            {
                crate::rules::daemon_pod_from_live(d, live);
            }
        }
        let pairs = snap.daemonsets.len().saturating_mul(snap.nodes.len());
        if pairs > MAX_DAEMONSET_NODE_PAIRS {
            return Err(ScenarioError::new(
                &DocRef {
                    index: 0,
                    object: None,
                },
                Problem::Limit(format!(
                    "{} DaemonSets on {} Nodes are more than {MAX_DAEMONSET_NODE_PAIRS} pairs to check",
                    snap.daemonsets.len(),
                    snap.nodes.len()
                )),
            ));
        }
        // The rule `run` uses too (`adze_scheduling::late_daemons`): every DaemonSet on
        // every node it selects and tolerates, where the scenario lists no pod of it.
        let listed = &self.listed_daemon_pods;
        let daemons = snap.daemonsets.clone();
        // Scenarios nominate no pods: only in-flight claims hold their pods' room.
        let added = adze_scheduling::late_daemons::charge(
            snap,
            |d, node| {
                listed.contains(&(
                    daemons[d].namespace.clone(),
                    daemons[d].name.clone(),
                    node.to_string(),
                ))
            },
            &std::collections::HashMap::new(),
        );
        if snap.bound.len() > MAX_BOUND_PODS
            && let Some(first) = added.first()
        {
            return Err(ScenarioError::new(
                &self.daemonset_docs[first.daemon],
                Problem::Limit(format!(
                    "its pods on the scenario's nodes pass the limit of {MAX_BOUND_PODS} pods on existing nodes"
                )),
            ));
        }
        Ok(())
    }
}

/// A catalog label some types carry is absent on the others, and says so: a pod that needs
/// the label (`Exists`, or a value) is kept off the types without it.
fn absent_catalog_labels(types: &mut [InstanceType]) {
    let keys: BTreeSet<String> = types
        .iter()
        .flat_map(|t| t.requirements.keys().map(str::to_string))
        .collect();
    for t in types {
        for k in &keys {
            if t.requirements.get(k).is_none()
                && let Ok(r) = adze_scheduling::Requirement::new::<&str>(
                    k,
                    adze_scheduling::Operator::DoesNotExist,
                    &[],
                )
            {
                t.requirements.add(r);
            }
        }
    }
}

fn catalog_entry(
    doc: &DocRef,
    field: &str,
    t: &CatalogType,
) -> Result<CatalogEntry, ScenarioError> {
    let bad = |f: &str, message: String| {
        ScenarioError::new(
            doc,
            Problem::Field {
                field: format!("{field}.{f}"),
                message,
            },
        )
    };
    if t.name.is_empty() {
        return Err(bad("name", "must not be empty".to_string()));
    }
    let cpu_milli = quantity::parse_milli(&t.cpu.text()).map_err(|e| bad("cpu", e.to_string()))?;
    let memory_bytes =
        quantity::parse_units(&t.memory.text()).map_err(|e| bad("memory", e.to_string()))?;
    if cpu_milli <= 0 {
        return Err(bad("cpu", "must be positive".to_string()));
    }
    if memory_bytes <= 0 {
        return Err(bad("memory", "must be positive".to_string()));
    }
    if t.pods <= 0 {
        return Err(bad("pods", format!("must be positive, got {}", t.pods)));
    }
    if t.gpus < 0 {
        return Err(bad("gpus", format!("must not be negative, got {}", t.gpus)));
    }
    if t.arch.is_empty() {
        return Err(bad("arch", "must not be empty (amd64, arm64)".to_string()));
    }
    if t.offerings.is_empty() {
        return Err(bad("offerings", "needs at least one offering".to_string()));
    }
    let mut offerings = Vec::new();
    for (i, o) in t.offerings.iter().enumerate() {
        let of = format!("offerings[{i}]");
        if o.zone.is_empty() {
            return Err(bad(&format!("{of}.zone"), "must not be empty".to_string()));
        }
        if o.capacity_type != labels::CAPACITY_TYPE_ON_DEMAND
            && o.capacity_type != labels::CAPACITY_TYPE_SPOT
        {
            return Err(bad(
                &format!("{of}.capacityType"),
                format!("must be on-demand or spot, got {:?}", o.capacity_type),
            ));
        }
        if !o.price.is_finite() || o.price < 0.0 {
            return Err(bad(
                &format!("{of}.price"),
                format!("must be a non-negative number of $/hour, got {}", o.price),
            ));
        }
        offerings.push(Offering {
            zone: o.zone.clone(),
            zone_id: o.zone_id.clone(),
            capacity_type: o.capacity_type.clone(),
            price: o.price,
            available: o.available,
            reservation: None,
        });
    }
    Ok(CatalogEntry {
        name: t.name.clone(),
        cpu_milli,
        memory_bytes,
        pods: t.pods,
        arch: t.arch.clone(),
        gpus: t.gpus,
        labels: t.labels.clone(),
        offerings,
    })
}

/// What a scenario's EC2NodeClass tells placement: its facts as `run` reads them
/// ([`convert::nodeclass`]), with what only a cluster resolves filled in when the scenario
/// leaves its `status` out: every zone the catalog offers counts as having a subnet, and
/// every type as booting one of the family's images (a Windows family still keeps to
/// amd64 types with a Windows price).
fn class_facts(
    class: &EC2NodeClass,
    catalog: &[Arc<InstanceType>],
) -> Result<NodeClassFacts, ConvertError> {
    let mut facts = convert::nodeclass(class)?;
    if facts.zones.is_empty() {
        facts.zones = catalog
            .iter()
            .flat_map(|t| t.offerings.iter().map(|o| o.zone.clone()))
            .collect();
    }
    if facts.images.is_empty() {
        facts.images.push(Requirements::new());
    }
    Ok(facts)
}

/// The scenario's sizes against the limits above, before anything is converted or expanded:
/// the first one past its limit is refused naming the document, the field and the limit.
fn limits(docs: &[(DocRef, Object)]) -> Result<(), ScenarioError> {
    let over = |doc: &DocRef, field: String, n: usize, limit: usize, what: &str| {
        ScenarioError::new(
            doc,
            Problem::Field {
                field,
                message: format!("{n} {what} are more than the limit of {limit} in a scenario"),
            },
        )
    };
    let list = |doc: &DocRef, field: String, n: usize, limit: usize, what: &str| {
        if n > limit {
            Err(over(doc, field, n, limit, what))
        } else {
            Ok(())
        }
    };
    let mut types = 0usize;
    for (doc, object) in docs {
        match object {
            // Their number is checked as the documents are read (`read_documents`).
            Object::NodePool(np) => {
                let reqs = &np.spec.template.spec.requirements;
                list(
                    doc,
                    "spec.template.spec.requirements".into(),
                    reqs.len(),
                    MAX_TERMS,
                    "requirements",
                )?;
                for (i, r) in reqs.iter().enumerate() {
                    let n = r.values.len();
                    list(
                        doc,
                        format!("spec.template.spec.requirements[{i}].values"),
                        n,
                        MAX_REQUIREMENT_VALUES,
                        "values",
                    )?;
                }
                let taints =
                    np.spec.template.spec.taints.len() + np.spec.template.spec.startup_taints.len();
                list(
                    doc,
                    "spec.template.spec.taints".into(),
                    taints,
                    MAX_TERMS,
                    "taints and startup taints",
                )?;
            }
            Object::InstanceCatalog(c) => {
                types = types.saturating_add(c.instance_types.len());
                list(
                    doc,
                    "instanceTypes".into(),
                    types,
                    MAX_INSTANCE_TYPES,
                    "instance types (all InstanceCatalogs together)",
                )?;
            }
            Object::Pod(p) => pod_spec_limits(doc, "spec", p.spec.as_ref())?,
            Object::Deployment(d) => pod_spec_limits(
                doc,
                "spec.template.spec",
                d.spec.as_ref().and_then(|s| s.template.spec.as_ref()),
            )?,
            Object::ReplicaSet(r) => pod_spec_limits(
                doc,
                "spec.template.spec",
                r.spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(|t| t.spec.as_ref()),
            )?,
            Object::DaemonSet(d) => pod_spec_limits(
                doc,
                "spec.template.spec",
                d.spec.as_ref().and_then(|s| s.template.spec.as_ref()),
            )?,
            Object::PodTemplate(t) => pod_spec_limits(
                doc,
                "template.spec",
                t.template.as_ref().and_then(|t| t.spec.as_ref()),
            )?,
            _ => {}
        }
    }
    Ok(())
}

/// A pod spec's lists against [`MAX_CONTAINERS`], [`MAX_TERMS`] and
/// [`MAX_REQUIREMENT_VALUES`]; `at` is the spec's path in its object.
fn pod_spec_limits(
    doc: &DocRef,
    at: &str,
    spec: Option<&core::PodSpec>,
) -> Result<(), ScenarioError> {
    let Some(spec) = spec else {
        return Ok(());
    };
    let check = |field: String, n: usize, limit: usize| {
        if n > limit {
            return Err(ScenarioError::new(
                doc,
                Problem::Field {
                    field,
                    message: format!(
                        "{n} entries are more than the limit of {limit} in a scenario"
                    ),
                },
            ));
        }
        Ok(())
    };
    check(
        format!("{at}.containers"),
        spec.containers.len() + spec.init_containers.as_ref().map_or(0, Vec::len),
        MAX_CONTAINERS,
    )?;
    check(
        format!("{at}.topologySpreadConstraints"),
        spec.topology_spread_constraints
            .as_ref()
            .map_or(0, Vec::len),
        MAX_TERMS,
    )?;
    let expressions = |field: String,
                       e: Option<
        &Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement>,
    >|
     -> Result<(), ScenarioError> {
        let e = e.map_or(&[][..], Vec::as_slice);
        check(field.clone(), e.len(), MAX_TERMS)?;
        for (i, r) in e.iter().enumerate() {
            check(
                format!("{field}[{i}].values"),
                r.values.as_ref().map_or(0, Vec::len),
                MAX_REQUIREMENT_VALUES,
            )?;
        }
        Ok(())
    };
    let node_term = |field: String, t: &core::NodeSelectorTerm| -> Result<(), ScenarioError> {
        for (name, e) in [
            ("matchExpressions", t.match_expressions.as_ref()),
            ("matchFields", t.match_fields.as_ref()),
        ] {
            let e = e.map_or(&[][..], Vec::as_slice);
            check(format!("{field}.{name}"), e.len(), MAX_TERMS)?;
            for (i, r) in e.iter().enumerate() {
                check(
                    format!("{field}.{name}[{i}].values"),
                    r.values.as_ref().map_or(0, Vec::len),
                    MAX_REQUIREMENT_VALUES,
                )?;
            }
        }
        Ok(())
    };
    let pod_terms = |field: String, terms: &[&core::PodAffinityTerm]| {
        check(field.clone(), terms.len(), MAX_TERMS)?;
        for (i, t) in terms.iter().enumerate() {
            expressions(
                format!("{field}[{i}].labelSelector.matchExpressions"),
                t.label_selector
                    .as_ref()
                    .and_then(|s| s.match_expressions.as_ref()),
            )?;
        }
        Ok(())
    };
    let Some(affinity) = &spec.affinity else {
        return Ok(());
    };
    if let Some(na) = &affinity.node_affinity {
        if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
            let field = format!(
                "{at}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            );
            check(field.clone(), req.node_selector_terms.len(), MAX_TERMS)?;
            for (i, t) in req.node_selector_terms.iter().enumerate() {
                node_term(format!("{field}[{i}]"), t)?;
            }
        }
        if let Some(pref) = &na.preferred_during_scheduling_ignored_during_execution {
            let field = format!(
                "{at}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            );
            check(field.clone(), pref.len(), MAX_TERMS)?;
            for (i, t) in pref.iter().enumerate() {
                node_term(format!("{field}[{i}].preference"), &t.preference)?;
            }
        }
    }
    for (name, a) in [
        (
            "podAffinity",
            affinity.pod_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            affinity.pod_anti_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ] {
        let Some((required, preferred)) = a else {
            continue;
        };
        let required: Vec<&core::PodAffinityTerm> = required.iter().flatten().collect();
        pod_terms(
            format!("{at}.affinity.{name}.requiredDuringSchedulingIgnoredDuringExecution"),
            &required,
        )?;
        let preferred: Vec<&core::PodAffinityTerm> = preferred
            .iter()
            .flatten()
            .map(|w| &w.pod_affinity_term)
            .collect();
        pod_terms(
            format!("{at}.affinity.{name}.preferredDuringSchedulingIgnoredDuringExecution"),
            &preferred,
        )?;
    }
    Ok(())
}
