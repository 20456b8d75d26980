//! Budgeted node repair (Karpenter v1.15's default, [`RepairMode::Budgeted`]): the first
//! method of the decision. A node whose condition stayed unhealthy past its toleration
//! ([`super::repair::decide`], 20 % guard included) is taken when its pool's disruption
//! budget for `Unhealthy` leaves room (a node that never initialized needs none), earliest
//! due first; a Node annotated do-not-repair is held. Nodes disrupting only for being
//! not Ready do not use up that budget ([`super::NodeFacts::disrupting_as_not_ready`]), or
//! the unhealthy nodes would hold back their own repair. Do-not-disrupt and
//! PodDisruptionBudgets are not consulted, as in the legacy mode: the node is presumed unable
//! to serve or drain its pods. Its pods are planned on the cluster without it, replacements
//! included; pods that fit nowhere are left to provisioning (the node goes regardless). A
//! static pool's node is swapped as drift swaps one (a fresh claim of the pool first; waits at
//! `limits.nodes`, or is deleted first there with `terminate_first_drift`, as is a dynamic
//! pool's node whose pods only its own room could take: [`super::terminate_first`]). Pure;
//! the same rule for `simulate --disruption` and the controller.
//!
//! With `--reboot-for-repair` ([`Options::reboot_for_repair`]) a node due for repair is first
//! rebooted ([`reboots`], under the same budget), and only replaced here once
//! [`repair::reboot_step`] says so: still unhealthy [`repair::REBOOT_WAIT`] after the reboot,
//! or the reboot refused.

use super::budgets::Allowance;
use super::candidates::{node_labels, node_price};
use super::decision::{Decision, RemovedNode};
use super::methods::{Context, Invalidated};
use super::repair::{self, Outcome, RebootStep, RepairMode, Verdict};
use super::{Input, Options, Reason};

/// What reboot-first repair says of an outcome due now: its step, or None when reboots are
/// off (replacement as before) or the node's health is unknown.
fn step(input: &Input, options: &Options, o: &Outcome) -> Option<RebootStep> {
    if !options.reboot_for_repair {
        return None;
    }
    let h = input.health.iter().find(|h| h.node == o.node)?;
    Some(repair::reboot_step(&o.finding, h.reboot, input.now))
}

/// Whether the decision may replace this due node now: always without reboots; with them,
/// only once its reboot did not help.
fn replaceable(input: &Input, options: &Options, o: &Outcome) -> bool {
    step(input, options, o).is_none_or(|s| s == RebootStep::Replace)
}

/// Whether `node` initialized (a node the snapshot does not know counts as initialized).
fn initialized(input: &Input, node: &str) -> bool {
    (input.nodes.iter())
        .find(|f| f.name == node)
        .is_none_or(|f| f.initialized)
}

/// The pools' budgets as the decision reads them: [`Allowance::compute`], less one node of
/// the `Unhealthy` budget for each initialized node rebooted for repair and still in its wait
/// (out of service as much as a node being replaced, though not disrupting).
pub(super) fn allowance(input: &Input, options: &Options) -> Allowance {
    let mut allowance = Allowance::compute(input);
    if options.node_repair != Some(RepairMode::Budgeted) || !options.reboot_for_repair {
        return allowance;
    }
    for o in due(input) {
        if let (Some(RebootStep::Waiting { .. }), Some(pool)) =
            (step(input, options, &o), o.nodepool.as_deref())
            && initialized(input, &o.node)
        {
            allowance.reserve(pool, Reason::Unhealthy);
        }
    }
    allowance
}

/// One node reboot-first repair handles this pass instead of replacing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebootPlan {
    pub node: String,
    pub nodeclaim: String,
    pub nodepool: Option<String>,
    /// The instance to reboot; None before the NodeClaim has one (nothing to reboot).
    pub provider_id: Option<String>,
    /// Reboot now ([`RebootStep::Reboot`]) or already rebooted and waiting.
    pub step: RebootStep,
    /// Why it is not rebooted now although it should be (the pool's budget, a node the
    /// decision cannot take); None when it is rebooted (or waiting).
    pub blocked: Option<String>,
    /// For events, logs and `simulate`.
    pub message: String,
}

/// With budgeted repair and [`Options::reboot_for_repair`]: every node due for repair whose
/// step is a reboot or the wait after one, earliest due first. A reboot takes one node of
/// its pool's `Unhealthy` budget, as a replacement would, and so does each node still in its
/// wait (it is out of service as much as a node being replaced); a node never initialized
/// needs none. Nodes guarded by the 20 % rule or annotated do-not-repair are not rebooted.
/// Pure; the controller carries the reboots out, `simulate` lists them.
pub fn reboots(input: &Input, options: &Options) -> Vec<RebootPlan> {
    if options.node_repair != Some(RepairMode::Budgeted) || !options.reboot_for_repair {
        return Vec::new();
    }
    let mut allowance = allowance(input, options);
    let mut with_step: Vec<(Outcome, RebootStep)> = Vec::new();
    for o in due(input) {
        match step(input, options, &o) {
            // Replacements of nodes whose reboot did not help go first: the decision takes
            // them from the same budget later in the pass.
            Some(RebootStep::Replace) => {
                if let Some(pool) = o.nodepool.as_deref()
                    && initialized(input, &o.node)
                {
                    allowance.reserve(pool, Reason::Unhealthy);
                }
            }
            Some(s) => with_step.push((o, s)),
            None => {}
        }
    }
    with_step
        .into_iter()
        .map(|(o, s)| {
            let h = input.health.iter().find(|h| h.node == o.node);
            let provider_id = h.and_then(|h| h.provider_id.clone());
            let facts = input.nodes.iter().find(|f| f.name == o.node);
            let blocked = match (s, o.nodepool.as_deref()) {
                (RebootStep::Waiting { .. }, _) => None,
                (_, None) => Some(format!("node {} belongs to no NodePool", o.node)),
                (_, Some(pool)) if input.policy(pool).is_none() => {
                    Some(format!("nodepool {pool} has no disruption policy"))
                }
                _ if facts.is_some_and(|f| f.disrupting && !f.disrupting_as_not_ready) => {
                    Some(format!("node {} is already being disrupted", o.node))
                }
                _ if provider_id.is_none() => {
                    Some(format!("nodeclaim {} has no instance to reboot", o.nodeclaim))
                }
                (_, Some(_)) if !initialized(input, &o.node) => None,
                (_, Some(pool)) if allowance.left(pool, Reason::Unhealthy) > 0 => {
                    allowance.reserve(pool, Reason::Unhealthy);
                    None
                }
                (_, Some(pool)) => Some(format!(
                    "the disruption budget of nodepool {pool} allows no more Unhealthy disruptions now"
                )),
            };
            let message = match (s, &blocked) {
                (_, Some(why)) => format!("reboot blocked: {}, but {why}", o.base()),
                (RebootStep::Waiting { since, until }, None) => format!(
                    "rebooted for repair {} ago and still unhealthy: {}; replaced if still unhealthy in {}",
                    repair::human(input.now.saturating_sub(since)),
                    o.base(),
                    repair::human(until.saturating_sub(input.now)),
                ),
                _ => format!(
                    "unhealthy: {}; its instance is rebooted first (reboot-for-repair), and the node replaced if still unhealthy {} later",
                    o.base(),
                    repair::human(
                        i64::try_from(repair::REBOOT_WAIT.as_secs()).unwrap_or(i64::MAX)
                    ),
                ),
            };
            RebootPlan {
                node: o.node,
                nodeclaim: o.nodeclaim,
                nodepool: o.nodepool,
                provider_id,
                step: s,
                blocked,
                message,
            }
        })
        .collect()
}

/// The repairs due now (verdict [`Verdict::Repair`]), earliest due first, then by node.
fn due(input: &Input) -> Vec<Outcome> {
    let mut out: Vec<Outcome> =
        repair::decide(&input.health, &repair::default_policies(), input.now)
            .into_iter()
            .filter(|o| o.verdict == Verdict::Repair)
            .collect();
    out.sort_by(|a, b| (a.finding.due().cmp(&b.finding.due())).then_with(|| a.node.cmp(&b.node)));
    out
}

/// A node due for repair that is not repaired now, and why: the 20 % guard, a
/// do-not-repair annotation, the pool's budget, or a node the decision cannot take. What the controller announces as
/// `RepairBlocked` and `simulate` lists as held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairHold {
    pub node: String,
    pub nodeclaim: String,
    pub nodepool: Option<String>,
    pub message: String,
}

/// Every node due for repair (or guarded) that `decisions` (a [`super::decide_all`] on
/// `input`) do not repair, with why. Empty unless `options` has budgeted repair on.
pub fn repair_held(input: &Input, options: &Options, decisions: &[Decision]) -> Vec<RepairHold> {
    if options.node_repair != Some(RepairMode::Budgeted) {
        return Vec::new();
    }
    let ctx = Context::new(input, options);
    let repaired: std::collections::BTreeSet<&str> = decisions
        .iter()
        .filter(|d| d.reason == Reason::Unhealthy)
        .flat_map(|d| d.node_names())
        .collect();
    repair::decide(&input.health, &repair::default_policies(), input.now)
        .into_iter()
        // Nodes rebooted first are [`reboots`]' to report.
        .filter(|o| o.verdict != Verdict::Repair || replaceable(input, options, o))
        .filter_map(|o| {
            let message = match &o.verdict {
                Verdict::Guarded { .. } | Verdict::DoNotRepair => o.message(),
                Verdict::Repair if !repaired.contains(o.node.as_str()) => {
                    let budget = |pool: &str| {
                        format!(
                            "the disruption budget of nodepool {pool} allows no more Unhealthy disruptions now"
                        )
                    };
                    let why = match ctx.repairable(&o) {
                        Err(why) => why,
                        Ok((_, pool)) if !ctx.within_budget(&o.node, &pool) => budget(&pool),
                        // A static pool's node that cannot be swapped now says why; any other
                        // was left by the budget the pass's earlier repairs used up.
                        Ok((i, pool)) => ctx
                            .repair_decision(i, &pool, &o)
                            .err()
                            .unwrap_or_else(|| budget(&pool)),
                    };
                    format!("repair blocked: {}, but {why}", o.base())
                }
                _ => return None,
            };
            Some(RepairHold {
                node: o.node,
                nodeclaim: o.nodeclaim,
                nodepool: o.nodepool,
                message,
            })
        })
        .collect()
}

impl Context<'_> {
    /// The node's index in the snapshot and its pool when the decision may repair it
    /// (budgets aside); else why not.
    pub(super) fn repairable(&self, o: &Outcome) -> Result<(usize, String), String> {
        let Some(i) = (self.input.snapshot.nodes.iter()).position(|n| n.name == o.node) else {
            return Err(format!("node {} is not in the cluster's snapshot", o.node));
        };
        let Some(f) = self.input.nodes.iter().find(|f| f.name == o.node) else {
            return Err(format!("nothing is known of node {}'s NodeClaim", o.node));
        };
        if f.disrupting && !f.disrupting_as_not_ready {
            return Err(format!("node {} is already being disrupted", o.node));
        }
        let Some(pool) = self.input.snapshot.nodes[i].nodepool.clone() else {
            return Err(format!("node {} belongs to no NodePool", o.node));
        };
        if self.input.policy(&pool).is_none() {
            return Err(format!("nodepool {pool} has no disruption policy"));
        }
        Ok((i, pool))
    }

    /// The first repair due that the budgets allow, with budgeted repair on.
    pub(super) fn repair(&self) -> Option<Decision> {
        if self.options.node_repair != Some(RepairMode::Budgeted) {
            return None;
        }
        due(self.input).iter().find_map(|o| {
            if !replaceable(self.input, self.options, o) {
                return None;
            }
            let (i, pool) = self.repairable(o).ok()?;
            if !self.within_budget(&o.node, &pool) {
                return None;
            }
            self.repair_decision(i, &pool, o).ok()
        })
    }

    /// Whether the pool's `Unhealthy` budget leaves room for repairing `node`. A node that
    /// never initialized is outside budgets (it counts towards none, as in Karpenter), so
    /// its repair needs no room: a launch that never came up is replaced at any pace.
    fn within_budget(&self, node: &str, pool: &str) -> bool {
        let initialized = (self.input.nodes.iter())
            .find(|f| f.name == node)
            .is_none_or(|f| f.initialized);
        !initialized || self.allowance.left(pool, Reason::Unhealthy) > 0
    }

    /// A repair of `node` decided earlier, checked on this input: still due, still
    /// repairable, still within the budget; recomputed.
    pub(super) fn revalidate_repair(&self, node: &str) -> Result<Decision, Invalidated> {
        let no_longer = || Invalidated::NoLongerEligible {
            node: node.to_string(),
            reason: Reason::Unhealthy,
        };
        let due = due(self.input);
        let o = due.iter().find(|o| o.node == node).ok_or_else(no_longer)?;
        if !replaceable(self.input, self.options, o) {
            return Err(no_longer());
        }
        let (i, pool) = self.repairable(o).map_err(|_| no_longer())?;
        if !self.within_budget(node, &pool) {
            return Err(Invalidated::Budget(pool));
        }
        self.repair_decision(i, &pool, o)
            .map_err(Invalidated::StaticPool)
    }

    /// The repair of node `i`: its pods planned on the cluster without it; a static pool's
    /// node swapped for one fresh claim of the pool first, as drift swaps one, or waiting
    /// (why, as `Err`) while the pool is overscaled or at its `limits.nodes`. With
    /// `terminate_first_drift` a capacity-constrained pool's node is deleted first instead
    /// (Karpenter v1.15's terminate-first repair): a static pool at its limit, or a dynamic
    /// pool whose limits or full reservation leave its pods room only once the node is gone
    /// ([`super::terminate_first`]).
    fn repair_decision(&self, i: usize, pool: &str, o: &Outcome) -> Result<Decision, String> {
        let node = &self.input.snapshot.nodes[i];
        let (instance_type, capacity_type, zone) = node_labels(node);
        let pods = (self.input.snapshot.bound.iter())
            .filter(|b| !b.daemon && b.node == node.name)
            .map(|b| b.pod.key())
            .collect();
        let price = node_price(self.input, node);
        let terminate_first = self.options.terminate_first_drift;
        let plan = if self.input.policy(pool).is_some_and(|p| p.fixed_size) {
            self.static_swap(i, pool, terminate_first)?
        } else {
            let plan = self.sim.run(&[i]);
            // A pool with no room for the replacement while the node runs: deleted first,
            // so provisioning launches into the room it frees, rather than launching only
            // what fits beside it.
            if plan.unschedulable.is_empty() || !terminate_first {
                plan
            } else {
                self.terminate_first(i, pool).unwrap_or(plan)
            }
        };
        let replacement_price = plan.new_claims.iter().map(|c| c.price_per_hour).sum();
        let mut d = Decision {
            reason: Reason::Unhealthy,
            nodes: vec![RemovedNode {
                name: node.name.clone(),
                nodepool: pool.to_string(),
                instance_type,
                capacity_type,
                zone,
                price,
                pods,
            }],
            plan,
            removed_price: price,
            replacement_price,
            message: String::new(),
        };
        d.describe();
        d.message = format!("{}; {}", d.message, o.message_as(RepairMode::Budgeted));
        Ok(d)
    }
}
