//! NodePool: what kinds of nodes Adze may launch for pending pods, and when it may take them away.
//!
//! Field names and meanings follow Karpenter v1 (`karpenter.sh/v1` NodePool) so users can port
//! their pools by changing the API group.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    duration::{DurationOrNever, GoDuration},
    label_keys,
    node_class_ref::NodeClassRef,
    patterns,
    requirement::Requirement,
    taint::Taint,
};

/// A pool of nodes Adze may launch: a template for their NodeClaims, disruption policy and limits.
// Each printcolumn repeats `type_`/`priority`; clippy mistakes those for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "adze.sh",
    version = "v1",
    kind = "NodePool",
    plural = "nodepools",
    status = "NodePoolStatus",
    category = "adze",
    derive = "PartialEq",
    doc = "NodePool is the set of nodes Adze may launch for pending pods, and how it may disrupt them.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.nodes"
    ),
    printcolumn(
        name = "NodeClass",
        type_ = "string",
        json_path = ".spec.template.spec.nodeClassRef.name"
    ),
    printcolumn(
        name = "Nodes",
        type_ = "string",
        json_path = ".status.resources.nodes"
    ),
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
    ),
    printcolumn(
        name = "CPU",
        type_ = "string",
        json_path = ".status.resources.cpu",
        priority = 1
    ),
    printcolumn(
        name = "Memory",
        type_ = "string",
        json_path = ".status.resources.memory",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.replicas) == has(oldSelf.replicas)").message("replicas cannot be added to or removed from an existing NodePool (static and dynamic pools do not convert); create a new NodePool"))]
#[x_kube(validation = Rule::new("!has(self.replicas) || !has(self.weight)").message("weight cannot be set on a static NodePool (one with replicas)"))]
pub struct NodePoolSpec {
    /// What every NodeClaim launched from this pool looks like.
    pub template: NodeClaimTemplate,
    /// When and how fast Adze may remove this pool's nodes.
    #[serde(default)]
    pub disruption: Disruption,
    /// Caps on the total resources of the pool's nodes (e.g. cpu: 1000); Adze stops launching
    /// rather than exceed them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::quantity_map")]
    pub limits: BTreeMap<String, Quantity>,
    /// Higher-weight pools are tried first; unset counts as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub weight: Option<i32>,
    /// Makes the pool static (Karpenter's static capacity): Adze keeps exactly this many
    /// NodeClaims whatever the pods, launching none for pending pods and consolidating none
    /// away; drift and expiry still replace them. `kubectl scale nodepool/<name> --replicas=N`
    /// sets it. Only `limits.nodes` applies, no weight, and a pool cannot become static or stop
    /// being static.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i64>,
}

impl NodePoolSpec {
    /// Whether the pool keeps a fixed node count (`spec.replicas`).
    pub fn is_static(&self) -> bool {
        self.replicas.is_some()
    }
}

/// The NodeClaim a pool stamps out: node metadata plus the NodeClaim spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeClaimTemplate {
    #[serde(default, skip_serializing_if = "TemplateMetadata::is_empty")]
    pub metadata: TemplateMetadata,
    pub spec: NodeClaimTemplateSpec,
}

/// Labels and annotations copied onto every node of the pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateMetadata {
    /// Node labels. Domains owned by the kubelet or by Adze are refused, since Adze or the kubelet
    /// would overwrite them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::label_map")]
    #[schemars(transform = label_keys::add_template_label_rules)]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl TemplateMetadata {
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }
}

/// The NodeClaim spec a pool stamps out, minus the resources the scheduler fills in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplateSpec {
    /// Constraints on the nodes' labels (instance type, zone, capacity type, custom labels).
    #[serde(default)]
    #[schemars(length(max = 100))]
    #[x_kube(validation = label_keys::nodepool_requirements_rule())]
    pub requirements: Vec<Requirement>,
    /// Taints every node of the pool carries for its lifetime.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub taints: Vec<Taint>,
    /// Taints some agent removes once the node is ready (e.g. a CNI); pods need not tolerate them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub startup_taints: Vec<Taint>,
    pub node_class_ref: NodeClassRef,
    /// Nodes older than this are replaced, so fleets pick up new images; "Never" keeps them.
    #[serde(default = "default_expire_after")]
    pub expire_after: DurationOrNever,
    /// How long a draining node may wait for pods before it is terminated regardless of
    /// PodDisruptionBudgets or do-not-disrupt annotations. Unset means wait indefinitely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<GoDuration>,
}

/// 30 days, Karpenter's default: long enough not to churn, short enough to keep images fresh.
pub fn default_expire_after() -> DurationOrNever {
    DurationOrNever::parse("720h").expect("valid duration")
}

/// Which nodes consolidation may remove.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConsolidationPolicy {
    /// Only nodes running no workload pods.
    WhenEmpty,
    /// Also nodes whose pods fit elsewhere or on a cheaper replacement.
    #[default]
    WhenEmptyOrUnderutilized,
    /// As WhenEmptyOrUnderutilized, but only moves whose savings (as a share of the pool's
    /// cost) are at least half their disruption (as a share of the pool's), as Karpenter's.
    Balanced,
}

/// Why a node is being voluntarily disrupted; budgets may apply to some reasons only.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum DisruptionReason {
    Underutilized,
    Empty,
    Drifted,
    /// Node repair (Karpenter v1.15): repair is a voluntary disruption that budgets hold,
    /// unless the provisioner runs with `--legacy-node-repair`, when no budget applies.
    Unhealthy,
    /// Not a budget reason since expiry became forceful (Karpenter v1): no budget holds an
    /// expired node back. Kept so stored pools that name it still read; the CRD no longer
    /// admits it and validation refuses it, naming the field.
    #[schemars(skip)]
    Expired,
}

/// Voluntary disruption policy for a pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Disruption {
    #[serde(default)]
    pub consolidation_policy: ConsolidationPolicy,
    /// How long a node must have been consolidatable (no pod scheduled or removed) before it is
    /// consolidated, so bursty workloads do not cause churn. "Never" disables consolidation.
    #[serde(default = "default_consolidate_after")]
    pub consolidate_after: DurationOrNever,
    /// Limits on how many nodes may be disrupted at once. The most restrictive active budget wins;
    /// an empty list means no limit.
    #[serde(default = "default_budgets")]
    #[schemars(length(max = 50))]
    pub budgets: Vec<Budget>,
    /// The least a consolidation that launches a replacement must save, in USD per hour, for
    /// each unit of disruption cost of the nodes it removes (about one per pod evicted, less
    /// for a node near its expiry; never under 1). A decimal such as "0.01"; unset or "0" is
    /// no minimum. A move across pools must meet the highest of their values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::DECIMAL), length(max = 32))]
    pub min_savings_per_disruption_cost: Option<String>,
}

impl Disruption {
    /// `minSavingsPerDisruptionCost` as a number: 0 when unset; an error (for the field's
    /// path) when it is not an unsigned decimal.
    pub fn min_savings_per_disruption_cost(&self) -> Result<f64, String> {
        let Some(value) = &self.min_savings_per_disruption_cost else {
            return Ok(0.0);
        };
        let invalid = || {
            format!(
                "{} must be an unsigned decimal such as \"0.01\" (USD per hour per unit of disruption cost; \"0\" is no minimum)",
                crate::validation::shown(value)
            )
        };
        if value.len() > DECIMAL_MAX_LEN || !patterns::is_match(patterns::DECIMAL, value) {
            return Err(invalid());
        }
        value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(invalid)
    }
}

/// Longest `minSavingsPerDisruptionCost` accepted, as in the CRD.
pub const DECIMAL_MAX_LEN: usize = 32;

impl Default for Disruption {
    fn default() -> Self {
        Self {
            consolidation_policy: ConsolidationPolicy::default(),
            consolidate_after: default_consolidate_after(),
            budgets: default_budgets(),
            min_savings_per_disruption_cost: None,
        }
    }
}

pub fn default_consolidate_after() -> DurationOrNever {
    DurationOrNever::parse("0s").expect("valid duration")
}

/// One budget of 10% of the pool's nodes: Karpenter's default.
pub fn default_budgets() -> Vec<Budget> {
    vec![Budget::default()]
}

/// At most `nodes` of the pool may be disrupting at once, optionally only while a cron window
/// (`schedule` + `duration`) is open and only for some `reasons`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.schedule) == has(self.duration)").message("schedule and duration must be set together"))]
pub struct Budget {
    /// A node count ("5") or a percentage of the pool ("10%", rounded up); "0" blocks disruption.
    #[serde(default = "default_budget_nodes")]
    #[schemars(pattern(patterns::BUDGET_NODES))]
    pub nodes: String,
    /// Cron schedule (UTC) at which the budget window opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::CRON_SCHEDULE))]
    pub schedule: Option<String>,
    /// How long the window stays open after each `schedule` tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<GoDuration>,
    /// Reasons this budget applies to; unset means all reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 4))]
    pub reasons: Vec<DisruptionReason>,
}

pub fn default_budget_nodes() -> String {
    "10%".to_string()
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            nodes: default_budget_nodes(),
            schedule: None,
            duration: None,
            reasons: Vec::new(),
        }
    }
}

/// A budget's `nodes`, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetNodes {
    Count(u64),
    Percent(u8),
}

impl BudgetNodes {
    pub fn parse(nodes: &str) -> Result<Self, String> {
        let invalid = || {
            format!("budget nodes {nodes:?} must be a node count or a percentage from 0% to 100%")
        };
        if !patterns::is_match(patterns::BUDGET_NODES, nodes) {
            return Err(invalid());
        }
        match nodes.strip_suffix('%') {
            Some(percent) => percent.parse().map(Self::Percent).map_err(|_| invalid()),
            None => nodes.parse().map(Self::Count).map_err(|_| invalid()),
        }
    }

    /// How many of `pool_nodes` this budget lets disrupt at once; percentages round up so that a
    /// small pool with a non-zero percentage can still make progress.
    pub fn allowed(self, pool_nodes: u64) -> u64 {
        match self {
            Self::Count(count) => count,
            Self::Percent(percent) => (pool_nodes * u64::from(percent)).div_ceil(100),
        }
    }
}

impl Budget {
    pub fn parsed_nodes(&self) -> Result<BudgetNodes, String> {
        BudgetNodes::parse(&self.nodes)
    }

    /// Whether this budget governs disruptions for `reason`.
    pub fn applies_to(&self, reason: DisruptionReason) -> bool {
        self.reasons.is_empty() || self.reasons.contains(&reason)
    }
}

/// What the NodePool controller last observed about the pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    /// Total capacity of the pool's nodes, plus a "nodes" count; compared against `spec.limits`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::quantity_map")]
    pub resources: BTreeMap<String, Quantity>,
    /// Ready, NodeClassReady and ValidationSucceeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The node class generation the Ready condition reflects, so readiness is not trusted across
    /// node class edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_class_observed_generation: Option<i64>,
    /// How many launched NodeClaims the pool has (`resources.nodes` as an integer): the scale
    /// subresource's current replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<i64>,
    /// Static or Dynamic, as the controller first saw the pool: API servers before 1.25 do not
    /// run the CEL rule that forbids adding or removing `spec.replicas`, so the controller
    /// compares the spec with this record and refuses a pool whose kind changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_null_from_enum)]
    pub kind: Option<PoolKind>,
}

/// Whether a pool keeps a fixed node count (`spec.replicas`) or launches for pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PoolKind {
    Static,
    Dynamic,
}

impl PoolKind {
    pub fn of(spec: &NodePoolSpec) -> PoolKind {
        if spec.is_static() {
            PoolKind::Static
        } else {
            PoolKind::Dynamic
        }
    }
}

impl NodePool {
    /// Why the pool is refused for having changed kind since the controller recorded it
    /// (`spec.replicas` added or removed), naming the field; None while it has not, or before
    /// any kind was recorded.
    pub fn kind_change(&self) -> Option<String> {
        let recorded = self.status.as_ref()?.kind?;
        let now = PoolKind::of(&self.spec);
        if recorded == now {
            return None;
        }
        let what = match recorded {
            PoolKind::Static => "removed from a static NodePool",
            PoolKind::Dynamic => "added to a dynamic NodePool",
        };
        Some(format!(
            "spec.replicas: cannot be {what} (static and dynamic pools do not convert); \
             restore it as it was, or create a new NodePool"
        ))
    }
}
