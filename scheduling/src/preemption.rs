//! Whether kube-scheduler may preempt running pods for a pending one.
//!
//! kube-scheduler preempts in the pending pod's *first* scheduling cycle, long before the
//! provisioner has launched (or even planned) a node for it: lower-priority pods are evicted
//! for a pod that a NodePool would have served a minute later. The extender's `preempt` verb
//! asks this module, and answers "no candidates" while a hold applies.
//!
//! A hold applies to a pod that is nominated to in-flight capacity, or that some NodePool
//! could serve: its taints tolerated, one of the pod's node-affinity terms compatible with the
//! pool's node requirements (well-known keys left to the instance types), and the pool's
//! limits leaving room for the pod. Instance types are not consulted (the extender has no
//! catalog), so a pod no instance type can hold would be held wrongly: the bound
//! ([`Policy::Hold::limit`]) lets preemption through once the pod has waited that long.

use std::time::Duration;

use crate::nodepool::NodePool;
use crate::pod::Pod;
use crate::requirements::Undefined;
use crate::resources::Resources;
use crate::taints::first_untolerated;

/// The operator's choice (`--preemption`, `--preemption-hold-limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Never interfere: kube-scheduler preempts as it would without Adze.
    Allow,
    /// Hold preemption for pods Adze can serve; `limit` (pod age) ends the hold, `None`
    /// holds for as long as a NodePool could serve the pod.
    Hold { limit: Option<Duration> },
}

/// A NodePool as the hold sees it: the pool (no instance types needed) and what its nodes
/// already use, compared with its limits.
#[derive(Debug, Clone)]
pub struct PoolView {
    pub pool: NodePool,
    pub in_use: Resources,
}

/// The answer for one pod, with the reason logged by the extender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Hold(String),
    Allow(String),
}

impl Decision {
    pub fn holds(&self) -> bool {
        matches!(self, Decision::Hold(_))
    }
}

/// The first NodePool that could launch a node for `pod`, by name.
pub fn servable_by<'a>(pod: &Pod, pools: &'a [PoolView]) -> Option<&'a str> {
    pools
        .iter()
        .find(|v| could_serve(&v.pool, &v.in_use, pod))
        .map(|v| v.pool.name.as_str())
}

fn could_serve(pool: &NodePool, in_use: &Resources, pod: &Pod) -> bool {
    if first_untolerated(&pool.taints, &pod.tolerations, false).is_some() {
        return false;
    }
    let node = pool.node_requirements();
    if !pod
        .node_requirements
        .iter()
        .any(|term| node.compatible(term, Undefined::WellKnownOpen))
    {
        return false;
    }
    match pool.remaining(in_use) {
        None => true,
        Some(room) => room
            .iter()
            .all(|(k, left)| crate::nodepool::limit_need(k, &pod.requests) <= *left),
    }
}

/// Hold or allow preemption for `pod`. `in_flight_claim` names the NodeClaim the pod is
/// nominated to when that capacity is still coming; `age` is how long the pod has existed.
pub fn decide(
    policy: Policy,
    pod: &Pod,
    in_flight_claim: Option<&str>,
    pools: &[PoolView],
    age: Duration,
) -> Decision {
    let limit = match policy {
        Policy::Allow => return Decision::Allow("policy allows preemption".into()),
        Policy::Hold { limit } => limit,
    };
    if let Some(claim) = in_flight_claim {
        return Decision::Hold(format!("its capacity is in flight (NodeClaim {claim})"));
    }
    let Some(pool) = servable_by(pod, pools) else {
        return Decision::Allow("no NodePool can serve it (requirements, taints or limits)".into());
    };
    match limit {
        Some(limit) if age >= limit => Decision::Allow(format!(
            "NodePool {pool} could serve it, but it has waited {}s, past the hold limit of {}s",
            age.as_secs(),
            limit.as_secs()
        )),
        // The time left is logged because kube-scheduler, not the extender, decides when
        // the pod is asked about again (docs/extender.md: the hold limit on 1.28+).
        Some(limit) => Decision::Hold(format!(
            "NodePool {pool} can serve it (hold limit reached in {}s)",
            limit.saturating_sub(age).as_secs()
        )),
        None => Decision::Hold(format!("NodePool {pool} can serve it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requirements::{Operator, Requirement, Requirements};
    use crate::taints::{Effect, Taint, Toleration};
    use std::collections::BTreeMap;

    const HOLD: Policy = Policy::Hold {
        limit: Some(Duration::from_secs(300)),
    };

    fn pool(name: &str) -> PoolView {
        PoolView {
            pool: NodePool::new(name, vec![]),
            in_use: Resources::default(),
        }
    }

    fn pod(cpu_milli: i64) -> Pod {
        Pod::new("ns", "p", Resources::new(cpu_milli, 0))
    }

    fn select(p: &mut Pod, key: &str, value: &str) {
        p.node_requirements = vec![Requirements::new().with(Requirement::single(key, value))];
    }

    #[test]
    fn holds_for_a_pod_a_plain_pool_can_serve() {
        let d = decide(HOLD, &pod(1000), None, &[pool("default")], Duration::ZERO);
        assert_eq!(
            d,
            Decision::Hold("NodePool default can serve it (hold limit reached in 300s)".into())
        );
    }

    #[test]
    fn a_hold_says_how_long_until_its_limit() {
        let d = decide(
            HOLD,
            &pod(1),
            None,
            &[pool("default")],
            Duration::from_secs(280),
        );
        assert_eq!(
            d,
            Decision::Hold("NodePool default can serve it (hold limit reached in 20s)".into())
        );
        let forever = Policy::Hold { limit: None };
        let d = decide(
            forever,
            &pod(1),
            None,
            &[pool("default")],
            Duration::from_secs(280),
        );
        assert_eq!(d, Decision::Hold("NodePool default can serve it".into()));
    }

    #[test]
    fn allow_policy_never_holds() {
        let d = decide(
            Policy::Allow,
            &pod(1000),
            Some("c1"),
            &[pool("default")],
            Duration::ZERO,
        );
        assert!(!d.holds());
    }

    #[test]
    fn in_flight_capacity_holds_even_without_pools_or_past_the_limit() {
        let d = decide(HOLD, &pod(1000), Some("c1"), &[], Duration::from_secs(3600));
        assert!(d.holds(), "{d:?}");
    }

    #[test]
    fn no_pools_allows() {
        let d = decide(HOLD, &pod(1000), None, &[], Duration::ZERO);
        assert!(!d.holds());
    }

    #[test]
    fn the_limit_ends_the_hold_and_none_never_does() {
        let pools = [pool("default")];
        let old = Duration::from_secs(301);
        assert!(!decide(HOLD, &pod(1), None, &pools, old).holds());
        let forever = Policy::Hold { limit: None };
        assert!(decide(forever, &pod(1), None, &pools, old).holds());
    }

    #[test]
    fn a_custom_label_the_pool_does_not_set_is_not_servable() {
        let mut p = pod(1);
        select(&mut p, "team", "a");
        assert!(!decide(HOLD, &p, None, &[pool("default")], Duration::ZERO).holds());
        let mut labelled = pool("team-a");
        labelled.pool.labels.insert("team".into(), "a".into());
        assert_eq!(
            servable_by(&p, &[pool("default"), labelled]),
            Some("team-a")
        );
    }

    #[test]
    fn well_known_keys_are_left_to_instance_types_unless_the_pool_excludes_them() {
        let mut p = pod(1);
        select(&mut p, "kubernetes.io/arch", "arm64");
        assert!(servable_by(&p, &[pool("any")]).is_some());
        let mut amd = pool("amd");
        amd.pool.requirements = Requirements::new()
            .with(Requirement::new("kubernetes.io/arch", Operator::In, &["amd64"]).unwrap());
        assert!(servable_by(&p, &[amd]).is_none());
    }

    #[test]
    fn any_node_affinity_term_may_match() {
        let mut p = pod(1);
        p.node_requirements = vec![
            Requirements::new().with(Requirement::single("team", "b")),
            Requirements::new().with(Requirement::single("adze.sh/nodepool", "default")),
        ];
        assert_eq!(servable_by(&p, &[pool("default")]), Some("default"));
    }

    #[test]
    fn an_untolerated_taint_is_not_servable_a_prefer_no_schedule_one_is() {
        let mut gpu = pool("gpu");
        gpu.pool.taints = vec![Taint::new("gpu", "true", Effect::NoSchedule)];
        let mut p = pod(1);
        assert!(servable_by(&p, std::slice::from_ref(&gpu)).is_none());
        p.tolerations = vec![Toleration::exists(Some("gpu"), None)];
        assert!(servable_by(&p, std::slice::from_ref(&gpu)).is_some());
        let mut soft = pool("soft");
        soft.pool.taints = vec![Taint::new("spot", "", Effect::PreferNoSchedule)];
        assert!(servable_by(&pod(1), &[soft]).is_some());
    }

    #[test]
    fn a_pool_at_its_limits_is_not_servable() {
        let mut full = pool("full");
        full.pool.limits = BTreeMap::from([("cpu".to_string(), 8000)]);
        full.in_use = Resources::new(7500, 0);
        assert!(servable_by(&pod(500), std::slice::from_ref(&full)).is_some());
        assert!(servable_by(&pod(501), std::slice::from_ref(&full)).is_none());
        let d = decide(HOLD, &pod(1000), None, &[full], Duration::ZERO);
        assert!(!d.holds(), "{d:?}");
    }
}
