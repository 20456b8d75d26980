//! CapacityBuffer: SIG Autoscaling's `autoscaling.x-k8s.io/v1alpha1` API for spare capacity,
//! which Karpenter v1.14 reads behind its alpha `CapacityBuffer` feature gate. A buffer asks
//! for room for some number of pods shaped like a PodTemplate (or like a workload's pods);
//! the provisioner plans for those pods on every cycle without ever creating them.
//!
//! Adze does not own this API: SIG Autoscaling does (Cluster Autoscaler's
//! `apis/capacitybuffer`), and Karpenter's charts ship its CRD. These types read it, and
//! `crds::capacity_buffer` renders Adze's own CRD for it from them (the chart installs that
//! only with `provisioner.capacityBuffers`, and not when `installCapacityBufferCRD` is false
//! because another chart has it). The rules that turn buffers into placeholder pods are in
//! the provisioner (`rules::buffer_pods`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The only provisioning strategy Karpenter (and Adze) act on; also the default.
pub const ACTIVE_CAPACITY: &str = "buffer.x-k8s.io/active-capacity";

/// Spare capacity for `replicas` (or a percentage of a workload's replicas, or as many as
/// `limits` allow) placeholder pods.
#[derive(CustomResource, JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "autoscaling.x-k8s.io",
    version = "v1alpha1",
    kind = "CapacityBuffer",
    plural = "capacitybuffers",
    namespaced,
    status = "CapacityBufferStatus",
    derive = "PartialEq",
    shortname = "cb",
    category = "autoscaling",
    printcolumn = r#"{"name":"Strategy","type":"string","jsonPath":".spec.provisioningStrategy"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    doc = "CapacityBuffer asks the autoscaler to keep room for placeholder pods."
)]
#[serde(rename_all = "camelCase")]
pub struct CapacityBufferSpec {
    /// `buffer.x-k8s.io/active-capacity` (the default when unset); anything else is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_strategy: Option<String>,
    /// A PodTemplate in the buffer's namespace: the shape of one placeholder pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_ref: Option<LocalRef>,
    /// A workload (Deployment, ReplicaSet, StatefulSet) whose pod template is the shape of one
    /// placeholder pod, and whose replica count `percentage` is taken of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalable_ref: Option<ScalableRef>,
    /// How many placeholder pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Placeholder pods as a percentage of the `scalableRef` workload's replicas, rounded up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage: Option<i32>,
    /// The most the placeholder pods may request in total, per resource: caps the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, Quantity>>,
}

/// A reference to an object in the buffer's namespace, by name.
#[derive(JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalRef {
    pub name: String,
}

/// A reference to an object with a scale subresource, in the buffer's namespace.
#[derive(JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalableRef {
    /// "" (the core group) when unset.
    #[serde(default)]
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

/// What the autoscaler last concluded about the buffer.
#[derive(JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityBufferStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_ref: Option<LocalRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
