//! Nodes that are going away, and the pods they displace. A node is leaving when it carries
//! `adze.sh/interrupted` (the node agent, on a spot notice) or `adze.sh/disrupted` (termination
//! and disruption), or when its NodeClaim is `Interrupted=True` (the agent or the SQS path) or
//! being deleted. A leaving node offers no capacity, and its pods that must move (not DaemonSet,
//! not mirror, not already terminating or finished) are demand *now*, so the replacement is
//! launched while the old node drains rather than after its pods go pending.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use adze_api::{NodeClaim, conditions};
use adze_scheduling::labels;
use k8s_openapi::api::core::v1::{Node, Pod};

use super::snapshot::{Objects, claim_conditions};

pub fn is_leaving(node: &Node, claim: Option<&NodeClaim>) -> bool {
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == labels::TAINT_INTERRUPTED || t.key == labels::TAINT_DISRUPTED)
        });
    tainted
        || claim.is_some_and(|c| {
            c.metadata.deletion_timestamp.is_some()
                || conditions::is_true(claim_conditions(c), conditions::nodeclaim::INTERRUPTED)
        })
}

/// Names of the leaving nodes. Claims are matched to nodes by providerID.
pub fn leaving_nodes(objects: &Objects) -> BTreeSet<String> {
    let claim_by_provider: HashMap<&str, &NodeClaim> = objects
        .claims
        .iter()
        .filter_map(|c| Some((c.status.as_ref()?.provider_id.as_deref()?, c.as_ref())))
        .collect();
    objects
        .nodes
        .iter()
        .filter(|n| {
            let claim = n
                .spec
                .as_ref()
                .and_then(|s| s.provider_id.as_deref())
                .and_then(|p| claim_by_provider.get(p).copied());
            is_leaving(n, claim)
        })
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

/// A pod on a leaving node that has to find a new home: not finished, and not one that goes
/// with its node ([`crate::rules::stays_with_node`]: a DaemonSet's, a mirror pod, or one
/// already terminating other than a StatefulSet's).
pub fn is_displaced(pod: &Pod, leaving: &BTreeSet<String>) -> bool {
    let on_leaving = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some_and(|n| leaving.contains(n));
    on_leaving && !crate::rules::is_terminal(pod) && !crate::rules::stays_with_node(pod)
}

/// The node condition the node agent keeps; while it is fresh and true an agent drains this
/// node.
pub const AGENT_CONDITION: &str = "AdzeAgentReady";

/// How old the agent's last heartbeat may be before the provisioner stops counting on it:
/// six missed heartbeats at the agent's default 10 s. A hung, crashed or deleted agent
/// leaves its condition behind; past this it no longer keeps the provisioner from draining.
pub const AGENT_STALE_AFTER_SECS: i64 = 60;

/// Whether an agent is looking after `node` at `now_unix` (seconds): its condition is
/// `True` and its `lastHeartbeatTime` at most [`AGENT_STALE_AFTER_SECS`] old. A `False`
/// condition (the agent cannot see IMDS, say) counts as no agent.
pub fn agent_alive(node: &Node, now_unix: i64) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == AGENT_CONDITION))
        .is_some_and(|c| {
            c.status == "True"
                && c.last_heartbeat_time.as_ref().is_some_and(|t| {
                    now_unix.saturating_sub(t.0.as_second()) <= AGENT_STALE_AFTER_SECS
                })
        })
}

/// Interrupted NodeClaims the provisioner must drain itself, by deleting them (termination then
/// taints, evicts under PDBs and terminates). Only where no live node agent reports on the
/// node ([`agent_alive`] at `now_unix`): an agent drains with the notice's deadline in hand,
/// and two drainers would fight; a stale one drains nothing. An interruptible reservation's
/// reclaim is the exception: EC2 tells only EventBridge, so no agent sees it and the
/// provisioner drains whether an agent runs or not. And only once
/// every pod the node displaces has a replacement claim nominated for it (`unplaced` is
/// [`super::snapshot::unplaced_demand`]), so the replacement is launched before the drain.
pub fn interrupted_without_agent(
    objects: &Objects,
    unplaced: &BTreeMap<String, super::snapshot::Verdict>,
    now_unix: i64,
) -> Vec<String> {
    let mut out = Vec::new();
    for claim in &objects.claims {
        if claim.metadata.deletion_timestamp.is_some()
            || !conditions::is_true(claim_conditions(claim), conditions::nodeclaim::INTERRUPTED)
        {
            continue;
        }
        let Some(provider_id) = claim.status.as_ref().and_then(|s| s.provider_id.as_deref()) else {
            continue;
        };
        let Some(node) = objects
            .nodes
            .iter()
            .find(|n| n.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(provider_id))
        else {
            continue;
        };
        let agent_sees_it = !interrupted_for(
            claim,
            conditions::nodeclaim::REASON_CAPACITY_RESERVATION_INTERRUPTION,
        );
        if agent_sees_it && agent_alive(node, now_unix) {
            continue;
        }
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let here = BTreeSet::from([node_name]);
        let all_covered = objects
            .pods
            .iter()
            .filter(|p| is_displaced(p, &here))
            .filter_map(|p| p.metadata.uid.as_ref())
            .all(|uid| !unplaced.contains_key(uid));
        if all_covered && let Some(name) = &claim.metadata.name {
            out.push(name.clone());
        }
    }
    out
}

/// Whether `claim` is `Interrupted=True` with `reason`.
fn interrupted_for(claim: &NodeClaim, reason: &str) -> bool {
    claim_conditions(claim).iter().any(|c| {
        c.type_ == conditions::nodeclaim::INTERRUPTED && c.status == "True" && c.reason == reason
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provisioning::snapshot::Verdict;
    use serde_json::json;
    use std::sync::Arc;

    /// 2026-11-23T05:00:00Z: 30 s after the test agent's last heartbeat.
    const NOW: i64 = 1_795_410_000;

    fn claim(interrupted: bool) -> Arc<NodeClaim> {
        let conds = if interrupted {
            json!([{"type": "Interrupted", "status": "True", "reason": "SpotInterruption",
                    "message": "deadline 2026-11-23T05:00:00Z",
                    "lastTransitionTime": "2026-11-23T04:58:00Z"}])
        } else {
            json!([])
        };
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c1"},
                "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
                "status": {"providerID": "aws:///us-east-1a/i-0abc", "conditions": conds},
            }))
            .unwrap(),
        )
    }

    fn node(agent: bool) -> Arc<Node> {
        let conds = if agent {
            json!([{"type": "Ready", "status": "True"},
                   {"type": AGENT_CONDITION, "status": "True", "lastHeartbeatTime": "2026-11-23T04:59:30Z"}])
        } else {
            json!([{"type": "Ready", "status": "True"}])
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "n1"},
                "spec": {"providerID": "aws:///us-east-1a/i-0abc"},
                "status": {"conditions": conds},
            }))
            .unwrap(),
        )
    }

    fn pod_on_n1(uid: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": uid, "namespace": "default", "uid": uid},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {"phase": "Running"},
            }))
            .unwrap(),
        )
    }

    fn objects(interrupted: bool, agent: bool) -> Objects {
        Objects {
            nodes: vec![node(agent)],
            claims: vec![claim(interrupted)],
            pods: vec![pod_on_n1("p1"), pod_on_n1("p2")],
            ..Objects::default()
        }
    }

    #[test]
    fn interrupted_claim_without_agent_is_drained_once_its_pods_have_a_replacement() {
        let o = objects(true, false);
        let waiting = BTreeMap::from([("p2".to_string(), Verdict::absorbed())]);
        assert!(
            interrupted_without_agent(&o, &waiting, NOW).is_empty(),
            "p2 has no replacement yet: launch first, then drain"
        );
        assert_eq!(
            interrupted_without_agent(&o, &BTreeMap::new(), NOW),
            vec!["c1"]
        );
    }

    #[test]
    fn node_with_an_agent_is_left_to_the_agent() {
        let o = objects(true, true);
        assert!(interrupted_without_agent(&o, &BTreeMap::new(), NOW).is_empty());
    }

    #[test]
    fn a_stale_or_unready_agent_does_not_keep_the_provisioner_from_draining() {
        let o = objects(true, true);
        // 60 s after the last heartbeat: still fresh. 61 s after: stale, the agent is gone.
        assert!(interrupted_without_agent(&o, &BTreeMap::new(), NOW + 30).is_empty());
        assert_eq!(
            interrupted_without_agent(&o, &BTreeMap::new(), NOW + 31),
            vec!["c1"]
        );
        let unready: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc"},
            "status": {"conditions": [{"type": AGENT_CONDITION, "status": "False",
                                       "lastHeartbeatTime": "2026-11-23T04:59:59Z"}]},
        }))
        .unwrap();
        assert!(!agent_alive(&unready, NOW));
        let no_heartbeat: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": AGENT_CONDITION, "status": "True"}]},
        }))
        .unwrap();
        assert!(!agent_alive(&no_heartbeat, NOW));
    }

    #[test]
    fn a_reclaimed_interruptible_reservation_is_drained_even_with_an_agent() {
        // The agent hears of spot notices from IMDS; of a reservation's reclaim only the
        // queue hears, so the provisioner drains — still after the replacement is nominated.
        let mut o = objects(true, true);
        let mut c = (*o.claims[0]).clone();
        let conds = &mut c.status.as_mut().unwrap().conditions;
        conds[0].reason = conditions::nodeclaim::REASON_CAPACITY_RESERVATION_INTERRUPTION.into();
        o.claims = vec![Arc::new(c)];
        let waiting = BTreeMap::from([("p1".to_string(), Verdict::absorbed())]);
        assert!(interrupted_without_agent(&o, &waiting, NOW).is_empty());
        assert_eq!(
            interrupted_without_agent(&o, &BTreeMap::new(), NOW),
            vec!["c1"]
        );
    }

    #[test]
    fn claim_that_is_not_interrupted_is_not_drained() {
        let o = objects(false, false);
        assert!(interrupted_without_agent(&o, &BTreeMap::new(), NOW).is_empty());
    }
}
