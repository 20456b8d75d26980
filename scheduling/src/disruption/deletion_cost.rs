//! Pod deletion cost (Karpenter v1.15's `PodDeletionCostManagement` gate; `run
//! --pod-deletion-cost` in Adze): which value of `controller.kubernetes.io/pod-deletion-cost`
//! each ReplicaSet pod on a NodePool's node should carry, so that a Deployment scaling in
//! removes pods from the nodes disruption would take first and consolidation then evicts
//! fewer pods.
//!
//! Every pod of a node gets the same value:
//! - a node being disrupted (tainted `adze.sh/disrupted`, or being deleted): [`DISRUPTING`],
//!   the lowest value there is;
//! - nodes that may be disrupted get a negative rank, `-n` for the first of the `n` ranked
//!   nodes up to `-1` for the last: first the drifted nodes within their pool's budget for
//!   `Drifted`, in the order drift replaces them, then every other node within its pool's
//!   budget for `Underutilized`, in the order consolidation tries them (the same two
//!   orderings the decision uses, not a copy of them);
//! - every other node: no value (the annotation is removed). That is a node that is not
//!   initialized or is nominated for pending pods, is protected by do-not-disrupt or a
//!   PodDisruptionBudget that allows no eviction, runs a pod outside `kube-system` that no
//!   ReplicaSet, Job or DaemonSet controls (a StatefulSet's, a bare pod), is not drifted and
//!   its pool never consolidates (`consolidateAfter: Never`, or a static pool), cannot be
//!   priced, sits in a zone a zonal shift moves away from, or is beyond its pool's budget.
//!
//! Only pods a ReplicaSet controls are written: the annotation means nothing to other
//! controllers. As in Karpenter, a value a user set on such a pod is overwritten or removed:
//! with the flag on, Adze owns the annotation on these pods.
//!
//! [`writes`] turns a ranking into the changes to make, skipping pods that already carry
//! their value, at most [`MAX_NODES_PER_PASS`] nodes a pass besides those being disrupted,
//! ranked nodes before removals. Plain data in and out, deterministic: the controller reads
//! the pods and sends the patches.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::budgets::Allowance;
use super::candidates::{Blocker, Candidate, candidates};
use super::{Input, Reason};

/// The annotation the ReplicaSet controller reads: pods with a lower value go first.
pub const ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The value on the pods of a node already being disrupted: below every rank, so a scale-in
/// takes those pods before any other.
pub const DISRUPTING: i32 = i32::MIN;

/// Nodes whose pods are written in one pass, besides nodes being disrupted (Karpenter's
/// figure): one node changing state can shift every other node's rank, and each pod is one
/// PATCH, so a large cluster catches up over a few passes instead of in one burst.
pub const MAX_NODES_PER_PASS: usize = 50;

/// What controls a pod, as far as the ranking cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    ReplicaSet,
    Job,
    DaemonSet,
    /// Anything else (StatefulSet, a custom controller) or nothing (a bare pod).
    Other,
}

/// A bound pod as the ranking reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub node: String,
    pub owner: Owner,
    /// The annotation's value now, as written (not parsed: a value that is not the wanted
    /// number is rewritten).
    pub current: Option<String>,
}

/// Why a node's pods carry no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unranked {
    /// A reason the node is not a disruption candidate at all.
    Blocked(Blocker),
    /// Its NodeClaim is nominated for pods still pending: they are on their way there.
    Nominated,
    /// It runs this pod (outside `kube-system`) that no ReplicaSet, Job or DaemonSet
    /// controls: disruption would have to evict a pod nothing recreates in step.
    UnmanagedPod(String),
    /// Not drifted, and its pool never consolidates (`consolidateAfter: Never`, static).
    NeverConsolidated,
    /// Beyond its pool's budget for the reason it would be disrupted for.
    OverBudget,
}

impl std::fmt::Display for Unranked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unranked::Blocked(b) => write!(f, "{b}"),
            Unranked::Nominated => f.write_str("node is nominated for pending pods"),
            Unranked::UnmanagedPod(p) => write!(
                f,
                "pod {p} is controlled by no ReplicaSet, Job or DaemonSet"
            ),
            Unranked::NeverConsolidated => {
                f.write_str("node is not drifted and its NodePool never consolidates")
            }
            Unranked::OverBudget => f.write_str("beyond its NodePool's disruption budget"),
        }
    }
}

/// The value for one node's ReplicaSet pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeCost {
    /// Being disrupted: [`DISRUPTING`].
    Disrupting,
    /// Its rank, negative.
    Rank(i32),
    /// No value: the annotation is removed.
    Unranked(Unranked),
}

impl NodeCost {
    /// The annotation's value, `None` for none.
    pub fn value(&self) -> Option<i32> {
        match self {
            NodeCost::Disrupting => Some(DISRUPTING),
            NodeCost::Rank(r) => Some(*r),
            NodeCost::Unranked(_) => None,
        }
    }
}

/// Every node of a NodePool (nodes of no pool are not Adze's: left out) with facts, and
/// its [`NodeCost`]. `nominated`: nodes whose NodeClaims are nominated for pending pods.
pub fn rank(
    input: &Input,
    pods: &[PodRef],
    nominated: &BTreeSet<String>,
) -> BTreeMap<String, NodeCost> {
    let mut out = BTreeMap::new();
    let facts = input.facts_by_node();
    let pooled: BTreeSet<&str> = input
        .snapshot
        .nodes
        .iter()
        .filter(|n| n.nodepool.is_some() && facts.contains_key(n.name.as_str()))
        .map(|n| n.name.as_str())
        .collect();
    let mut unmanaged: HashMap<&str, String> = HashMap::new();
    for p in pods {
        if p.owner == Owner::Other && p.namespace != "kube-system" {
            unmanaged
                .entry(p.node.as_str())
                .or_insert_with(|| format!("{}/{}", p.namespace, p.name));
        }
    }
    let (cands, blocked) = candidates(input);
    for (name, b) in blocked {
        if !pooled.contains(name.as_str()) {
            continue;
        }
        let f = facts[name.as_str()];
        let cost = if b == Blocker::Disrupting && f.disrupting && !f.disrupting_as_not_ready {
            NodeCost::Disrupting
        } else {
            NodeCost::Unranked(Unranked::Blocked(b))
        };
        out.insert(name, cost);
    }
    let mut drifted: Vec<&Candidate> = Vec::new();
    let mut others: Vec<&Candidate> = Vec::new();
    for c in &cands {
        let why = if nominated.contains(&c.name) {
            Some(Unranked::Nominated)
        } else {
            unmanaged
                .get(c.name.as_str())
                .map(|p| Unranked::UnmanagedPod(p.clone()))
        };
        if let Some(why) = why {
            out.insert(c.name.clone(), NodeCost::Unranked(why));
        } else if c.facts.drifted {
            drifted.push(c);
        } else {
            others.push(c);
        }
    }
    // Each group within its own reason's budget: ranking a node disrupts nothing, so a
    // drifted node ranked does not use up room in the Underutilized budget.
    let mut drift_room = Allowance::compute(input);
    let mut consolidation_room = drift_room.clone();
    let mut order: Vec<&Candidate> = Vec::new();
    super::methods::sort_for_replacement(&mut drifted);
    for c in drifted {
        if drift_room.take(&c.nodepool, Reason::Drifted) {
            order.push(c);
        } else {
            // Over the Drifted budget, it may still be consolidated.
            others.push(c);
        }
    }
    super::consolidation::sort_for_consolidation(input, &mut others);
    for c in others {
        let consolidates = input
            .policy(&c.nodepool)
            .is_some_and(|p| p.consolidate_after.is_some() && !p.fixed_size);
        if !consolidates {
            let why = if c.facts.drifted {
                Unranked::OverBudget
            } else {
                Unranked::NeverConsolidated
            };
            out.insert(c.name.clone(), NodeCost::Unranked(why));
        } else if consolidation_room.take(&c.nodepool, Reason::Underutilized) {
            order.push(c);
        } else {
            out.insert(c.name.clone(), NodeCost::Unranked(Unranked::OverBudget));
        }
    }
    // Ranks -n..=-1; n is at most the node count, far below i32's range, but a count that
    // does not fit is clamped rather than wrapped.
    let n = i32::try_from(order.len()).unwrap_or(i32::MAX);
    for (i, c) in order.into_iter().enumerate() {
        let i = i32::try_from(i).unwrap_or(i32::MAX);
        out.insert(c.name.clone(), NodeCost::Rank(i.saturating_sub(n)));
    }
    out
}

/// One annotation change: set it to `value`, or remove it (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodWrite {
    pub namespace: String,
    pub name: String,
    pub node: String,
    pub value: Option<i32>,
}

/// What a pass writes, and what it leaves for later.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// In the order to send them: disrupting nodes' pods, then ranked nodes' in rank order,
    /// then removals in node-name order.
    pub writes: Vec<PodWrite>,
    /// ReplicaSet pods that already carry their value.
    pub unchanged: usize,
    /// Nodes with a change left for a later pass ([`MAX_NODES_PER_PASS`]).
    pub deferred_nodes: usize,
}

/// The changes that bring `pods` (ReplicaSet pods only; others are never touched) in line
/// with `ranking`, at most `max_nodes` nodes besides disrupting ones. Pods on nodes the
/// ranking does not cover (no NodePool) are left alone.
pub fn writes(ranking: &BTreeMap<String, NodeCost>, pods: &[PodRef], max_nodes: usize) -> Writes {
    let mut out = Writes::default();
    let mut by_node: BTreeMap<&str, Vec<PodWrite>> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.owner == Owner::ReplicaSet) {
        let Some(cost) = ranking.get(&p.node) else {
            continue;
        };
        let want = cost.value();
        let have = p.current.as_deref();
        let same = match (want, have) {
            (None, None) => true,
            (Some(v), Some(h)) => h == v.to_string(),
            _ => false,
        };
        if same {
            out.unchanged += 1;
            continue;
        }
        by_node.entry(p.node.as_str()).or_default().push(PodWrite {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            node: p.node.clone(),
            value: want,
        });
    }
    let key = |node: &str| match &ranking[node] {
        NodeCost::Disrupting => (0, i32::MIN),
        NodeCost::Rank(r) => (1, *r),
        NodeCost::Unranked(_) => (2, 0),
    };
    let mut nodes: Vec<(&str, Vec<PodWrite>)> = by_node.into_iter().collect();
    // Stable: nodes of equal key stay in name order.
    nodes.sort_by_key(|(n, _)| key(n));
    let mut budget = max_nodes;
    for (node, mut ws) in nodes {
        if !matches!(ranking[node], NodeCost::Disrupting) {
            if budget == 0 {
                out.deferred_nodes += 1;
                continue;
            }
            budget -= 1;
        }
        ws.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out.writes.extend(ws);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disruption::{Budget, BudgetNodes};
    use crate::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};

    const A: &str = ZONES[0];

    fn rs(node: &str, name: &str) -> PodRef {
        PodRef {
            namespace: "default".into(),
            name: name.into(),
            node: node.into(),
            owner: Owner::ReplicaSet,
            current: None,
        }
    }

    /// Three nodes: `light` (one small pod), `mid`, `heavy`; budgets unlimited.
    fn three() -> ClusterBuilder {
        ClusterBuilder::new(pool("default", small_catalog()))
            .node("heavy", "m.4x", A, false)
            .node("mid", "m.4x", A, false)
            .node("light", "m.4x", A, false)
            .pod("heavy", pod("h").cpu(12_000).mem(GI).build())
            .pod("mid", pod("m").cpu(6000).mem(GI).build())
            .pod("light", pod("l").cpu(500).mem(GI).build())
            .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Percent(100))])
    }

    fn pods3() -> Vec<PodRef> {
        vec![rs("heavy", "h"), rs("mid", "m"), rs("light", "l")]
    }

    #[test]
    fn nodes_are_ranked_in_consolidation_order_from_minus_n() {
        let r = rank(&three().build(), &pods3(), &BTreeSet::new());
        assert_eq!(r["light"], NodeCost::Rank(-3));
        assert_eq!(r["mid"], NodeCost::Rank(-2));
        assert_eq!(r["heavy"], NodeCost::Rank(-1));
    }

    #[test]
    fn drifted_nodes_rank_ahead_and_disrupting_nodes_get_the_lowest_value() {
        let input = three()
            .facts("heavy", |f| {
                f.drifted = true;
                f.drifted_since = Some(5);
            })
            .node("going", "m.4x", A, false)
            .facts("going", |f| f.disrupting = true)
            .build();
        let r = rank(&input, &pods3(), &BTreeSet::new());
        assert_eq!(r["heavy"], NodeCost::Rank(-3), "drifted first: {r:?}");
        assert_eq!(r["light"], NodeCost::Rank(-2));
        assert_eq!(r["mid"], NodeCost::Rank(-1));
        assert_eq!(r["going"], NodeCost::Disrupting);
        assert_eq!(r["going"].value(), Some(i32::MIN));
    }

    #[test]
    fn a_not_ready_node_is_not_treated_as_being_disrupted() {
        let input = three()
            .facts("mid", |f| {
                f.disrupting = true;
                f.disrupting_as_not_ready = true;
            })
            .build();
        let r = rank(&input, &pods3(), &BTreeSet::new());
        assert_eq!(
            r["mid"],
            NodeCost::Unranked(Unranked::Blocked(Blocker::Disrupting))
        );
        assert_eq!(r["light"], NodeCost::Rank(-2));
    }

    #[test]
    fn protected_nominated_and_unmanaged_pod_nodes_are_unranked() {
        let input = three()
            .node("pinned", "m.4x", A, false)
            .pod("pinned", pod("p").cpu(100).mem(GI).build())
            .do_not_disrupt_pod("p")
            .node("db", "m.4x", A, false)
            .node("fresh", "m.4x", A, false)
            .build();
        let mut pods = pods3();
        pods.push(rs("pinned", "p"));
        pods.push(PodRef {
            owner: Owner::Other,
            ..rs("db", "db-0")
        });
        // A bare pod in kube-system does not hold its node back.
        pods.push(PodRef {
            namespace: "kube-system".into(),
            owner: Owner::Other,
            ..rs("light", "static")
        });
        let nominated = BTreeSet::from(["fresh".to_string()]);
        let r = rank(&input, &pods, &nominated);
        assert!(matches!(
            r["pinned"],
            NodeCost::Unranked(Unranked::Blocked(Blocker::DoNotDisruptPod(_)))
        ));
        assert_eq!(
            r["db"],
            NodeCost::Unranked(Unranked::UnmanagedPod("default/db-0".into()))
        );
        assert_eq!(r["fresh"], NodeCost::Unranked(Unranked::Nominated));
        assert_eq!(r["light"], NodeCost::Rank(-3));
    }

    #[test]
    fn consolidate_after_never_unranks_all_but_drifted_nodes() {
        let input = three()
            .policy(|p| p.consolidate_after = None)
            .facts("mid", |f| f.drifted = true)
            .build();
        let r = rank(&input, &pods3(), &BTreeSet::new());
        assert_eq!(r["mid"], NodeCost::Rank(-1));
        assert_eq!(r["light"], NodeCost::Unranked(Unranked::NeverConsolidated));
        assert_eq!(r["heavy"], NodeCost::Unranked(Unranked::NeverConsolidated));
    }

    #[test]
    fn the_budget_limits_how_many_nodes_are_ranked() {
        let input = three()
            .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Count(1))])
            .build();
        let r = rank(&input, &pods3(), &BTreeSet::new());
        assert_eq!(r["light"], NodeCost::Rank(-1));
        assert_eq!(r["mid"], NodeCost::Unranked(Unranked::OverBudget));
        assert_eq!(r["heavy"], NodeCost::Unranked(Unranked::OverBudget));
    }

    #[test]
    fn nodes_of_no_nodepool_are_left_out() {
        let mut input = three().build();
        for n in &mut input.snapshot.nodes {
            if n.name == "mid" {
                n.nodepool = None;
            }
        }
        let r = rank(&input, &pods3(), &BTreeSet::new());
        assert!(!r.contains_key("mid"), "{r:?}");
        let w = writes(&r, &pods3(), MAX_NODES_PER_PASS);
        assert!(w.writes.iter().all(|w| w.node != "mid"), "{w:?}");
    }

    #[test]
    fn the_ranking_is_deterministic() {
        let input = three().build();
        let a = rank(&input, &pods3(), &BTreeSet::new());
        for _ in 0..5 {
            assert_eq!(rank(&input, &pods3(), &BTreeSet::new()), a);
        }
    }

    #[test]
    fn only_replicaset_pods_whose_value_differs_are_written() {
        let ranking = BTreeMap::from([
            ("a".to_string(), NodeCost::Rank(-2)),
            ("b".to_string(), NodeCost::Rank(-1)),
            (
                "c".to_string(),
                NodeCost::Unranked(Unranked::NeverConsolidated),
            ),
        ]);
        let pods = vec![
            PodRef {
                current: Some("-2".into()),
                ..rs("a", "same")
            },
            PodRef {
                current: Some("100".into()),
                ..rs("a", "user-set")
            },
            rs("b", "new"),
            PodRef {
                owner: Owner::Job,
                ..rs("b", "job")
            },
            PodRef {
                current: Some("-7".into()),
                ..rs("c", "stale")
            },
            rs("c", "nothing-to-remove"),
        ];
        let w = writes(&ranking, &pods, MAX_NODES_PER_PASS);
        let got: Vec<(&str, Option<i32>)> = w
            .writes
            .iter()
            .map(|w| (w.name.as_str(), w.value))
            .collect();
        assert_eq!(
            got,
            vec![("user-set", Some(-2)), ("new", Some(-1)), ("stale", None)]
        );
        assert_eq!(w.unchanged, 2);
        assert_eq!(w.deferred_nodes, 0);
    }

    #[test]
    fn at_most_max_nodes_a_pass_besides_disrupting_ones_ranked_before_removals() {
        let mut ranking = BTreeMap::new();
        let mut pods = Vec::new();
        for i in 0..4 {
            let n = format!("r{i}");
            ranking.insert(n.clone(), NodeCost::Rank(i - 4));
            pods.push(rs(&n, &format!("p{i}")));
        }
        ranking.insert("gone".into(), NodeCost::Unranked(Unranked::OverBudget));
        pods.push(PodRef {
            current: Some("-1".into()),
            ..rs("gone", "old")
        });
        ranking.insert("x".into(), NodeCost::Disrupting);
        pods.push(rs("x", "leaving"));
        let w = writes(&ranking, &pods, 2);
        let nodes: Vec<&str> = w.writes.iter().map(|w| w.node.as_str()).collect();
        assert_eq!(nodes, vec!["x", "r0", "r1"]);
        assert_eq!(w.deferred_nodes, 3);
        let all = writes(&ranking, &pods, 10);
        assert_eq!(all.writes.last().map(|w| w.node.as_str()), Some("gone"));
    }
}
