//! NodeOverlay: the user's corrections to the instance catalog (a negotiated discount, a
//! licence fee, an extended resource the cloud does not report), applied before planning.
//!
//! Field names and meanings follow Karpenter's alpha `karpenter.sh/v1alpha1` NodeOverlay; the
//! rules for applying them are in [`adze_scheduling::overlay`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::{patterns, requirement::Requirement};

/// Resources an overlay may not set: the instance type's own shape is the cloud's to report.
pub const RESTRICTED_CAPACITY: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "pods"];

/// Why `minValues` is refused on an overlay's requirements (it would otherwise be ignored).
pub const MIN_VALUES_MESSAGE: &str =
    "minValues is a NodePool field; an overlay selects instance types, it asks for no diversity";

/// Adjusts the price or the extended resources of the instance types and offerings it selects.
// Each printcolumn repeats `type_`/`priority`; clippy mistakes those for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "adze.sh",
    version = "v1alpha1",
    kind = "NodeOverlay",
    plural = "nodeoverlays",
    shortname = "overlays",
    status = "NodeOverlayStatus",
    category = "adze",
    derive = "PartialEq",
    doc = "NodeOverlay adjusts the price or extended resources of the instance types Adze plans with.",
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
        name = "Weight",
        type_ = "integer",
        json_path = ".spec.weight",
        priority = 1
    )
)]
#[x_kube(validation = Rule::new("!has(self.price) || !has(self.priceAdjustment)").message("cannot set both price and priceAdjustment"))]
#[serde(rename_all = "camelCase")]
pub struct NodeOverlaySpec {
    /// Which instance types and offerings this overlay changes: instance labels (type, family,
    /// size), offering labels (zone, capacity type) and the pool's (`adze.sh/nodepool`,
    /// template labels). Empty selects everything.
    #[serde(default)]
    #[schemars(length(max = 100))]
    #[x_kube(validation = Rule::new("self.all(r, !has(r.minValues))").message(MIN_VALUES_MESSAGE))]
    pub requirements: Vec<Requirement>,
    /// A signed amount ("+0.5", "-0.01") or a signed percentage ("-10%", "+5%", at least
    /// "-100%") added to each selected offering's price. A result below zero counts as zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::PRICE_ADJUSTMENT), length(max = 32))]
    pub price_adjustment: Option<String>,
    /// The price of each selected offering, replacing the cloud's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::PRICE), length(max = 32))]
    pub price: Option<String>,
    /// Extended resources the selected types have (e.g. `hugepages-2Mi`, `example.com/license`),
    /// set rather than added to what the cloud reports; cpu, memory, ephemeral-storage and pods
    /// are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::overlay_capacity")]
    pub capacity: BTreeMap<String, Quantity>,
    /// Higher weights are applied first and win per offering price and per resource; unset
    /// counts as 0. Equal weights that change the same thing conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub weight: Option<i32>,
}

/// What the provisioner last concluded about the overlay.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeOverlayStatus {
    /// ValidationSucceeded (false with reason `Conflict` or `RuntimeValidation`) and Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}
