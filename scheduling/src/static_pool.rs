//! Static NodePools (`spec.replicas`, Karpenter's static capacity): a pool that keeps a fixed
//! number of NodeClaims whatever the pods. Pure: which claims to add or remove, and what a
//! new one looks like; the controller creates and deletes them.
//!
//! Counting: every claim of the pool not being deleted counts, launched or not, so a claim
//! still launching is not doubled. A claim marked for disruption but not yet deleted is
//! not refilled (its disruption launches the replacement first, or deletes it and the
//! refill follows) and is not counted as one to keep either, so the replacement is not
//! taken for a surplus ([`crate::disruption::static_drift`]). Scale-up stops at
//! `limits.nodes` (every claim counts against it, deleting ones too, since their instances
//! still run). Scale-down picks the
//! cheapest to lose first: claims not yet initialized, then those with the fewest workload
//! pods, then the youngest, then by name. Scale-down is not a voluntary disruption: no
//! disruption budget holds it back, but the drain still goes through the Eviction API, so
//! PodDisruptionBudgets do.

use crate::Pod;
use crate::disruption::UnixSeconds;
use crate::labels;
use crate::plan::NewClaim;
use crate::requirements::{Requirement, Requirements};
use crate::resources::Resources;
use crate::scheduler::{Options, Snapshot, schedule};
use crate::taints::Toleration;

/// One NodeClaim of a static pool, as the scaler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Registered and initialized.
    pub initialized: bool,
    /// Being deleted: no longer counts towards replicas, still counts towards `limits.nodes`.
    pub deleting: bool,
    /// Marked for disruption (its `Disrupting` condition), not yet deleted.
    pub disrupting: bool,
    /// Non-DaemonSet pods bound to its node.
    pub pods: usize,
    pub created: UnixSeconds,
}

/// What to do to bring a static pool to its replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scale {
    /// NodeClaims to create.
    pub launch: u64,
    /// NodeClaims to delete, in the order chosen.
    pub remove: Vec<String>,
    /// Claims short of replicas that `limits.nodes` forbids launching now.
    pub held_by_limit: u64,
}

/// The change that brings a pool with `members` to `replicas` claims, launching no more than
/// `node_limit` (its `limits.nodes`) allows.
pub fn scale(replicas: u64, node_limit: Option<u64>, members: &[Member]) -> Scale {
    let mut active: Vec<&Member> = members
        .iter()
        .filter(|m| !m.deleting && !m.disrupting)
        .collect();
    let count = active.len() as u64;
    let held = members
        .iter()
        .filter(|m| !m.deleting && m.disrupting)
        .count() as u64;
    let mut out = Scale::default();
    if count + held < replicas {
        let want = replicas - count - held;
        let room = node_limit.map_or(u64::MAX, |l| l.saturating_sub(members.len() as u64));
        out.launch = want.min(room);
        out.held_by_limit = want - out.launch;
    } else if count > replicas {
        active.sort_by(|a, b| {
            a.initialized
                .cmp(&b.initialized)
                .then(a.pods.cmp(&b.pods))
                .then(b.created.cmp(&a.created))
                .then(a.name.cmp(&b.name))
        });
        out.remove = active
            .iter()
            .take((count - replicas) as usize)
            .map(|m| m.name.clone())
            .collect();
    }
    out
}

/// A pod that asks for nothing, tolerates every taint and must land on `pool`: what a static
/// claim is planned for, so it gets the pool's cheapest fitting type, zone and labels, with
/// the DaemonSets' overhead reserved, exactly as a pod-driven claim would.
fn placeholder(pool: &str, i: u64) -> Pod {
    let mut pod = Pod::new("adze-static", &format!("{pool}-{i}"), Resources::default());
    let mut reqs = Requirements::new();
    reqs.add(Requirement::single(labels::NODEPOOL, pool));
    pod.node_requirements = vec![reqs];
    pod.tolerations = vec![Toleration {
        key: None,
        exists: true,
        value: String::new(),
        effect: None,
    }];
    pod
}

/// `n` new claims for static pool `pool`, planned on `snapshot` (which should hold the pool,
/// as a launchable pool, and the DaemonSets, but no nodes: existing room must not absorb
/// them). Each carries no pods. Fewer than `n` when the pool can launch nothing (no type
/// fits, or its limits are reached); the reason of the first failure is returned with them.
pub fn plan_claims(
    snapshot: &Snapshot,
    pool: &str,
    n: u64,
    options: &Options,
) -> (Vec<NewClaim>, Option<String>) {
    let mut options = options.clone();
    let mut out = Vec::new();
    for i in 0..n {
        let mut snap = snapshot.clone();
        snap.pending = vec![placeholder(pool, i)];
        let plan = schedule(&snap, &options);
        match plan.new_claims.into_iter().next() {
            Some(mut claim) => {
                claim.pods.clear();
                options.reserved_names.push(claim.name.clone());
                out.push(claim);
            }
            None => {
                let why = plan
                    .unschedulable
                    .first()
                    .map(|u| u.reason.clone())
                    .unwrap_or_else(|| "no claim was planned".to_string());
                return (out, Some(why));
            }
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, initialized: bool, pods: usize, created: i64) -> Member {
        Member {
            name: name.into(),
            initialized,
            deleting: false,
            disrupting: false,
            pods,
            created,
        }
    }

    #[test]
    fn launches_up_to_replicas_counting_claims_still_launching() {
        let members = [m("a", true, 0, 1), m("b", false, 0, 2)];
        assert_eq!(scale(3, None, &members).launch, 1);
        assert_eq!(scale(2, None, &members), Scale::default());
    }

    #[test]
    fn a_deleting_claim_is_replaced_but_still_counts_against_the_node_limit() {
        let mut gone = m("a", true, 0, 1);
        gone.deleting = true;
        let members = [gone, m("b", true, 0, 2)];
        assert_eq!(scale(2, None, &members).launch, 1);
        let held = scale(2, Some(2), &members);
        assert_eq!((held.launch, held.held_by_limit), (0, 1));
        assert_eq!(scale(2, Some(3), &members).launch, 1);
    }

    #[test]
    fn a_claim_being_disrupted_is_neither_refilled_nor_kept() {
        // Replace-first: the drifted claim is marked, its replacement launching.
        let mut old = m("old", true, 3, 1);
        old.disrupting = true;
        let members = [old.clone(), m("b", true, 0, 2)];
        assert_eq!(scale(2, None, &members), Scale::default(), "not refilled");
        let with_new = [old.clone(), m("b", true, 0, 2), m("new", false, 0, 3)];
        assert_eq!(scale(2, None, &with_new), Scale::default(), "new one kept");
        // Once it is deleted, the refill follows (delete-first), within the limit.
        old.deleting = true;
        let members = [old, m("b", true, 0, 2)];
        assert_eq!(scale(2, None, &members).launch, 1);
        assert_eq!(scale(2, Some(2), &members).held_by_limit, 1);
    }

    #[test]
    fn scale_down_removes_launching_then_least_busy_then_youngest() {
        let members = [
            m("busy", true, 5, 1),
            m("idle-old", true, 0, 1),
            m("idle-young", true, 0, 9),
            m("launching", false, 0, 5),
        ];
        assert_eq!(
            scale(1, None, &members).remove,
            vec!["launching", "idle-young", "idle-old"]
        );
        assert_eq!(scale(0, None, &members).remove.len(), 4);
    }
}
