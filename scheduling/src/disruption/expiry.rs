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
}

impl Expired {
    /// For the event and log line: why the node goes.
    pub fn message(&self) -> String {
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
        .filter(|f| is_expired(f, input.now))
        .filter_map(|f| {
            Some((
                f.created,
                Expired {
                    node: f.name.clone(),
                    age: input.now - f.created,
                    expire_after: f.expire_after?,
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
}
