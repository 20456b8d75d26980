//! Which nodes may be voluntarily disrupted at all, and why the others may not. Budgets are
//! not checked here: they limit how many candidates one decision takes, not which.
//!
//! A candidate is an initialized node of a NodePool that has a policy, not in flight, not
//! already disrupting, with the labels and a catalog entry that price it, without do-not-disrupt (any of [`labels::DO_NOT_DISRUPT_KEYS`]) on the
//! node or any of its pods, DaemonSet pods included (a pod's duration form protects only
//! until it runs out), and whose pods' PodDisruptionBudgets each allow at least one eviction
//! now. (A decision that takes several nodes also keeps, per PDB, the pods it evicts
//! within what the PDB allows; see [`super::consolidation`].)

use std::collections::HashMap;

use crate::labels;
use crate::node::ExistingNode;

use super::{ConsolidationPolicy, Input, NodeFacts, PoolPolicy, Reason, UnixSeconds};

/// A node that may be disrupted, with what deciding about it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Index into `input.snapshot.nodes`.
    pub node: usize,
    pub name: String,
    pub nodepool: String,
    pub instance_type: String,
    pub capacity_type: String,
    pub zone: String,
    /// USD per hour: the node's own price, else its type's offering in its zone and
    /// capacity type, else 0 (unknown).
    pub price: f64,
    /// Indices into `input.snapshot.bound` of its non-DaemonSet pods.
    pub pods: Vec<usize>,
    /// PDB names its pods belong to, once per pod.
    pub pdbs: Vec<String>,
    pub facts: NodeFacts,
    /// Largest fraction of allocatable CPU or memory its non-DaemonSet pods request.
    pub utilization: f64,
}

/// Why a node is not a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Not registered and initialized yet, or no facts were given.
    NotInitialized,
    /// An in-flight NodeClaim.
    InFlight,
    /// Already being deleted, tainted for disruption, or not Ready.
    Disrupting,
    /// Owned by no NodePool, or by one without a policy.
    Unmanaged,
    DoNotDisruptNode,
    DoNotDisruptPod(String),
    /// The pod's PDB allows no eviction now.
    PdbForbids {
        pod: String,
        pdb: String,
    },
    /// In a zone an ARC zonal shift moves the cluster away from (the zone as the shift names
    /// it: its ID, or its name): no voluntary method touches it until the shift ends.
    ZonalShift(String),
    /// The node lacks its instance-type, capacity-type or zone label, or is of a type no
    /// NodePool's catalog knows: it cannot be priced, so no saving can be worked out for it
    /// (Karpenter does not make such nodes candidates either). What is missing.
    Unresolvable(String),
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::NotInitialized => f.write_str("node is not initialized"),
            Blocker::InFlight => f.write_str("node is still launching"),
            Blocker::Disrupting => f.write_str("node is already being disrupted or not ready"),
            Blocker::Unmanaged => f.write_str("node belongs to no NodePool with a policy"),
            Blocker::DoNotDisruptNode => {
                write!(
                    f,
                    "node is annotated {}",
                    labels::DO_NOT_DISRUPT_KEYS.join(" or ")
                )
            }
            Blocker::DoNotDisruptPod(p) => {
                write!(
                    f,
                    "pod {p} is annotated {}",
                    labels::DO_NOT_DISRUPT_KEYS.join(" or ")
                )
            }
            Blocker::PdbForbids { pod, pdb } => {
                write!(
                    f,
                    "PodDisruptionBudget {pdb} allows no eviction of pod {pod}"
                )
            }
            Blocker::ZonalShift(zone) => write!(
                f,
                "a zonal shift moves the cluster away from zone {zone}; voluntary disruption there waits until it ends"
            ),
            Blocker::Unresolvable(what) => write!(f, "node cannot be priced: {what}"),
        }
    }
}

impl Blocker {
    /// Set by a user on a node or its pods (do-not-disrupt, a PodDisruptionBudget), as
    /// opposed to a state the node passes through.
    /// A short machine-readable name, for metrics: the variant's name.
    pub fn reason(&self) -> &'static str {
        match self {
            Blocker::NotInitialized => "NotInitialized",
            Blocker::InFlight => "InFlight",
            Blocker::Disrupting => "Disrupting",
            Blocker::Unmanaged => "Unmanaged",
            Blocker::DoNotDisruptNode => "DoNotDisruptNode",
            Blocker::DoNotDisruptPod(_) => "DoNotDisruptPod",
            Blocker::PdbForbids { .. } => "PdbForbids",
            Blocker::ZonalShift(_) => "ZonalShift",
            Blocker::Unresolvable(_) => "Unresolvable",
        }
    }

    pub fn set_by_user(&self) -> bool {
        matches!(
            self,
            Blocker::DoNotDisruptNode | Blocker::DoNotDisruptPod(_) | Blocker::PdbForbids { .. }
        )
    }

    /// Worth telling the user about on the node (the `DisruptionBlocked` event): what they
    /// set, and a zonal shift, which holds the node back only for a while.
    pub fn announced(&self) -> bool {
        self.set_by_user() || matches!(self, Blocker::ZonalShift(_))
    }
}

/// Whether a node of a pool with `policy` qualifies for `reason` at `now` (blockers and
/// budgets aside); `empty` is "has no non-DaemonSet pods". Never for [`Reason::Expired`]:
/// expiry is forceful and not a voluntary method ([`super::expiry`]); nor for
/// [`Reason::Unhealthy`], which reads node health, not candidates ([`super::repair_method`]).
pub(super) fn qualifies(
    policy: &PoolPolicy,
    facts: &NodeFacts,
    empty: bool,
    now: UnixSeconds,
    reason: Reason,
) -> bool {
    match reason {
        Reason::Drifted => facts.drifted,
        Reason::Expired | Reason::Unhealthy => false,
        Reason::Empty => !policy.fixed_size && empty && consolidatable(policy, facts, now),
        Reason::Underutilized => {
            !policy.fixed_size
                && policy.consolidation != ConsolidationPolicy::WhenEmpty
                && consolidatable(policy, facts, now)
        }
    }
}

/// Karpenter v1's `Consolidatable` condition: the node is initialized and no pod has been
/// bound to it or left it for the pool's `consolidateAfter` ("Never" turns it off). Both
/// consolidation policies start from it; `WhenEmpty` also needs the node empty.
pub fn consolidatable(policy: &PoolPolicy, facts: &NodeFacts, now: UnixSeconds) -> bool {
    facts.initialized
        && policy
            .consolidate_after
            .is_some_and(|d| now - facts.last_pod_event >= d.as_secs() as i64)
}

/// A node that some method would consider but for a blocker a user set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedNode {
    pub node: String,
    pub blocker: Blocker,
    /// The methods it qualifies for, in [`Reason::ALL`] order; never empty.
    pub methods: Vec<Reason>,
}

impl BlockedNode {
    /// For the `DisruptionBlocked` event: what stops it and what it would otherwise be
    /// considered for. The same blocker on the same node gives the same message, so
    /// repeats aggregate into one Event.
    pub fn message(&self) -> String {
        let methods: Vec<&str> = self.methods.iter().map(|m| m.as_str()).collect();
        format!(
            "Cannot disrupt node: {} (otherwise eligible: {})",
            self.blocker,
            methods.join(", ")
        )
    }
}

/// Nodes blocked by a user-set [`Blocker`] or a zonal shift that qualify for at least one method (drifted,
/// or past `consolidateAfter`), in node order. Nodes no method would touch are left
/// out, so a pinned pod on a busy, young node says nothing.
pub fn blocked(input: &Input) -> Vec<BlockedNode> {
    let facts = input.facts_by_node();
    let (_, blocked) = candidates(input);
    // Looked up per blocked node: indexed once, not scanned per node (nodes × pods).
    let nodes: HashMap<&str, &ExistingNode> = input
        .snapshot
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let busy: std::collections::HashSet<&str> = input
        .snapshot
        .bound
        .iter()
        .filter(|b| !b.daemon)
        .map(|b| b.node.as_str())
        .collect();
    blocked
        .into_iter()
        .filter(|(_, b)| b.announced())
        .filter_map(|(name, blocker)| {
            let node = *nodes.get(name.as_str())?;
            let policy = input.policy(node.nodepool.as_deref()?)?;
            let f = facts.get(name.as_str())?;
            let empty = !busy.contains(name.as_str());
            let methods: Vec<Reason> = Reason::ALL
                .into_iter()
                .filter(|&r| qualifies(policy, f, empty, input.now, r))
                .collect();
            (!methods.is_empty()).then_some(BlockedNode {
                node: name,
                blocker,
                methods,
            })
        })
        .collect()
}

/// Candidates (in node order) and, for every other node with facts, the first reason it is
/// not one.
pub fn candidates(input: &Input) -> (Vec<Candidate>, Vec<(String, Blocker)>) {
    let facts = input.facts_by_node();
    let pod_facts: HashMap<&str, &super::PodFacts> =
        input.pods.iter().map(|p| (p.pod.as_str(), p)).collect();
    let pdb_allowed = input.pdb_allowance();
    let mut on_node: HashMap<&str, Vec<usize>> = HashMap::new();
    // DaemonSet pods are not evicted, but a do-not-disrupt annotation or a PDB allowing no
    // eviction on one still protects its node (Karpenter checks every pod on the node).
    let mut daemons_on: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, b) in input.snapshot.bound.iter().enumerate() {
        let map = if b.daemon {
            &mut daemons_on
        } else {
            &mut on_node
        };
        map.entry(b.node.as_str()).or_default().push(i);
    }
    let mut out = Vec::new();
    let mut blocked = Vec::new();
    for (ni, node) in input.snapshot.nodes.iter().enumerate() {
        let pods = on_node.remove(node.name.as_str()).unwrap_or_default();
        let daemons = daemons_on.remove(node.name.as_str()).unwrap_or_default();
        let Some(f) = facts.get(node.name.as_str()) else {
            continue;
        };
        let mut pdbs = Vec::new();
        let block = (|| {
            if node.in_flight {
                return Some(Blocker::InFlight);
            }
            if !f.initialized {
                return Some(Blocker::NotInitialized);
            }
            if f.disrupting || node.unschedulable {
                return Some(Blocker::Disrupting);
            }
            match node.nodepool.as_deref() {
                Some(p) if input.policy(p).is_some() => {}
                _ => return Some(Blocker::Unmanaged),
            }
            if f.do_not_disrupt {
                return Some(Blocker::DoNotDisruptNode);
            }
            if let Some(what) = unresolvable(input, node) {
                return Some(Blocker::Unresolvable(what));
            }
            if let Some(zone) = shifted_zone(&input.zones_away, node) {
                return Some(Blocker::ZonalShift(zone));
            }
            for &bi in pods.iter().chain(&daemons) {
                let daemon = input.snapshot.bound[bi].daemon;
                let key = input.snapshot.bound[bi].pod.key();
                let Some(pf) = pod_facts.get(key.as_str()) else {
                    continue;
                };
                if pf.protected(input.now) {
                    return Some(Blocker::DoNotDisruptPod(key));
                }
                for pdb in &pf.pdbs {
                    // A PDB the input does not describe is treated as allowing nothing:
                    // not knowing is not permission.
                    if pdb_allowed.get(pdb.as_str()).copied().unwrap_or(0) == 0 {
                        return Some(Blocker::PdbForbids {
                            pod: key,
                            pdb: pdb.clone(),
                        });
                    }
                    if !daemon {
                        pdbs.push(pdb.clone());
                    }
                }
            }
            None
        })();
        if let Some(b) = block {
            blocked.push((node.name.clone(), b));
            continue;
        }
        let mut used = crate::resources::Resources::default();
        for &bi in &pods {
            used.add(&input.snapshot.bound[bi].pod.requests);
        }
        let frac = |u: i64, a: i64| if a > 0 { u as f64 / a as f64 } else { 0.0 };
        let utilization =
            frac(used.cpu, node.allocatable.cpu).max(frac(used.memory, node.allocatable.memory));
        let (instance_type, capacity_type, zone) = node_labels(node);
        out.push(Candidate {
            node: ni,
            name: node.name.clone(),
            nodepool: node.nodepool.clone().unwrap_or_default(),
            price: node_price(input, node),
            instance_type,
            capacity_type,
            zone,
            pods,
            pdbs,
            facts: (*f).clone(),
            utilization,
        });
    }
    (out, blocked)
}

/// What keeps `node` from being priced, if anything: a missing instance-type, capacity-type
/// or zone label, or an instance type no NodePool's catalog lists (a node with its own
/// price needs no catalog entry).
fn unresolvable(input: &Input, node: &ExistingNode) -> Option<String> {
    let (it, ct, zone) = node_labels(node);
    for (value, key) in [
        (&it, labels::INSTANCE_TYPE),
        (&ct, labels::CAPACITY_TYPE),
        (&zone, labels::ZONE),
    ] {
        if value.is_empty() {
            return Some(format!("no {key} label"));
        }
    }
    let known = node.price.is_some()
        || input
            .snapshot
            .nodepools
            .iter()
            .chain(&input.static_pools)
            .flat_map(|p| p.instance_types.iter())
            .any(|t| t.name == it);
    (!known).then(|| format!("instance type {it} is in no NodePool's catalog"))
}

/// The zone (as the shift names it) of `node` that a zonal shift moves away from, if any.
pub(super) fn shifted_zone(
    away: &std::collections::BTreeSet<String>,
    node: &ExistingNode,
) -> Option<String> {
    let zone = label(node, labels::ZONE);
    let zone_id = label(node, labels::ZONE_ID);
    let id = (!zone_id.is_empty()).then_some(zone_id.as_str());
    if !crate::zonal_shift::is_away(away, &zone, id) {
        return None;
    }
    Some(match id {
        Some(id) if away.contains(id) => id.to_string(),
        _ => zone,
    })
}

fn label(node: &ExistingNode, key: &str) -> String {
    node.requirements
        .get(key)
        .and_then(|r| r.single_value())
        .unwrap_or_default()
        .to_string()
}

/// Instance type, capacity type and zone from the node's labels.
pub(super) fn node_labels(node: &ExistingNode) -> (String, String, String) {
    (
        label(node, labels::INSTANCE_TYPE),
        label(node, labels::CAPACITY_TYPE),
        label(node, labels::ZONE),
    )
}

/// The node's price per hour: its own, else its instance type's offering in its zone and
/// capacity type from its pool's catalog (any pool's if its own lacks the type), else 0.
/// The offering's availability does not matter: it says whether a new node can launch
/// there, not what a running one costs. A price that is not a finite number counts as
/// unknown, so one bad price cannot turn its pool's `Balanced` totals into NaN (which would
/// refuse every move of the pool).
pub fn node_price(input: &Input, node: &ExistingNode) -> f64 {
    if let Some(p) = node.price.filter(|p| p.is_finite()) {
        return p;
    }
    let (it, ct, zone) = node_labels(node);
    // A static pool's nodes are priced from the pool as its replacements are planned.
    let pools = input.snapshot.nodepools.iter().chain(&input.static_pools);
    let own = pools
        .clone()
        .filter(|p| Some(p.name.as_str()) == node.nodepool.as_deref());
    own.chain(pools)
        .flat_map(|p| p.instance_types.iter())
        .find(|t| t.name == it)
        .and_then(|t| {
            t.offerings
                .iter()
                .find(|o| o.zone == zone && o.capacity_type == ct)
                .or_else(|| t.offerings.iter().find(|o| o.capacity_type == ct))
        })
        .map(|o| o.price)
        .filter(|p| p.is_finite())
        .unwrap_or(0.0)
}
