//! Consolidation: remove nodes whose pods fit on the other nodes, plus at most one
//! replacement cheaper than what is removed.
//!
//! Search. Candidates are ordered emptiest first (lowest share of allocatable CPU or memory
//! requested; on ties the lower disruption cost, Karpenter's: pods' eviction costs weighted
//! by the share of the node's lifetime left; then pricier first), then filtered to an *admissible* list: walking that
//! order, a node is kept while its pool's budget and its pods' PDBs still have room, so any
//! prefix of the list is within budget. **Multi-node**: the longest prefix that passes an
//! aggregate resource test (its pods' total requests within the other nodes' free room plus
//! a type cheaper than the prefix) is tried first; if the scheduler cannot empty it, binary
//! search below it for the longest prefix (of at least two nodes) the scheduler can empty
//! onto the rest of the cluster plus at most one cheaper new node. **Single-node**, if that finds nothing: every
//! candidate in order, first a resource-only check (do its pods first-fit onto the other
//! nodes' free room, with the leftover in one type cheaper than the node?) and then the
//! scheduler; the first that works is the decision. When multi-node finds a replacement,
//! single-node runs too and the move saving more wins (so two cheap nodes are not merged into
//! one dearer than either where deleting one of them saves more). No candidate cap and no timeout: every
//! candidate is considered, and each scheduler call is one full placement of the displaced
//! pods, so the cost is O(log n) scheduler runs for multi-node plus one per single-node
//! candidate that passes the resource check.
//!
//! Acceptance ([`evaluate`]): every displaced pod placed; at most one new claim; its price
//! below the removed nodes' total, and its instance-type options trimmed to those cheaper
//! than what is removed (so whichever the cloud launches saves money); a spot node replaced
//! by spot only when at least [`super::Options::spot_to_spot_min_types`] such cheaper types
//! remain (fewer options means a higher chance the new spot node is interrupted soon); and,
//! under the Strict minValues policy, the trimmed options still meeting every `minValues`.
//!
//! `Balanced` pools ([`super::ConsolidationPolicy::Balanced`]) add one test, Karpenter's:
//! a move must save a share of its pool's cost at least half the share of its pool's
//! disruption it causes ([`balanced_score`]). A pool with `minSavingsPerDisruptionCost` adds
//! another to moves that launch a replacement: the hourly savings over the removed nodes'
//! disruption cost must reach the highest threshold of their pools ([`savings`]); it is
//! checked once the options are cut to the cheaper ones, before the spot-to-spot count.

use std::collections::BTreeMap;

use super::Reason;
use super::candidates::Candidate;
use super::decision::Decision;
use super::methods::{Context, Invalidated, pdb_overrun};
use super::savings;
use crate::labels;
use crate::resources::Resources;

/// The best consolidation, if any.
pub(super) fn consolidate(ctx: &Context) -> Option<Decision> {
    let mut eligible: Vec<&Candidate> = ctx
        .candidates
        .iter()
        .filter(|c| {
            ctx.eligible(c, Reason::Underutilized)
                && ctx.allowance.left(&c.nodepool, Reason::Underutilized) > 0
        })
        .collect();
    sort_for_consolidation(ctx.input, &mut eligible);
    let list = admissible(ctx, &eligible);
    match multi_node(ctx, &list) {
        Some(multi) if multi.action() == super::Action::Delete => Some(multi),
        multi => better(multi, single_node(ctx, &eligible)),
    }
}

/// A multi-node replacement against the single-node move: the one that saves more, and on
/// equal savings the one evicting fewer pods. Merging nodes into a new one can save less
/// than deleting one of them outright (two cheap nodes replaced by one a little dearer than
/// either, where the pods of one fit on the other); Karpenter avoids those merges by
/// refusing a replacement of the same type as a removed node, which misses the merge whose
/// replacement is of another type.
fn better(multi: Option<Decision>, single: Option<Decision>) -> Option<Decision> {
    match (multi, single) {
        (Some(m), Some(s)) => {
            let (ms, ss) = (m.saving(), s.saving());
            let fewer = s.pods().count() < m.pods().count();
            if ss > ms + 1e-9 || ((ss - ms).abs() <= 1e-9 && fewer) {
                Some(s)
            } else {
                Some(m)
            }
        }
        (m, s) => m.or(s),
    }
}

/// The consolidation order: emptiest first (lowest utilization), then the lower disruption
/// cost ([`candidate_disruption_cost`]), then pricier first, then by name. One definition,
/// shared with the pod deletion cost ranking ([`super::deletion_cost`]), so the nodes
/// ReplicaSets are steered away from are the ones consolidation would take first.
pub(super) fn sort_for_consolidation(input: &super::Input, list: &mut [&Candidate]) {
    let cost: std::collections::HashMap<&str, f64> = list
        .iter()
        .map(|c| (c.name.as_str(), candidate_disruption_cost(input, c)))
        .collect();
    list.sort_by(|a, b| {
        a.utilization
            .total_cmp(&b.utilization)
            .then_with(|| cost[a.name.as_str()].total_cmp(&cost[b.name.as_str()]))
            .then_with(|| b.price.total_cmp(&a.price))
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// Karpenter's disruption cost of a candidate, the tie-break of the consolidation order:
/// its pods' eviction costs ([`pod_disruption_cost`]) weighted by the share of the node's
/// lifetime (`expireAfter`) still ahead of it, so of two equally used nodes the one with
/// fewer pods, or closer to expiry, goes first. Also what [`savings`] divides the savings by.
fn candidate_disruption_cost(input: &super::Input, c: &Candidate) -> f64 {
    let bound = &input.snapshot.bound;
    let pods: f64 = c
        .pods
        .iter()
        .map(|&b| pod_disruption_cost(&bound[b].pod))
        .sum();
    let remaining = c.facts.expire_after.map_or(1.0, |d| {
        let total = d.as_secs_f64();
        if total <= 0.0 {
            return 0.0;
        }
        let left = (c.facts.created as f64 + total - input.now as f64) / total;
        left.clamp(0.0, 1.0)
    });
    pods * remaining
}

/// `order` cut down so that every prefix is within budgets and PDBs.
fn admissible<'c>(ctx: &Context, order: &[&'c Candidate]) -> Vec<&'c Candidate> {
    let mut allowance = ctx.allowance.clone();
    let mut pdb_left: BTreeMap<&str, u32> = ctx.input.pdb_allowance();
    let mut out = Vec::new();
    for c in order {
        let mut need: BTreeMap<&str, u32> = BTreeMap::new();
        for p in &c.pdbs {
            *need.entry(p.as_str()).or_default() += 1;
        }
        if need
            .iter()
            .any(|(p, n)| pdb_left.get(p).copied().unwrap_or(0) < *n)
        {
            continue;
        }
        if !allowance.take(&c.nodepool, Reason::Underutilized) {
            continue;
        }
        for (p, n) in need {
            if let Some(l) = pdb_left.get_mut(p) {
                *l -= n;
            }
        }
        out.push(*c);
    }
    out
}

fn multi_node(ctx: &Context, list: &[&Candidate]) -> Option<Decision> {
    let quick = QuickCheck::new(ctx);
    let (mut lo, mut hi) = (2usize, quick.longest_plausible_prefix(ctx, list));
    // The aggregate cap is often close: one placement may settle it.
    if hi >= lo {
        if let Ok(d) = evaluate(ctx, &list[..hi]) {
            return Some(d);
        }
        hi -= 1;
    }
    let mut best = None;
    while lo <= hi {
        let mid = (lo + hi) / 2;
        match evaluate(ctx, &list[..mid]) {
            Ok(d) => {
                best = Some(d);
                lo = mid + 1;
            }
            Err(_) => hi = mid - 1,
        }
    }
    best
}

fn single_node(ctx: &Context, order: &[&Candidate]) -> Option<Decision> {
    let quick = QuickCheck::new(ctx);
    order
        .iter()
        .filter(|c| quick.might_work(ctx, c))
        .find_map(|c| evaluate(ctx, &[c]).ok())
}

/// Runs the scheduler for removing `set` and accepts or refuses the result as a
/// consolidation (see the module docs).
pub(super) fn evaluate(ctx: &Context, set: &[&Candidate]) -> Result<Decision, Invalidated> {
    if let Some(pdb) = pdb_overrun(ctx.input, set) {
        return Err(Invalidated::Pdb(pdb));
    }
    let idx: Vec<usize> = set.iter().map(|c| c.node).collect();
    let mut plan = ctx.sim.run(&idx);
    if let Some(u) = plan.unschedulable.first() {
        return Err(Invalidated::PodsDoNotFit(format!(
            "{}: {}",
            u.pod, u.reason
        )));
    }
    if plan.new_claims.len() > 1 {
        return Err(Invalidated::PodsDoNotFit(format!(
            "they need {} new nodes",
            plan.new_claims.len()
        )));
    }
    let removed: f64 = set.iter().map(|c| c.price).sum();
    let mut checked = None;
    if let Some(claim) = plan.new_claims.first_mut() {
        if claim.price_per_hour >= removed {
            return Err(Invalidated::NotWorthIt(format!(
                "the replacement costs ${:.4}/h, the removed nodes ${removed:.4}/h",
                claim.price_per_hour
            )));
        }
        let pool = ctx
            .input
            .snapshot
            .nodepools
            .iter()
            .find(|p| p.name == claim.nodepool);
        let price_of = |name: &str| {
            pool.and_then(|p| p.instance_types.iter().find(|t| t.name == name))
                .and_then(|t| t.cheapest_offering(&claim.requirements))
                .map(|o| o.price)
        };
        // Launching a type that is being removed only shuffles pods: every option must also
        // be cheaper than each removed node of a type among the options.
        let ceiling = set
            .iter()
            .filter(|c| claim.instance_type_options.contains(&c.instance_type))
            .map(|c| c.price)
            .fold(removed, f64::min);
        claim
            .instance_type_options
            .retain(|t| price_of(t).is_some_and(|p| p < ceiling));
        // Options are cheapest first, so this only fails when every option was dropped.
        if !claim.instance_type_options.contains(&claim.instance_type) {
            return Err(Invalidated::NotWorthIt(
                "no replacement type is cheaper than the nodes it replaces".to_string(),
            ));
        }
        let threshold = savings::threshold(
            set.iter()
                .filter_map(|c| ctx.input.policy(&c.nodepool))
                .map(|p| p.min_savings_per_disruption_cost),
        );
        if threshold > 0.0 {
            // The options are cheapest first: the first type holds the cheapest launch.
            let first: Vec<&crate::InstanceType> = claim
                .instance_type_options
                .first()
                .and_then(|n| pool.and_then(|p| p.instance_types.iter().find(|t| &t.name == n)))
                .map(|t| &**t)
                .into_iter()
                .collect();
            let replacement = savings::cheapest_replacement_price(&first, &claim.requirements)
                .unwrap_or(claim.price_per_hour);
            let cost = savings::total_disruption_cost(
                set.iter().map(|c| candidate_disruption_cost(ctx.input, c)),
            );
            let check = savings::SavingsCheck::new(threshold, removed, replacement, cost);
            if !check.passes() {
                return Err(Invalidated::BelowSavingsThreshold(check));
            }
            checked = Some(check);
        }
        let spot_removed = set
            .iter()
            .any(|c| c.capacity_type == labels::CAPACITY_TYPE_SPOT);
        if spot_removed
            && claim.capacity_type == labels::CAPACITY_TYPE_SPOT
            && claim.instance_type_options.len() < ctx.options.spot_to_spot_min_types
        {
            return Err(Invalidated::NotWorthIt(format!(
                "spot-to-spot replacement needs {} cheaper spot types, only {} fit",
                ctx.options.spot_to_spot_min_types,
                claim.instance_type_options.len()
            )));
        }
        // Cutting the options may leave fewer distinct values than a requirement's
        // minValues asks for: the NodePool would not launch such a node, so no move.
        if ctx.options.scheduling.min_values_policy == crate::scheduler::MinValuesPolicy::Strict {
            let types: Vec<&crate::InstanceType> = claim
                .instance_type_options
                .iter()
                .filter_map(|n| {
                    pool.and_then(|p| p.instance_types.iter().find(|t| &t.name == n))
                        .map(|t| &**t)
                })
                .collect();
            for r in claim.requirements.iter() {
                let Some(min) = r.min_values else { continue };
                let have: std::collections::BTreeSet<&str> = types
                    .iter()
                    .filter_map(|t| {
                        if r.key == labels::INSTANCE_TYPE {
                            Some(t.name.as_str())
                        } else {
                            t.label(&r.key)
                        }
                    })
                    .collect();
                // A key no type carries (zone, capacity type: the offerings') is left to
                // the scheduler, which planned the claim within it.
                if !have.is_empty() && have.len() < min as usize {
                    return Err(Invalidated::NotWorthIt(format!(
                        "only {} value(s) of {} among the cheaper types, minValues is {min}",
                        have.len(),
                        r.key
                    )));
                }
            }
        }
        if let Some(req) = claim.requirements.get(labels::INSTANCE_TYPE).cloned() {
            let kept: Vec<String> = claim.instance_type_options.clone();
            let mut r = crate::requirements::Requirement::any_of(labels::INSTANCE_TYPE, kept);
            r.min_values = req.min_values;
            claim.requirements.remove(labels::INSTANCE_TYPE);
            claim.requirements.add(r);
        }
        plan.total_price_per_hour = claim.price_per_hour;
    }
    let replacement = plan.new_claims.first().map_or(0.0, |c| c.price_per_hour);
    let mut scores = Vec::new();
    for pool in balanced_pools(ctx, set) {
        let s = balanced_score(ctx.input, &pool, set, replacement);
        if !s.passes() {
            return Err(Invalidated::NotWorthIt(s.to_string()));
        }
        scores.push(s.to_string());
    }
    let mut d = ctx.decision(Reason::Underutilized, set, plan);
    for s in scores.into_iter().chain(checked.map(|c| c.to_string())) {
        d.message.push_str("; ");
        d.message.push_str(&s);
    }
    Ok(d)
}

/// Karpenter's `k` for `Balanced`: a move passes when its score is at least `1/k`. 2 is the
/// smallest value at which replacing a node by one of half its price passes in a pool of
/// identical nodes.
pub const BALANCED_K: f64 = 2.0;

/// What evicting `pod` costs for `Balanced` scoring, after Karpenter's eviction cost: 1,
/// plus the pod's priority / 2^25, kept within [0, 10]. (Karpenter also adds
/// `controller.kubernetes.io/pod-deletion-cost` / 2^27; Adze does not read that annotation.)
pub fn pod_disruption_cost(pod: &crate::Pod) -> f64 {
    (1.0 + f64::from(pod.priority) / f64::from(1u32 << 25)).clamp(0.0, 10.0)
}

/// A node's disruption cost: 1 for the node itself (so an empty node costs something and
/// the pool total is never 0) plus each of its non-DaemonSet pods' [`pod_disruption_cost`].
fn node_disruption_cost(input: &super::Input, node: &str) -> f64 {
    1.0 + input
        .snapshot
        .bound
        .iter()
        .filter(|b| !b.daemon && b.node == node)
        .map(|b| pod_disruption_cost(&b.pod))
        .sum::<f64>()
}

/// The `Balanced` pools among the nodes of `set`, each once, in name order.
fn balanced_pools(ctx: &Context, set: &[&Candidate]) -> Vec<String> {
    let mut pools: Vec<String> = set
        .iter()
        .filter(|c| {
            ctx.input
                .policy(&c.nodepool)
                .is_some_and(|p| p.consolidation == super::ConsolidationPolicy::Balanced)
        })
        .map(|c| c.nodepool.clone())
        .collect();
    pools.sort();
    pools.dedup();
    pools
}

/// How a move scores for one `Balanced` pool.
#[derive(Debug, Clone, PartialEq)]
pub struct BalancedScore {
    pub nodepool: String,
    /// What the move saves per hour out of the pool's nodes: their prices less their share
    /// of the replacement (shared by price when the move spans pools).
    pub savings: f64,
    /// The move's savings over the hourly price of all the pool's nodes.
    pub savings_fraction: f64,
    /// The removed nodes' disruption cost over that of all the pool's nodes.
    pub disruption_fraction: f64,
}

impl BalancedScore {
    /// savings fraction / disruption fraction; 0 when the move saves nothing.
    pub fn score(&self) -> f64 {
        if self.savings <= 0.0 || self.disruption_fraction <= 0.0 {
            return 0.0;
        }
        self.savings_fraction / self.disruption_fraction
    }

    pub fn passes(&self) -> bool {
        self.savings > 0.0 && self.score() >= 1.0 / BALANCED_K
    }
}

impl std::fmt::Display for BalancedScore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Balanced NodePool {}: score {:.2} {} {:.2} (saves {:.1}% of the pool's cost, disrupts {:.1}% of its pods' cost)",
            self.nodepool,
            self.score(),
            if self.passes() { ">=" } else { "<" },
            1.0 / BALANCED_K,
            self.savings_fraction * 100.0,
            self.disruption_fraction * 100.0
        )
    }
}

/// Karpenter's `Balanced` score of removing `set` (and launching a replacement costing
/// `replacement` per hour) for `pool`: the move's savings as a fraction of the pool's total
/// node cost, divided by its disruption as a fraction of the pool's total disruption cost
/// (per node: 1 + its pods' [`pod_disruption_cost`]). Both are fractions of the same pool,
/// so the score does not change with the pool's size. Pure and deterministic.
pub fn balanced_score(
    input: &super::Input,
    pool: &str,
    set: &[&Candidate],
    replacement: f64,
) -> BalancedScore {
    let pool_nodes = input
        .snapshot
        .nodes
        .iter()
        .filter(|n| n.nodepool.as_deref() == Some(pool));
    let (mut total_cost, mut total_disruption) = (0.0, 0.0);
    for n in pool_nodes {
        total_cost += super::candidates::node_price(input, n);
        total_disruption += node_disruption_cost(input, &n.name);
    }
    let removed_all: f64 = set.iter().map(|c| c.price).sum();
    let here: Vec<&&Candidate> = set.iter().filter(|c| c.nodepool == pool).collect();
    let removed_here: f64 = here.iter().map(|c| c.price).sum();
    let share = if removed_all > 0.0 {
        removed_here / removed_all
    } else {
        0.0
    };
    let savings = removed_here - replacement * share;
    let disruption: f64 = here
        .iter()
        .map(|c| node_disruption_cost(input, &c.name))
        .sum();
    let frac = |x: f64, total: f64| if total > 0.0 { x / total } else { 0.0 };
    BalancedScore {
        nodepool: pool.to_string(),
        savings,
        savings_fraction: frac(savings, total_cost),
        disruption_fraction: frac(disruption, total_disruption),
    }
}

/// A resource-only necessary-ish test for removing one node, so the scheduler runs only for
/// nodes that have a chance: first-fit of the node's pods (largest first) into the other
/// schedulable nodes' free room, then the leftover into the cheapest type (any pool) that
/// holds it, which must be cheaper than the node.
struct QuickCheck {
    /// Per node index: free room (allocatable − requests of bound pods), or None when the
    /// node takes no new pods.
    free: Vec<Option<Resources>>,
    /// (usable room, cheapest price) of every launchable type, cheapest first.
    types: Vec<(Resources, f64)>,
}

impl QuickCheck {
    fn new(ctx: &Context) -> QuickCheck {
        let snap = &ctx.input.snapshot;
        let index: std::collections::HashMap<&str, usize> = snap
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut free: Vec<Option<Resources>> = snap
            .nodes
            .iter()
            .map(|n| (!n.unschedulable).then(|| n.allocatable.clone()))
            .collect();
        for b in &snap.bound {
            if let Some(&i) = index.get(b.node.as_str())
                && let Some(f) = free[i].as_mut()
            {
                f.sub(&b.pod.requests);
            }
        }
        let mut types = Vec::new();
        for pool in &snap.nodepools {
            let reqs = pool.node_requirements();
            for it in &pool.instance_types {
                if let Some(o) = it.cheapest_offering(&reqs) {
                    types.push((it.allocatable().clone(), o.price));
                }
            }
        }
        types.sort_by(|a, b| a.1.total_cmp(&b.1));
        QuickCheck { free, types }
    }

    /// The longest prefix of `list` that passes an aggregate test: its pods' total requests
    /// fit in the other nodes' total free room plus, per resource, the most any type cheaper
    /// than the prefix offers. Necessary for the scheduler to succeed, and O(n), so the
    /// binary search does not spend full placements on prefixes that cannot work.
    fn longest_plausible_prefix(&self, ctx: &Context, list: &[&Candidate]) -> usize {
        let bound = &ctx.input.snapshot.bound;
        let mut free_all = Resources::default();
        for f in self.free.iter().flatten() {
            free_all.add(f);
        }
        let mut demand = Resources::default();
        let mut free_prefix = Resources::default();
        let mut price = 0.0;
        let mut best_room = Resources::default();
        let mut next_type = 0;
        let mut longest = 0;
        for (k, c) in list.iter().enumerate() {
            for &b in &c.pods {
                demand.add(&bound[b].pod.requests);
            }
            if let Some(f) = &self.free[c.node] {
                free_prefix.add(f);
            }
            price += c.price;
            while next_type < self.types.len() && self.types[next_type].1 < price {
                best_room.max_with(&self.types[next_type].0);
                next_type += 1;
            }
            let room = free_all.minus(&free_prefix).plus(&best_room);
            if demand.fits_in(&room) {
                longest = k + 1;
            }
        }
        longest
    }

    fn might_work(&self, ctx: &Context, c: &Candidate) -> bool {
        let bound = &ctx.input.snapshot.bound;
        let mut pods: Vec<&Resources> = c.pods.iter().map(|&b| &bound[b].pod.requests).collect();
        pods.sort_by_key(|p| std::cmp::Reverse((p.cpu, p.memory)));
        let mut free: Vec<(usize, Resources)> = self
            .free
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != c.node)
            .filter_map(|(i, f)| f.clone().map(|f| (i, f)))
            .collect();
        let mut leftover = Resources::default();
        for p in pods {
            match free.iter_mut().find(|(_, f)| p.fits_in(f)) {
                Some((_, f)) => f.sub(p),
                None => leftover.add(p),
            }
        }
        if leftover.is_zero() {
            return true;
        }
        self.types
            .iter()
            .take_while(|(_, price)| *price < c.price)
            .any(|(room, _)| leftover.fits_in(room))
    }
}
