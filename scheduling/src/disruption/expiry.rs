//! Expiration, Karpenter v1's meaning: forceful. A node whose NodeClaim has lived for its
//! `spec.expireAfter` (copied from the NodePool at launch) is taken away whatever stands in
//! the way of a voluntary disruption: disruption budgets, `do-not-disrupt` on the node or
//! its pods, PodDisruptionBudgets allowing nothing now, pods nothing else can hold. The
//! controller deletes the NodeClaim; the provisioner sees the node's pods as displaced and
//! launches what they need while it drains (no waiting for a replacement to be ready), and
//! termination honours PodDisruptionBudgets only until the claim's `terminationGracePeriod`
//! runs out. Pure: the node facts and `now` in, the expired nodes out.

use std::time::Duration;

use super::{Input, NodeFacts, UnixSeconds};

/// A node whose NodeClaim has outlived its `expireAfter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub node: String,
    /// Seconds since the NodeClaim was created.
    pub age: i64,
    pub expire_after: Duration,
    /// Set when the node goes because its Capacity Block ends at this time.
    pub capacity_block_end: Option<UnixSeconds>,
}

/// EC2 starts terminating a Capacity Block's instances 30 minutes before the block ends (60
/// for UltraServers); nodes are drained 10 minutes before that, when EC2 sends its warning.
pub const CAPACITY_BLOCK_DRAIN_BEFORE_END: i64 = 40 * 60;

/// Whether `facts`' node runs in a Capacity Block close enough to its end to be drained now.
pub fn capacity_block_ending(facts: &NodeFacts, now: UnixSeconds) -> bool {
    facts
        .capacity_block_end
        .is_some_and(|end| now >= end.saturating_sub(CAPACITY_BLOCK_DRAIN_BEFORE_END))
}

impl Expired {
    /// For the event and log line: why the node goes.
    pub fn message(&self) -> String {
        if let Some(end) = self.capacity_block_end {
            return format!(
                "capacity block ending: it ends at {end} (unix seconds) and EC2 reclaims its instances from 30 minutes before; drained from {}s before the end, regardless of budgets and do-not-disrupt",
                CAPACITY_BLOCK_DRAIN_BEFORE_END
            );
        }
        format!(
            "expired: nodeclaim is {}s old, its expireAfter is {}s; disrupted regardless of budgets and do-not-disrupt",
            self.age,
            self.expire_after.as_secs()
        )
    }
}

/// Whether `facts`' NodeClaim has lived for its `expireAfter` at `now`.
pub fn is_expired(facts: &NodeFacts, now: UnixSeconds) -> bool {
    facts
        .expire_after
        .is_some_and(|d| now - facts.created >= d.as_secs() as i64)
}

/// Every expired node with facts, oldest first. Budgets, do-not-disrupt, PodDisruptionBudgets
/// and whether the pods fit elsewhere are deliberately not consulted; nodes already going
/// away are included too (the caller skips NodeClaims already being deleted).
pub fn expired(input: &Input) -> Vec<Expired> {
    let mut out: Vec<(UnixSeconds, Expired)> = input
        .nodes
        .iter()
        .filter_map(|f| {
            let block_end = f
                .capacity_block_end
                .filter(|_| capacity_block_ending(f, input.now));
            if block_end.is_none() && !is_expired(f, input.now) {
                return None;
            }
            Some((
                f.created,
                Expired {
                    node: f.name.clone(),
                    age: input.now - f.created,
                    expire_after: f.expire_after.unwrap_or_default(),
                    capacity_block_end: block_end,
                },
            ))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.node.cmp(&b.1.node)));
    out.into_iter().map(|(_, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_counts_from_the_claims_creation_with_its_own_expire_after() {
        let mut f = NodeFacts::new("n", 1_000);
        f.expire_after = Some(Duration::from_secs(60));
        assert!(!is_expired(&f, 1_059));
        assert!(is_expired(&f, 1_060));
        f.expire_after = None;
        assert!(!is_expired(&f, 1_000_000));
    }

    #[test]
    fn oldest_first_and_message_names_the_numbers() {
        let mut a = NodeFacts::new("a", 200);
        let mut b = NodeFacts::new("b", 100);
        a.expire_after = Some(Duration::from_secs(10));
        b.expire_after = Some(Duration::from_secs(10));
        let input = Input {
            nodes: vec![a, b],
            now: 300,
            ..Input::default()
        };
        let e = expired(&input);
        assert_eq!(
            e.iter().map(|e| e.node.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert!(e[0].message().contains("200s old"), "{}", e[0].message());
    }

    #[test]
    fn a_capacity_block_node_is_drained_forty_minutes_before_the_block_ends() {
        let end = 10_000;
        let mut f = NodeFacts::new("gpu", 100);
        f.expire_after = None;
        f.capacity_block_end = Some(end);
        let at = |now| {
            expired(&Input {
                nodes: vec![f.clone()],
                now,
                ..Input::default()
            })
        };
        assert!(at(end - 40 * 60 - 1).is_empty(), "too early");
        let e = at(end - 40 * 60);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].capacity_block_end, Some(end));
        assert!(
            e[0].message().contains("capacity block ending"),
            "{}",
            e[0].message()
        );
        let mut plain = NodeFacts::new("cpu", 100);
        plain.expire_after = None;
        assert!(!capacity_block_ending(&plain, i64::MAX), "no block, never");
    }
}
