//! The three voluntary methods in order, and re-validation of a decision against a later input.

use std::collections::{BTreeMap, HashMap};

use super::budgets::Allowance;
use super::candidates::{Candidate, candidates, qualifies};
use super::consolidation;
use super::decision::{Decision, RemovedNode};
use super::reserved_drift;
use super::simulate::Simulator;
use super::static_drift::{self, Verdict};
use super::{Input, Options, Reason};
use crate::node::ExistingNode;
use crate::plan::{NewClaim, Plan};
use crate::scheduler::{Snapshot, schedule};
use crate::static_pool;

/// What every method reads, computed once per decision.
pub(super) struct Context<'a> {
    pub input: &'a Input,
    pub options: &'a Options,
    pub candidates: Vec<Candidate>,
    pub allowance: Allowance,
    pub sim: Simulator<'a>,
}

impl<'a> Context<'a> {
    pub fn new(input: &'a Input, options: &'a Options) -> Context<'a> {
        Context {
            input,
            options,
            candidates: candidates(input).0,
            allowance: super::repair_method::allowance(input, options),
            sim: Simulator::new(input, &options.scheduling),
        }
    }

    /// Whether `c` qualifies for `reason` at `input.now` (budgets aside).
    pub fn eligible(&self, c: &Candidate, reason: Reason) -> bool {
        self.input.policy(&c.nodepool).is_some_and(|policy| {
            qualifies(policy, &c.facts, c.pods.is_empty(), self.input.now, reason)
        })
    }

    /// A decision for `set` with `plan`, its prices and its sentence.
    pub fn decision(&self, reason: Reason, set: &[&Candidate], plan: Plan) -> Decision {
        let bound = &self.input.snapshot.bound;
        let nodes: Vec<RemovedNode> = set
            .iter()
            .map(|c| RemovedNode {
                name: c.name.clone(),
                nodepool: c.nodepool.clone(),
                instance_type: c.instance_type.clone(),
                capacity_type: c.capacity_type.clone(),
                zone: c.zone.clone(),
                price: c.price,
                pods: c.pods.iter().map(|&b| bound[b].pod.key()).collect(),
            })
            .collect();
        let removed_price = nodes.iter().map(|n| n.price).sum();
        let replacement_price = plan.new_claims.iter().map(|c| c.price_per_hour).sum();
        let mut d = Decision {
            reason,
            nodes,
            plan,
            removed_price,
            replacement_price,
            message: String::new(),
        };
        d.describe();
        d
    }

    /// Replace (or delete) one node for `reason`: earliest drifted first (then oldest), the
    /// first whose pods all find a place. Empty nodes are emptiness's (Karpenter's drift
    /// skips them too), except in static pools, which emptiness never takes.
    fn replace_one(&self, reason: Reason) -> Option<Decision> {
        let mut list: Vec<&Candidate> = self
            .candidates
            .iter()
            .filter(|c| self.eligible(c, reason) && self.allowance.left(&c.nodepool, reason) > 0)
            .filter(|c| {
                !c.pods.is_empty() || self.input.policy(&c.nodepool).is_some_and(|p| p.fixed_size)
            })
            .collect();
        sort_for_replacement(&mut list);
        list.into_iter().find_map(|c| {
            if self.fixed_size(c) {
                return self.static_drift(c).ok();
            }
            let plan = self.sim.run(&[c.node]);
            if plan.unschedulable.is_empty() {
                return Some(self.decision(reason, &[c], plan));
            }
            (reason == Reason::Drifted && self.options.terminate_first_drift)
                .then(|| self.drift_delete_first(c).ok())
                .flatten()
        })
    }

    /// Drift of dynamic pool node `c` deleted first when its pool is capacity-constrained
    /// ([`super::terminate_first`]); else why not.
    pub fn drift_delete_first(&self, c: &Candidate) -> Result<Decision, String> {
        let plan = self.terminate_first(c.node, &c.nodepool)?;
        Ok(self.decision(Reason::Drifted, &[c], plan))
    }

    /// Whether `c` belongs to a static pool.
    pub fn fixed_size(&self, c: &Candidate) -> bool {
        self.input.policy(&c.nodepool).is_some_and(|p| p.fixed_size)
    }

    /// Drift of static pool node `c` ([`super::static_drift`]): replaced first by one claim
    /// of its pool, or deleted first, or why it waits. Its pods are planned on the cluster
    /// without it, the replacement included, and nothing else is launched for them.
    pub fn static_drift(&self, c: &Candidate) -> Result<Decision, String> {
        let plan = self.static_swap(c.node, &c.nodepool, self.options.terminate_first_drift)?;
        Ok(self.decision(Reason::Drifted, &[c], plan))
    }

    /// The plan for swapping static pool `nodepool`'s node (index `node` in the snapshot) for
    /// one fresh claim of the pool ([`super::static_drift`]), or why it waits; delete-first at
    /// the limit only with `terminate_first`. Drift and repair share it.
    pub(super) fn static_swap(
        &self,
        node: usize,
        nodepool: &str,
        terminate_first: bool,
    ) -> Result<Plan, String> {
        let size = self
            .input
            .policy(nodepool)
            .and_then(|p| p.static_size.as_ref());
        let claim = match static_drift::verdict(size, terminate_first) {
            Verdict::Wait(hold) => return Err(hold.to_string()),
            Verdict::DeleteFirst => None,
            Verdict::ReplaceFirst => match self.static_claim(nodepool) {
                Ok(claim) => Some(claim),
                // No replacement can be planned: deleted first only when the pool's
                // reservations are full and the node frees one of their slots.
                Err(why) if terminate_first => {
                    let pool = (self.input.static_pools.iter()).find(|p| p.name == nodepool);
                    let node = &self.input.snapshot.nodes[node];
                    match pool.map(|p| reserved_drift::frees_its_slot(p, node)) {
                        Some(Ok(_)) => None,
                        Some(Err(full)) => return Err(format!("{why}; {full}")),
                        None => return Err(why),
                    }
                }
                Err(why) => return Err(why),
            },
        };
        let mut snap = self.sim.snapshot_without(&[node]);
        snap.nodepools.clear();
        if let Some(claim) = &claim {
            snap.nodes.push(ExistingNode::planned(claim));
        }
        let mut plan = schedule(&snap, &self.sim.options);
        if let Some(mut claim) = claim {
            if let Some(i) = plan.existing.iter().position(|e| e.node == claim.name) {
                claim.pods = plan.existing.remove(i).pods;
            }
            plan.new_claims = vec![claim];
        }
        Ok(plan)
    }

    /// One claim of static pool `pool`, planned as its scaler plans one.
    fn static_claim(&self, pool: &str) -> Result<NewClaim, String> {
        let Some(np) = self.input.static_pools.iter().find(|p| p.name == pool) else {
            return Err(format!(
                "static NodePool {pool} has nothing to launch a replacement from"
            ));
        };
        let snap = Snapshot {
            nodepools: vec![np.clone()],
            daemonsets: self.input.snapshot.daemonsets.clone(),
            ..Snapshot::default()
        };
        let (mut claims, why) = static_pool::plan_claims(&snap, pool, 1, &self.sim.options);
        claims.pop().ok_or_else(|| {
            format!(
                "no replacement can be planned for static NodePool {pool}: {}",
                why.unwrap_or_default()
            )
        })
    }

    /// Every empty node the budgets allow, in one decision.
    fn empty(&self) -> Option<Decision> {
        let mut allowance = self.allowance.clone();
        let mut list: Vec<&Candidate> = self
            .candidates
            .iter()
            .filter(|c| self.eligible(c, Reason::Empty))
            .collect();
        // Priciest first, so a tight budget removes what costs most.
        list.sort_by(|a, b| {
            b.price
                .total_cmp(&a.price)
                .then_with(|| a.name.cmp(&b.name))
        });
        list.retain(|c| allowance.take(&c.nodepool, Reason::Empty));
        if !self.sim.held_buffer.is_empty() {
            // Keep the nodes whose room the buffer's placeholders need: a node goes only
            // when they still fit on what stays, with nothing launched.
            let mut removed: Vec<usize> = Vec::new();
            list.retain(|c| {
                removed.push(c.node);
                let ok = self.sim.buffer_stays(&removed);
                if !ok {
                    removed.pop();
                }
                ok
            });
        }
        if list.is_empty() {
            return None;
        }
        Some(self.decision(Reason::Empty, &list, Plan::default()))
    }
}

/// The order drift and repair replace nodes in: earliest drifted first (unknown last), then
/// oldest, then by name. Shared with the pod deletion cost ranking
/// ([`super::deletion_cost`]).
pub(super) fn sort_for_replacement(list: &mut [&Candidate]) {
    list.sort_by(|a, b| {
        let since = |c: &Candidate| c.facts.drifted_since.unwrap_or(super::UnixSeconds::MAX);
        since(a)
            .cmp(&since(b))
            .then_with(|| a.facts.created.cmp(&b.facts.created))
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// The next voluntary disruption to carry out, if any: repair (when budgeted), drift, then
/// emptiness, then consolidation (expiry is forceful and not decided here: [`super::expiry`]). One decision
/// per call; [`super::decide_all`] takes as many as can run side by side.
pub fn decide(input: &Input, options: &Options) -> Option<Decision> {
    Context::new(input, options).next(true)
}

impl Context<'_> {
    /// Repair (when budgeted), drift, then emptiness, then (when `consolidate`)
    /// consolidation: the first that finds something.
    pub(super) fn next(&self, consolidate: bool) -> Option<Decision> {
        self.repair()
            .or_else(|| self.replace_one(Reason::Drifted))
            .or_else(|| self.empty())
            .or_else(|| {
                consolidate
                    .then(|| consolidation::consolidate(self))
                    .flatten()
            })
    }
}

/// Why a decision no longer holds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalidated {
    #[error("node {0} is gone")]
    NodeGone(String),
    #[error("node {node} may no longer be disrupted: {blocker}")]
    Blocked {
        node: String,
        blocker: super::candidates::Blocker,
    },
    #[error("node {node} is no longer {reason}")]
    NoLongerEligible { node: String, reason: Reason },
    #[error("NodePool {0}'s disruption budget no longer allows it")]
    Budget(String),
    #[error("PodDisruptionBudget {0} does not allow evicting that many of its pods")]
    Pdb(String),
    #[error("the pods no longer fit: {0}")]
    PodsDoNotFit(String),
    #[error("consolidation no longer pays: {0}")]
    NotWorthIt(String),
    /// The replacement saves too little for the disruption: below the pools'
    /// `minSavingsPerDisruptionCost` ([`super::savings`]).
    #[error("the savings do not justify the disruption: {0}")]
    BelowSavingsThreshold(super::savings::SavingsCheck),
    #[error("{0}")]
    StaticPool(String),
    /// A drift replacement in the pool failed since the decision ([`super::drift_backoff`]).
    #[error(
        "NodePool {nodepool}'s drift is held back until {until} (unix seconds) after failed drift replacements"
    )]
    DriftBackoff { nodepool: String, until: i64 },
}

/// Checks a decision made earlier against `input` as the cluster is now: the same nodes
/// are still candidates for the same reason, within budgets and PDBs, and their pods still
/// fit (on at most as many replacements, still cheaper, for consolidation). Returns the
/// decision recomputed on the new input (fresh plan and prices), or why it no longer holds.
/// Call it before marking the nodes as disrupting, or they count against their own budget.
pub fn revalidate(
    decision: &Decision,
    input: &Input,
    options: &Options,
) -> Result<Decision, Invalidated> {
    let ctx = Context::new(input, options);
    if decision.reason == Reason::Unhealthy {
        // Repaired nodes are not candidates (not Ready ones never are): checked apart.
        return match decision.nodes.as_slice() {
            [n] => ctx.revalidate_repair(&n.name),
            _ => Err(Invalidated::NoLongerEligible {
                node: decision.node_names().join(", "),
                reason: Reason::Unhealthy,
            }),
        };
    }
    let (_, blocked) = candidates(input);
    let by_name: HashMap<&str, &Candidate> = ctx
        .candidates
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    let mut set: Vec<&Candidate> = Vec::new();
    for n in &decision.nodes {
        let Some(c) = by_name.get(n.name.as_str()) else {
            return Err(match blocked.iter().find(|(b, _)| *b == n.name) {
                Some((_, blocker)) => Invalidated::Blocked {
                    node: n.name.clone(),
                    blocker: blocker.clone(),
                },
                None => Invalidated::NodeGone(n.name.clone()),
            });
        };
        if !ctx.eligible(c, decision.reason) {
            return Err(Invalidated::NoLongerEligible {
                node: n.name.clone(),
                reason: decision.reason,
            });
        }
        set.push(c);
    }
    if decision.reason == Reason::Drifted {
        for c in &set {
            if let Some(h) = input.drift_hold(&c.nodepool) {
                return Err(Invalidated::DriftBackoff {
                    nodepool: h.nodepool.clone(),
                    until: h.until,
                });
            }
        }
    }
    let mut allowance = ctx.allowance.clone();
    for c in &set {
        if !allowance.take(&c.nodepool, decision.reason) {
            return Err(Invalidated::Budget(c.nodepool.clone()));
        }
    }
    if let Some(pdb) = pdb_overrun(input, &set) {
        return Err(Invalidated::Pdb(pdb));
    }
    match decision.reason {
        Reason::Empty => {
            let idx: Vec<usize> = set.iter().map(|c| c.node).collect();
            if !ctx.sim.buffer_stays(&idx) {
                return Err(Invalidated::PodsDoNotFit(
                    "a CapacityBuffer's placeholder pods need their room".to_string(),
                ));
            }
            Ok(ctx.decision(Reason::Empty, &set, Plan::default()))
        }
        Reason::Drifted if set.len() == 1 && ctx.fixed_size(set[0]) => {
            ctx.static_drift(set[0]).map_err(Invalidated::StaticPool)
        }
        Reason::Drifted | Reason::Expired | Reason::Unhealthy => {
            let idx: Vec<usize> = set.iter().map(|c| c.node).collect();
            let plan = ctx.sim.run(&idx);
            if let Some(u) = plan.unschedulable.first() {
                // Deleted first for a constrained pool: still so, by the same rule.
                if decision.reason == Reason::Drifted
                    && options.terminate_first_drift
                    && decision.plan.new_claims.is_empty()
                    && set.len() == 1
                    && let Ok(d) = ctx.drift_delete_first(set[0])
                {
                    return Ok(d);
                }
                return Err(Invalidated::PodsDoNotFit(format!(
                    "{}: {}",
                    u.pod, u.reason
                )));
            }
            Ok(ctx.decision(decision.reason, &set, plan))
        }
        Reason::Underutilized => {
            let d = consolidation::evaluate(&ctx, &set)?;
            if d.plan.new_claims.len() > decision.plan.new_claims.len() {
                return Err(Invalidated::NotWorthIt(format!(
                    "it now needs {} replacement(s) instead of {}",
                    d.plan.new_claims.len(),
                    decision.plan.new_claims.len()
                )));
            }
            Ok(d)
        }
    }
}

/// A PDB that would have more of its pods evicted by `set` than it allows, when `set` has
/// several nodes. A single node only needs each of its PDBs to allow one eviction (the
/// drain then evicts one at a time as the PDB permits).
pub(super) fn pdb_overrun(input: &Input, set: &[&Candidate]) -> Option<String> {
    if set.len() < 2 {
        return None;
    }
    let allowed = input.pdb_allowance();
    let mut used: BTreeMap<&str, u32> = BTreeMap::new();
    for c in set {
        for p in &c.pdbs {
            *used.entry(p.as_str()).or_default() += 1;
        }
    }
    used.into_iter()
        .find(|(p, n)| *n > allowed.get(p).copied().unwrap_or(0))
        .map(|(p, _)| p.to_string())
}

/// Where the pods of `nodes` (by name) would go if those nodes left now, by the same trial
/// every method runs: the cluster without them, their pods pending. Unlike a decision, the
/// plan may leave pods unschedulable: for forceful methods (expiry), which take the nodes
/// whatever becomes of their pods. Names not in the snapshot are ignored.
pub fn displaced_plan(input: &Input, options: &Options, nodes: &[&str]) -> Plan {
    let idx: Vec<usize> = input
        .snapshot
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| nodes.contains(&n.name.as_str()))
        .map(|(i, _)| i)
        .collect();
    super::simulate::Simulator::new(input, &options.scheduling).run(&idx)
}

/// Single-node consolidation of `node` alone, as the search would judge it: the decision,
/// or why it is refused (its pods do not fit, the replacement would not be cheaper, a
/// Balanced pool's score is too low, it saves less than `minSavingsPerDisruptionCost`). `None` when `node` is not a candidate at all
/// ([`super::candidates`]). Budgets and `consolidateAfter` are not consulted: this explains
/// what consolidation would find once they allow it.
pub fn try_consolidating(
    input: &Input,
    options: &Options,
    node: &str,
) -> Option<Result<Decision, Invalidated>> {
    let ctx = Context::new(input, options);
    let c = ctx.candidates.iter().find(|c| c.name == node)?;
    Some(consolidation::evaluate(&ctx, &[c]))
}
