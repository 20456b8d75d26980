//! Drift of a static pool's node (`spec.replicas`). Such a pool holds a fixed number of
//! NodeClaims, so a drifted node is swapped for a fresh one of the same pool rather than
//! re-planned for its pods:
//!
//! - **Replace first**: the new claim is launched, and the drifted node drained once it is
//!   up, so the pool never runs short. The new claim counts against `limits.nodes` beside
//!   every claim the pool already has, so drift replaces at most as many nodes at once as the
//!   limit leaves room for (and the budget allows): a pool at its limit replaces none.
//! - **Delete first** (only with [`super::Options::terminate_first_drift`], and only at the
//!   limit): the node is drained and deleted, and the pool's scaler refills the slot.
//! - **Wait**: while the pool has more claims than replicas (the scaler removes the extra
//!   first, and may pick the drifted node), or sits at its limit without the gate.
//!
//! The replacement is planned as the scaler plans a claim (the pool's cheapest fitting type
//! for a pod that asks for nothing, [`crate::static_pool::plan_claims`]). The drifted node's
//! pods go where the scheduler finds room, the replacement included; none of them holds the
//! swap back (the pool's size is its owner's choice), and any that fit nowhere are left to
//! provisioning, as when the scaler removes a node.

use super::StaticSize;

/// What drift may do to a drifted node of a static pool now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Launch one claim of the pool, then drain the node.
    ReplaceFirst,
    /// Drain and delete the node; the scaler refills the pool.
    DeleteFirst,
    /// Not now.
    Wait(Hold),
}

/// Why a static pool's drifted node waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The pool is refused, invalid or being deleted: nothing would refill it.
    NotScaled,
    /// More claims than replicas: the scaler removes the extra first.
    Overscaled { active: u64, replicas: u64 },
    /// `limits.nodes` leaves no room for a replacement, and delete-first is off.
    AtLimit { limit: u64 },
}

impl std::fmt::Display for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hold::NotScaled => f.write_str(
                "its static NodePool is refused, invalid or being deleted, so nothing would refill it",
            ),
            Hold::Overscaled { active, replicas } => write!(
                f,
                "its static NodePool has {active} nodeclaims for {replicas} replicas; drift waits until the extra are removed"
            ),
            Hold::AtLimit { limit } => write!(
                f,
                "its static NodePool is at limits.nodes ({limit}) and cannot launch a replacement first (--terminate-first-drift deletes it first instead)"
            ),
        }
    }
}

/// The verdict for one more drifted node of a pool sized `size` (`None`: not scaled).
/// Budgets are the caller's: this only weighs the replicas and the limit.
pub fn verdict(size: Option<&StaticSize>, terminate_first: bool) -> Verdict {
    let Some(size) = size else {
        return Verdict::Wait(Hold::NotScaled);
    };
    if size.overscaled() {
        return Verdict::Wait(Hold::Overscaled {
            active: size.active,
            replicas: size.replicas,
        });
    }
    match (size.headroom(), size.node_limit) {
        (Some(0), Some(limit)) if !terminate_first => Verdict::Wait(Hold::AtLimit { limit }),
        (Some(0), _) => Verdict::DeleteFirst,
        _ => Verdict::ReplaceFirst,
    }
}

/// `size` once a decision takes one of its nodes and launches `launched` claims of it.
pub fn after(size: &mut StaticSize, removed: u64, launched: u64) {
    size.active = size.active.saturating_sub(removed).saturating_add(launched);
    size.leaving = size.leaving.saturating_add(removed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(replicas: u64, limit: Option<u64>, active: u64) -> StaticSize {
        StaticSize {
            replicas,
            node_limit: limit,
            active,
            leaving: 0,
        }
    }

    #[test]
    fn replaces_first_while_the_limit_leaves_room() {
        let mut s = size(5, Some(7), 5);
        let mut taken = 0;
        while verdict(Some(&s), false) == Verdict::ReplaceFirst {
            after(&mut s, 1, 1);
            taken += 1;
        }
        assert_eq!(taken, 2);
        assert_eq!(
            verdict(Some(&s), false),
            Verdict::Wait(Hold::AtLimit { limit: 7 })
        );
        // No limit: never held by it.
        assert_eq!(
            verdict(Some(&size(5, None, 5)), false),
            Verdict::ReplaceFirst
        );
    }

    #[test]
    fn deletes_first_only_at_the_limit_with_the_gate() {
        assert_eq!(
            verdict(Some(&size(1, Some(1), 1)), true),
            Verdict::DeleteFirst
        );
        assert_eq!(
            verdict(Some(&size(1, Some(2), 1)), true),
            Verdict::ReplaceFirst
        );
        assert_eq!(
            verdict(Some(&size(1, Some(1), 1)), false),
            Verdict::Wait(Hold::AtLimit { limit: 1 })
        );
        // A delete-first takes a node out of the replicas but not out of the limit.
        let mut s = size(2, Some(2), 2);
        after(&mut s, 1, 0);
        assert_eq!((s.active, s.leaving, s.headroom()), (1, 1, Some(0)));
        assert_eq!(verdict(Some(&s), true), Verdict::DeleteFirst);
    }

    #[test]
    fn waits_while_overscaled_or_not_scaled() {
        assert_eq!(
            verdict(Some(&size(1, None, 2)), true),
            Verdict::Wait(Hold::Overscaled {
                active: 2,
                replicas: 1
            })
        );
        assert!(matches!(
            verdict(Some(&size(0, None, 1)), false),
            Verdict::Wait(Hold::Overscaled { .. })
        ));
        assert_eq!(verdict(None, true), Verdict::Wait(Hold::NotScaled));
        // A node already leaving does not make the pool overscaled.
        let mut s = size(1, None, 1);
        s.leaving = 3;
        assert_eq!(verdict(Some(&s), false), Verdict::ReplaceFirst);
    }
}
