//! Terminate-first for a node of a dynamic (not static) NodePool that is capacity-constrained
//! (with [`super::Options::terminate_first_drift`]): drift and budgeted repair.
//!
//! Replacing first needs room for the replacement while the old node still runs. A pool that
//! has none never gets it by waiting: its own node is what holds the room. Two kinds of room:
//!
//! - **a full capacity reservation** the pool is confined to ([`super::reserved_drift`]): the
//!   node's slot is what the replacement needs;
//! - **`limits`** (the pool's `spec.limits`, or the cluster-wide limits): until the node is
//!   gone it counts against them, so a replacement would go over. The node is deleted first
//!   when its pods fit once it no longer counts, and not otherwise: pods that would not fit
//!   even then are not helped by deleting the node first.
//!
//! Karpenter derives the same choice (RFC "Terminate-first disruption for capacity-constrained
//! NodePools"): simulate scheduling as if the node were gone, and delete first when only the
//! room it frees can take its pods. Its dynamic-pool case is the full reservation; Adze applies
//! the same test to `limits`, the other room a node holds.
//!
//! The decision launches nothing: the node is drained and deleted (budgets pace it as any
//! disruption), its pods go pending, and provisioning launches for them into the freed room.

use super::methods::Context;
use super::reserved_drift;
use crate::plan::Plan;
use crate::scheduler::schedule;

impl Context<'_> {
    /// The delete-only plan for node `node` (snapshot index) of dynamic pool `nodepool`
    /// when the pool is capacity-constrained and only the node's own room would take its
    /// pods; else why replace-first applies (or why deleting first would not help).
    pub(super) fn terminate_first(&self, node: usize, nodepool: &str) -> Result<Plan, String> {
        let Some(pool) = (self.input.snapshot.nodepools.iter()).find(|p| p.name == nodepool) else {
            return Err(format!("NodePool {nodepool} is not launching"));
        };
        let existing = &self.input.snapshot.nodes[node];
        let mut snap = self.sim.snapshot_without(&[node]);
        let reserved = reserved_drift::frees_its_slot(pool, existing);
        let what = match &reserved {
            Ok(id) => {
                for p in &mut snap.nodepools {
                    if p.name == pool.name {
                        *p = reserved_drift::credited(p, id);
                    }
                }
                format!("the slot it frees in capacity reservation {id}")
            }
            Err(why) => {
                if pool.limits.is_empty() && self.sim.options.cluster_limits.is_empty() {
                    return Err(format!(
                        "{why}; NodePool {nodepool} has no limits its node holds room under"
                    ));
                }
                // Not counted against the limits any more: the room it gives back.
                snap.leaving.clear();
                "the room it frees under the limits".to_string()
            }
        };
        let mut plan = schedule(&snap, &self.sim.options);
        if let Some(u) = plan.unschedulable.first() {
            let why = match reserved {
                Ok(_) => String::new(),
                Err(r) => format!("{r}; "),
            };
            return Err(format!(
                "{why}{} of its pods would not fit even in {what} (first: {}: {})",
                plan.unschedulable.len(),
                u.pod,
                u.reason
            ));
        }
        plan.new_claims.clear();
        plan.total_price_per_hour = 0.0;
        plan.cost_lower_bound = 0.0;
        Ok(plan)
    }
}
