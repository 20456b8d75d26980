//! NodeClaim: Adze's request for one node, and the record of that node's life.
//!
//! The provisioner creates a NodeClaim per node it decides to launch; the NodeClaim controllers
//! walk it through Launched → Registered → Initialized and, later, disruption and termination.
//! The spec is immutable: a different node is a different NodeClaim.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{
    api::resource::Quantity,
    apis::meta::v1::{Condition, Time},
};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    duration::{DurationOrNever, GoDuration},
    node_class_ref::NodeClassRef,
    nodepool::default_expire_after,
    requirement::Requirement,
    taint::Taint,
};

/// A request for one node: the scheduler's constraints, and the resources its pods need.
// Each printcolumn repeats `type_`/`priority`; clippy mistakes those for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "adze.sh",
    version = "v1",
    kind = "NodeClaim",
    plural = "nodeclaims",
    status = "NodeClaimStatus",
    category = "adze",
    derive = "PartialEq",
    doc = "NodeClaim is Adze's request for one node and the record of that node's lifecycle.",
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".metadata.labels.node\\.kubernetes\\.io/instance-type"
    ),
    printcolumn(
        name = "Capacity",
        type_ = "string",
        json_path = ".metadata.labels.adze\\.sh/capacity-type"
    ),
    printcolumn(
        name = "Zone",
        type_ = "string",
        json_path = ".metadata.labels.topology\\.kubernetes\\.io/zone"
    ),
    printcolumn(name = "Node", type_ = "string", json_path = ".status.nodeName"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "ID",
        type_ = "string",
        json_path = ".status.providerID",
        priority = 1
    ),
    printcolumn(
        name = "NodePool",
        type_ = "string",
        json_path = ".metadata.labels.adze\\.sh/nodepool",
        priority = 1
    ),
    printcolumn(
        name = "NodeClass",
        type_ = "string",
        json_path = ".spec.nodeClassRef.name",
        priority = 1
    ),
    printcolumn(
        name = "Drifted",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Drifted\")].status",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self == oldSelf").message("spec is immutable"))]
pub struct NodeClaimSpec {
    /// Constraints the launched instance must satisfy; the cloud provider picks within them.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub requirements: Vec<Requirement>,
    /// What the pods that caused this claim need, so the instance chosen can hold them.
    #[serde(default, skip_serializing_if = "ResourceRequests::is_empty")]
    pub resources: ResourceRequests,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub taints: Vec<Taint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub startup_taints: Vec<Taint>,
    pub node_class_ref: NodeClassRef,
    /// Copied from the NodePool at launch, so later pool edits do not shorten a node's life.
    #[serde(default = "default_expire_after")]
    pub expire_after: DurationOrNever,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<GoDuration>,
}

/// Resource requests (cpu, memory, pods, ...) the claim's node must satisfy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRequests {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::quantity_map")]
    pub requests: BTreeMap<String, Quantity>,
}

impl ResourceRequests {
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// What the NodeClaim controllers learned about the node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimStatus {
    /// The Node object's name, once the node registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The cloud's ID for the instance (e.g. "aws:///us-west-2a/i-0123456789abcdef0").
    #[serde(
        rename = "providerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    /// The image the instance booted from; compared against the node class to detect drift.
    #[serde(rename = "imageID", default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::quantity_map")]
    pub capacity: BTreeMap<String, Quantity>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::quantity_map")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Launched, Registered, Initialized, Ready, and the disruption conditions (Drifted,
    /// Consolidatable, Disrupting, Interrupted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// When a pod last scheduled to or left the node; consolidateAfter counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_pod_event_time: Option<Time>,
}
