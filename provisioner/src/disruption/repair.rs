//! What node repair ([`adze_scheduling::disruption::repair`]) is given: each NodeClaim's
//! Node with its conditions as the Node reports them. Reading only; the disruption
//! controller carries the verdicts out.

use std::collections::HashMap;

use adze_api::NodeClaim;
use adze_scheduling::disruption::repair::{NodeCondition, NodeHealth};
use adze_scheduling::labels;
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;

use crate::provisioning::snapshot::Objects;

/// Every NodeClaim whose Node exists, with the Node's conditions; claims not registered yet
/// have no Node to judge and are left out.
pub fn health(objects: &Objects) -> Vec<NodeHealth> {
    let nodes: HashMap<&str, &Node> = objects
        .nodes
        .iter()
        .filter_map(|n| Some((n.metadata.name.as_deref()?, n.as_ref())))
        .collect();
    objects
        .claims
        .iter()
        .filter_map(|c| {
            let name = c.status.as_ref()?.node_name.as_deref()?;
            let node = nodes.get(name)?;
            Some(of(c, node))
        })
        .collect()
}

fn of(claim: &NodeClaim, node: &Node) -> NodeHealth {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| NodeCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    since: c.last_transition_time.as_ref().map(|t| t.0.as_second()),
                })
                .collect()
        })
        .unwrap_or_default();
    NodeHealth {
        node: node.name_any(),
        nodeclaim: claim.name_any(),
        nodepool: claim.labels().get(labels::NODEPOOL).cloned(),
        conditions,
        deleting: claim.metadata.deletion_timestamp.is_some()
            || node.metadata.deletion_timestamp.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::disruption::repair::{Verdict, decide, default_policies};
    use serde_json::json;
    use std::sync::Arc;

    fn claim(name: &str, node: Option<&str>, deleting: bool) -> Arc<NodeClaim> {
        let mut v = json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {labels::NODEPOOL: "web"}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        });
        if let Some(n) = node {
            v["status"] = json!({"nodeName": n});
        }
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn node(name: &str, kernel: &str, since: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "KernelReady", "status": kernel, "lastTransitionTime": since},
                ]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn node_conditions_reach_the_decision_with_their_transition_times_and_pool() {
        let objects = Objects {
            claims: vec![
                claim("c1", Some("n1"), false),
                claim("c2", Some("n2"), true),
                claim("c3", None, false),
                claim("c4", Some("gone"), false),
            ],
            nodes: vec![
                node("n1", "False", "2026-01-01T00:00:00Z"),
                node("n2", "False", "2026-01-01T00:00:00Z"),
            ],
            ..Objects::default()
        };
        let h = health(&objects);
        assert_eq!(
            h.iter().map(|h| h.nodeclaim.as_str()).collect::<Vec<_>>(),
            ["c1", "c2"],
            "claims with no node are left out"
        );
        assert_eq!(h[0].nodepool.as_deref(), Some("web"));
        assert!(!h[0].deleting && h[1].deleting);
        let t0 = 1_767_225_600; // 2026-01-01T00:00:00Z
        assert_eq!(h[0].conditions[1].since, Some(t0));
        // 31 minutes later: c1 is repaired; c2 is already going; both count for the guard,
        // and 2 of 2 is over 20 %: the guard holds c1.
        let out = decide(&h, &default_policies(), t0 + 31 * 60);
        assert_eq!(out[1].verdict, Verdict::Deleting);
        assert!(matches!(out[0].verdict, Verdict::Guarded { .. }), "{out:?}");
        let alone = decide(&h[..1], &default_policies(), t0 + 31 * 60);
        assert_eq!(alone[0].verdict, Verdict::Repair);
        assert_eq!(alone[0].finding.condition, "KernelReady");
    }
}
