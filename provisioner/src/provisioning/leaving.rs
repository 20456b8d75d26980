//! Nodes that are going away, and the pods they displace. A node is leaving when it carries
//! `adze.sh/interrupted` (the node agent, on a spot notice) or `adze.sh/disrupted` (termination
//! and disruption), or when its NodeClaim is `Interrupted=True` (the agent or the SQS path) or
//! being deleted. A leaving node offers no capacity, and its pods that must move (not DaemonSet,
//! not mirror, not already terminating or finished) are demand *now*, so the replacement is
//! launched while the old node drains rather than after its pods go pending.

use std::collections::{BTreeSet, HashMap};

use adze_api::{NodeClaim, conditions};
use adze_scheduling::labels;
use k8s_openapi::api::core::v1::{Node, Pod};

use super::snapshot::{Objects, claim_conditions, owned_by_daemonset};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

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

/// A pod on a leaving node that has to find a new home.
pub fn is_displaced(pod: &Pod, leaving: &BTreeSet<String>) -> bool {
    let on_leaving = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some_and(|n| leaving.contains(n));
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION));
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    );
    on_leaving
        && !mirror
        && !finished
        && !owned_by_daemonset(pod)
        && pod.metadata.deletion_timestamp.is_none()
}
