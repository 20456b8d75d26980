//! A plan as `simulate` prints it: the JSON shape scripts read ([`Report`]) and the table a
//! person reads ([`table`]).

use std::collections::BTreeMap;
use std::time::Duration;

use adze_scheduling::Plan;
use adze_scheduling::plan::NewClaim;
use serde::{Deserialize, Serialize};

use super::scenario::Scenario;

/// `simulate --output json`. Prices are USD per hour rounded to 4 decimals; `elapsedMs` is
/// the time placement took, without reading the scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Report {
    pub node_claims: Vec<NodeClaimReport>,
    /// Existing nodes that received pending pods.
    pub existing_nodes: Vec<ExistingNodeReport>,
    pub unschedulable: Vec<UnschedulableReport>,
    pub total_price_per_hour: f64,
    pub cost_lower_bound: f64,
    pub elapsed_ms: f64,
    /// Per NodePool, the existing nodes' cost per hour today and with the plan's new
    /// capacity added ([`cost`]); empty when the scenario has no existing nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost: Vec<super::disruption::PoolCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeClaimReport {
    pub name: String,
    pub node_pool: String,
    pub instance_type: String,
    pub instance_type_options: Vec<String>,
    pub zone: String,
    pub capacity_type: String,
    pub price_per_hour: f64,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<TaintReport>,
    /// Kubernetes quantity strings ("3920m", "14Gi", "58").
    pub allocatable: BTreeMap<String, String>,
    /// "namespace/name", in placement order.
    pub pods: Vec<String>,
    /// Those of `pods` that are CapacityBuffer placeholders: this much of the capacity is
    /// spare room kept for a buffer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffer_pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintReport {
    pub key: String,
    /// Empty when the taint has no value.
    pub value: String,
    pub effect: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExistingNodeReport {
    pub name: String,
    pub pods: Vec<String>,
    /// Those of `pods` that are CapacityBuffer placeholders (room the node keeps spare).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffer_pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnschedulableReport {
    pub pod: String,
    pub reason: String,
}

/// Rounds to `decimals` places; never gives -0 (an empty float sum is -0.0 in Rust).
fn round(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale + 0.0
}

fn price(x: f64) -> f64 {
    round(x, 4)
}

fn millis(elapsed: Duration) -> f64 {
    round(elapsed.as_secs_f64() * 1000.0, 3)
}

impl Report {
    pub fn new(plan: &Plan, elapsed: Duration) -> Report {
        Report {
            node_claims: plan.new_claims.iter().map(NodeClaimReport::new).collect(),
            existing_nodes: plan
                .existing
                .iter()
                .filter(|e| !e.pods.is_empty())
                .map(|e| ExistingNodeReport {
                    name: e.node.clone(),
                    pods: e.pods.clone(),
                    buffer_pods: Vec::new(),
                })
                .collect(),
            unschedulable: plan
                .unschedulable
                .iter()
                .map(|u| UnschedulableReport {
                    pod: u.pod.clone(),
                    reason: u.reason.clone(),
                })
                .collect(),
            total_price_per_hour: price(plan.total_price_per_hour),
            cost_lower_bound: price(plan.cost_lower_bound),
            elapsed_ms: millis(elapsed),
            cost: Vec::new(),
        }
    }

    /// The report with the cost per NodePool today and after the plan.
    pub fn with_cost(mut self, cost: Vec<super::disruption::PoolCost>) -> Report {
        self.cost = cost
            .into_iter()
            .map(|mut c| {
                c.before = price(c.before);
                c.after = price(c.after);
                c
            })
            .collect();
        self
    }
}

/// Nodes of no NodePool (capacity Adze does not manage), in [`cost`].
pub const UNMANAGED: &str = "(no NodePool)";

/// The cluster's cost per hour per NodePool: today (the existing nodes, each priced by its
/// instance type, zone and capacity type labels from its pool's catalog, else any pool's, as
/// the disruption planner prices a node) and after the plan (its new capacity added). Nodes
/// of no pool are counted under [`UNMANAGED`]; a node whose type no catalog lists costs 0.
/// Empty when the scenario has no existing nodes.
pub fn cost(scenario: &Scenario, plan: &Plan) -> Vec<super::disruption::PoolCost> {
    use adze_scheduling::labels as l;
    let snap = &scenario.snapshot;
    let mut out: BTreeMap<String, super::disruption::PoolCost> = BTreeMap::new();
    fn row<'a>(
        out: &'a mut BTreeMap<String, super::disruption::PoolCost>,
        pool: &str,
    ) -> &'a mut super::disruption::PoolCost {
        out.entry(pool.to_string())
            .or_insert_with(|| super::disruption::PoolCost {
                nodepool: pool.to_string(),
                nodes_before: 0,
                nodes_after: 0,
                before: 0.0,
                after: 0.0,
            })
    }
    let existing: Vec<_> = snap.nodes.iter().filter(|n| !n.in_flight).collect();
    if existing.is_empty() {
        return Vec::new();
    }
    for n in existing {
        let label = |k: &str| {
            n.requirements
                .get(k)
                .and_then(|r| r.single_value())
                .unwrap_or_default()
                .to_string()
        };
        let (it, ct, zone) = (
            label(l::INSTANCE_TYPE),
            label(l::CAPACITY_TYPE),
            label(l::ZONE),
        );
        let ct = if ct.is_empty() {
            l::CAPACITY_TYPE_ON_DEMAND.to_string()
        } else {
            ct
        };
        let p = n.price.unwrap_or_else(|| {
            let own = snap
                .nodepools
                .iter()
                .filter(|p| Some(p.name.as_str()) == n.nodepool.as_deref());
            own.chain(snap.nodepools.iter())
                .flat_map(|p| p.instance_types.iter())
                .chain(scenario.instance_types.iter())
                .find(|t| t.name == it)
                .and_then(|t| {
                    t.offerings
                        .iter()
                        .find(|o| o.zone == zone && o.capacity_type == ct)
                        .or_else(|| t.offerings.iter().find(|o| o.capacity_type == ct))
                })
                .map_or(0.0, |o| o.price)
        });
        let r = row(&mut out, n.nodepool.as_deref().unwrap_or(UNMANAGED));
        r.nodes_before += 1;
        r.nodes_after += 1;
        r.before += p;
        r.after += p;
    }
    for c in &plan.new_claims {
        let r = row(&mut out, &c.nodepool);
        r.nodes_after += 1;
        r.after += c.price_per_hour;
    }
    out.into_values().collect()
}

/// [`cost`] for a person: one row per NodePool and the total.
pub fn cost_table(cost: &[super::disruption::PoolCost]) -> String {
    if cost.is_empty() {
        return String::new();
    }
    let money = |v: f64| format!("{:.4}", v + 0.0);
    let mut rows = vec![
        [
            "NODEPOOL",
            "NODES TODAY",
            "NODES AFTER",
            "$/H TODAY",
            "$/H AFTER",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in cost {
        rows.push(vec![
            c.nodepool.clone(),
            c.nodes_before.to_string(),
            c.nodes_after.to_string(),
            money(c.before),
            money(c.after),
        ]);
    }
    rows.push(vec![
        "total".into(),
        cost.iter()
            .map(|c| c.nodes_before)
            .sum::<usize>()
            .to_string(),
        cost.iter()
            .map(|c| c.nodes_after)
            .sum::<usize>()
            .to_string(),
        money(cost.iter().map(|c| c.before).sum()),
        money(cost.iter().map(|c| c.after).sum()),
    ]);
    format!(
        "\nCost per NodePool, today and with the plan's new capacity:\n{}",
        columns(&rows)
    )
}

impl NodeClaimReport {
    fn new(c: &NewClaim) -> NodeClaimReport {
        NodeClaimReport {
            name: c.name.clone(),
            node_pool: c.nodepool.clone(),
            instance_type: c.instance_type.clone(),
            instance_type_options: c.instance_type_options.clone(),
            zone: c.zone.clone(),
            capacity_type: c.capacity_type.clone(),
            price_per_hour: price(c.price_per_hour),
            labels: c.labels.clone(),
            taints: c
                .taints
                .iter()
                .map(|t| TaintReport {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.as_str().to_string(),
                })
                .collect(),
            allocatable: c.allocatable.to_quantities(),
            pods: c.pods.clone(),
            buffer_pods: Vec::new(),
        }
    }
}

/// Cores with at most two decimals: "3.92", "16", "0.25".
impl Report {
    /// Fills in which pods are CapacityBuffer placeholders (`keys`: [`Scenario::buffer_pods`]).
    pub fn mark_buffer(mut self, keys: &std::collections::BTreeSet<String>) -> Report {
        let of = |pods: &[String]| pods.iter().filter(|p| keys.contains(*p)).cloned().collect();
        for c in &mut self.node_claims {
            c.buffer_pods = of(&c.pods);
        }
        for e in &mut self.existing_nodes {
            e.buffer_pods = of(&e.pods);
        }
        self
    }
}

/// "3" or, when some are CapacityBuffer placeholders, "3 (2 buffer)".
fn pod_count(pods: &[String], buffer: &std::collections::BTreeSet<String>) -> String {
    let b = pods.iter().filter(|p| buffer.contains(*p)).count();
    if b == 0 {
        pods.len().to_string()
    } else {
        format!("{} ({b} buffer)", pods.len())
    }
}

fn cores(milli: i64) -> String {
    let s = format!("{:.2}", milli as f64 / 1000.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Memory in GiB with one decimal, or MiB below a GiB: "14.5Gi", "512Mi".
fn memory(bytes: i64) -> String {
    const GI: f64 = (1u64 << 30) as f64;
    const MI: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if bytes == 0 {
        "0".to_string()
    } else if b >= GI {
        let s = format!("{:.1}", b / GI);
        format!("{}Gi", s.trim_end_matches(".0"))
    } else {
        format!("{}Mi", (b / MI).ceil())
    }
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Left-aligned columns separated by two spaces.
pub(crate) fn columns(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The one-line summary: claims, where pods went, cost against the lower bound, time.
pub fn summary(plan: &Plan, elapsed: Duration) -> String {
    let on_new: usize = plan.new_claims.iter().map(|c| c.pods.len()).sum();
    let on_existing: usize = plan.existing.iter().map(|e| e.pods.len()).sum();
    let total = price(plan.total_price_per_hour);
    let bound = price(plan.cost_lower_bound);
    let ratio = if bound > 0.0 {
        format!("{:.2}", plan.total_price_per_hour / plan.cost_lower_bound)
    } else {
        "n/a".to_string()
    };
    format!(
        "{}, {} placed on new capacity, {on_existing} on existing nodes, {} unschedulable; total ${total:.4}/h, lower bound ${bound:.4}/h (ratio {ratio}); {:.3} ms",
        plural(plan.new_claims.len(), "nodeclaim", "nodeclaims"),
        plural(on_new, "pod", "pods"),
        plan.unschedulable.len(),
        millis(elapsed),
    )
}

/// One line per NodeOverlay: applied (to how many pool instance types) or why not.
fn overlay_lines(scenario: &Scenario) -> String {
    use crate::rules::OverlayVerdict;
    let mut out = String::new();
    for (name, verdict) in &scenario.overlays {
        let line = match verdict {
            OverlayVerdict::Applied { types } => {
                format!("NodeOverlay {name}: applied to {types} NodePool instance types\n")
            }
            OverlayVerdict::Invalid(why) => format!("NodeOverlay {name}: not applied: {why}\n"),
            OverlayVerdict::Conflict { with } => format!(
                "NodeOverlay {name}: not applied: conflicts with NodeOverlay {with} (same weight, same price or resource; {with} wins)\n"
            ),
        };
        out.push_str(&line);
    }
    out
}

/// `simulate --output table`.
pub fn table(scenario: &Scenario, plan: &Plan, elapsed: Duration) -> String {
    let c = &scenario.counts;
    let catalog = if scenario.custom_catalog {
        "InstanceCatalog".to_string()
    } else if scenario.region.is_empty()
        || scenario.region == adze_scheduling::catalog::regions::DEFAULT_REGION
    {
        "embedded EC2 catalog".to_string()
    } else {
        format!("embedded EC2 catalog for {}", scenario.region)
    };
    let mut out = format!(
        "Scenario: {}, {}, {} ({} bound), {}, {}; {catalog} ({}).\n\n",
        plural(c.nodepools, "NodePool", "NodePools"),
        plural(c.pending_pods, "pending pod", "pending pods"),
        plural(c.nodes, "existing node", "existing nodes"),
        c.bound_pods,
        plural(c.daemonsets, "DaemonSet", "DaemonSets"),
        plural(
            c.pod_disruption_budgets,
            "PodDisruptionBudget",
            "PodDisruptionBudgets"
        ),
        plural(
            scenario.instance_types.len(),
            "instance type",
            "instance types"
        ),
    );
    if c.nodeoverlays > 0 {
        out.push_str(&overlay_lines(scenario));
        out.push('\n');
    }
    if c.capacity_buffers > 0 {
        out.push_str(&format!(
            "{}: {} among the pending pods, placed after the real ones (PODS counts them as \"buffer\").\n\n",
            plural(c.capacity_buffers, "CapacityBuffer", "CapacityBuffers"),
            plural(scenario.buffer_pods.len(), "placeholder pod", "placeholder pods"),
        ));
    }
    if !plan.new_claims.is_empty() {
        let mut rows = vec![
            [
                "NODECLAIM",
                "NODEPOOL",
                "INSTANCE TYPE",
                "ZONE",
                "CAPACITY",
                "$/HOUR",
                "PODS",
                "CPU REQ/ALLOC",
                "MEMORY REQ/ALLOC",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for c in &plan.new_claims {
            rows.push(vec![
                c.name.clone(),
                c.nodepool.clone(),
                c.instance_type.clone(),
                c.zone.clone(),
                c.capacity_type.clone(),
                format!("{:.4}", price(c.price_per_hour)),
                pod_count(&c.pods, &scenario.buffer_pods),
                format!("{}/{}", cores(c.requests.cpu), cores(c.allocatable.cpu)),
                format!(
                    "{}/{}",
                    memory(c.requests.memory),
                    memory(c.allocatable.memory)
                ),
            ]);
        }
        out.push_str(&columns(&rows));
        out.push('\n');
    }
    let existing: Vec<_> = plan
        .existing
        .iter()
        .filter(|e| !e.pods.is_empty())
        .collect();
    if !existing.is_empty() {
        out.push_str("Existing nodes receiving pods:\n");
        for e in existing {
            let b = e
                .pods
                .iter()
                .filter(|p| scenario.buffer_pods.contains(*p))
                .count();
            let buffer = if b > 0 {
                format!(" ({b} buffer)")
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  {}: {}{buffer}\n",
                e.node,
                plural(e.pods.len(), "pod", "pods")
            ));
        }
        out.push('\n');
    }
    out.push_str(&summary(plan, elapsed));
    out.push('\n');
    if !plan.unschedulable.is_empty() {
        out.push_str("\nUnschedulable pods:\n");
        for u in &plan.unschedulable {
            out.push_str(&format!("  {}: {}\n", u.pod, u.reason));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_the_way_people_write_them() {
        assert_eq!(cores(3920), "3.92");
        assert_eq!(cores(16000), "16");
        assert_eq!(cores(250), "0.25");
        assert_eq!(memory(29 << 29), "14.5Gi");
        assert_eq!(memory(16 << 30), "16Gi");
        assert_eq!(memory(512 << 20), "512Mi");
        assert_eq!(price(0.123_456), 0.1235);
        assert!(price(-0.0).is_sign_positive());
    }

    #[test]
    fn summary_of_an_empty_plan_has_no_ratio() {
        let s = summary(&Plan::default(), Duration::from_micros(1500));
        assert_eq!(
            s,
            "0 nodeclaims, 0 pods placed on new capacity, 0 on existing nodes, 0 unschedulable; total $0.0000/h, lower bound $0.0000/h (ratio n/a); 1.500 ms"
        );
    }
}
