//! Writes to the agent's own Node and its NodeClaim. Every list-valued write (taints, claim
//! conditions) carries the object's resourceVersion, so a concurrent writer causes a 409 and a
//! re-read rather than a lost update.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::decide::{DrainRecord, Memory};

pub const TAINT_INTERRUPTED: &str = adze_scheduling::labels::TAINT_INTERRUPTED;
pub const TAINT_AGENT_NOT_READY: &str = adze_scheduling::labels::TAINT_AGENT_NOT_READY;
pub const TAINT_REBALANCE: &str = "adze.sh/rebalance";
pub const ANNOTATION_DRAIN: &str = "adze.sh/agent-drain";
pub const ANNOTATION_HANDLED: &str = "adze.sh/agent-handled";
pub const CONDITION_READY: &str = "AdzeAgentReady";
pub const CONDITION_INTERRUPTED: &str = "Interrupted";
/// How many handled event keys the node remembers.
const HANDLED_KEEP: usize = 32;

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn nodeclaim_resource() -> ApiResource {
    ApiResource {
        group: "adze.sh".into(),
        version: "v1".into(),
        api_version: "adze.sh/v1".into(),
        kind: "NodeClaim".into(),
        plural: "nodeclaims".into(),
    }
}

/// The node's memory, from its annotations. Unparseable values are ignored (logged): a broken
/// annotation must not stop the agent from acting on a new notice.
pub fn memory_of(node: &Node) -> Memory {
    let ann = node.metadata.annotations.clone().unwrap_or_default();
    let drain = ann.get(ANNOTATION_DRAIN).and_then(|v| {
        serde_json::from_str(v)
            .inspect_err(|e| tracing::warn!(error = %e, "ignoring unreadable {ANNOTATION_DRAIN}"))
            .ok()
    });
    let handled = ann
        .get(ANNOTATION_HANDLED)
        .and_then(|v| serde_json::from_str::<Vec<String>>(v).ok())
        .unwrap_or_default()
        .into_iter()
        .collect();
    Memory { handled, drain }
}

fn handled_value(handled: &BTreeSet<String>) -> String {
    let keep: Vec<&String> = handled.iter().rev().take(HANDLED_KEEP).collect();
    serde_json::to_string(&keep).expect("strings serialise")
}

/// The taint list with `key` set to `effect` (or removed when `effect` is None).
pub fn with_taint(node: &Node, key: &str, effect: Option<&str>) -> Vec<Value> {
    let mut taints: Vec<Value> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != key)
        .map(|t| serde_json::to_value(t).expect("taint"))
        .collect();
    if let Some(effect) = effect {
        taints.push(json!({"key": key, "effect": effect, "timeAdded": rfc3339(Utc::now())}));
    }
    taints
}

pub fn has_taint(node: &Node, key: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == key))
}

#[derive(Clone)]
pub struct NodeOps {
    pub client: Client,
    pub node_name: String,
}

impl NodeOps {
    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    pub async fn get(&self) -> kube::Result<Node> {
        self.nodes().get(&self.node_name).await
    }

    /// Applies `change` to a fresh copy of the node and merge-patches the result under the
    /// node's resourceVersion, retrying on conflicts.
    async fn update(
        &self,
        what: &str,
        change: impl Fn(&Node) -> Option<Value>,
    ) -> kube::Result<()> {
        let mut last = None;
        for _ in 0..5 {
            let node = self.get().await?;
            let Some(mut patch) = change(&node) else {
                return Ok(());
            };
            patch["metadata"]["resourceVersion"] = json!(node.metadata.resource_version);
            match self
                .nodes()
                .patch(
                    &self.node_name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => {
                    tracing::debug!(node = %self.node_name, what, "node updated");
                    return Ok(());
                }
                Err(kube::Error::Api(e)) if e.code == 409 => last = Some(kube::Error::Api(e)),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("five conflicts"))
    }

    /// Taint (if interrupted), cordon and record the drain, in one write.
    pub async fn begin_drain(&self, rec: &DrainRecord) -> kube::Result<()> {
        let record = serde_json::to_string(rec).expect("record serialises");
        self.update("begin drain", |node| {
            let mut patch = json!({
                "metadata": {"annotations": {ANNOTATION_DRAIN: record}},
                "spec": {"unschedulable": true},
            });
            if rec.interrupted {
                patch["spec"]["taints"] =
                    json!(with_taint(node, TAINT_INTERRUPTED, Some("NoSchedule")));
            }
            Some(patch)
        })
        .await
    }

    /// Uncordon, drop the drain record and remember the event as handled.
    pub async fn end_drain(&self, event: &str, handled: &BTreeSet<String>) -> kube::Result<()> {
        let mut handled = handled.clone();
        handled.insert(event.into());
        let value = handled_value(&handled);
        self.update("end drain", |node| {
            Some(json!({
                "metadata": {"annotations": {ANNOTATION_DRAIN: null, ANNOTATION_HANDLED: value}},
                "spec": {"unschedulable": null, "taints": with_taint(node, TAINT_INTERRUPTED, None)},
            }))
        })
        .await
    }

    pub async fn remember(&self, handled: &BTreeSet<String>) -> kube::Result<()> {
        let value = handled_value(handled);
        self.update("remember events", |_| {
            Some(json!({"metadata": {"annotations": {ANNOTATION_HANDLED: value}}}))
        })
        .await
    }

    pub async fn set_taint(&self, key: &str, effect: Option<&str>) -> kube::Result<()> {
        self.update("taint", |node| {
            let present = has_taint(node, key);
            if present == effect.is_some() {
                return None;
            }
            Some(json!({"spec": {"taints": with_taint(node, key, effect)}}))
        })
        .await
    }

    /// Posts the `AdzeAgentReady` node condition (strategic merge: other conditions stay).
    pub async fn report_ready(&self, ready: bool, reason: &str, message: &str) -> kube::Result<()> {
        let now = rfc3339(Utc::now());
        let current = self.get().await?;
        let old = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == CONDITION_READY).cloned());
        let status = if ready { "True" } else { "False" };
        let transition = old
            .filter(|c| c.status == status)
            .and_then(|c| c.last_transition_time)
            .map(|t| serde_json::to_value(t).expect("time"))
            .unwrap_or(json!(now));
        let patch = json!({"status": {"conditions": [{
            "type": CONDITION_READY, "status": status, "reason": reason,
            "message": if message.is_empty() { reason } else { message },
            "lastHeartbeatTime": now, "lastTransitionTime": transition,
        }]}});
        self.nodes()
            .patch_status(
                &self.node_name,
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await?;
        if ready && has_taint(&current, TAINT_AGENT_NOT_READY) {
            tracing::info!(node = %self.node_name, "agent checks pass; removing startup taint");
            self.set_taint(TAINT_AGENT_NOT_READY, None).await?;
        }
        Ok(())
    }

    /// The node's NodeClaim: by the `adze.sh/nodeclaim` label, else by providerID.
    pub async fn nodeclaim(&self, node: &Node) -> kube::Result<Option<DynamicObject>> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &nodeclaim_resource());
        let label = node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(adze_scheduling::labels::NODECLAIM));
        if let Some(name) = label
            && let Some(c) = api.get_opt(name).await?
        {
            return Ok(Some(c));
        }
        let Some(pid) = node.spec.as_ref().and_then(|s| s.provider_id.clone()) else {
            return Ok(None);
        };
        let list = api.list(&ListParams::default()).await?;
        Ok(list
            .items
            .into_iter()
            .find(|c| c.data["status"]["providerID"].as_str() == Some(pid.as_str())))
    }

    /// Sets the NodeClaim's `Interrupted` condition (the contract the provisioner and the SQS
    /// path share). Idempotent: an existing True condition is left as it is.
    pub async fn mark_interrupted(&self, reason: &str, message: &str) -> kube::Result<bool> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &nodeclaim_resource());
        for _ in 0..5 {
            let node = self.get().await?;
            let Some(claim) = self.nodeclaim(&node).await? else {
                tracing::warn!(node = %self.node_name, "no NodeClaim found for this node");
                return Ok(false);
            };
            let name = claim.metadata.name.clone().unwrap_or_default();
            let mut conditions: Vec<Value> = claim.data["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if conditions
                .iter()
                .any(|c| c["type"] == CONDITION_INTERRUPTED && c["status"] == "True")
            {
                return Ok(true);
            }
            conditions.retain(|c| c["type"] != CONDITION_INTERRUPTED);
            conditions.push(json!({
                "type": CONDITION_INTERRUPTED, "status": "True", "reason": reason,
                "message": message, "lastTransitionTime": rfc3339(Utc::now()),
            }));
            let patch = json!({
                "metadata": {"resourceVersion": claim.metadata.resource_version},
                "status": {"conditions": conditions},
            });
            match api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    tracing::info!(nodeclaim = %name, node = %self.node_name, reason, "NodeClaim marked Interrupted");
                    return Ok(true);
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_round_trips_through_annotations_and_ignores_garbage() {
        let rec = DrainRecord {
            event: "spot/x".into(),
            reason: "SpotInterruption".into(),
            deadline: Utc::now(),
            interrupted: true,
        };
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n", "annotations": {
            ANNOTATION_DRAIN: serde_json::to_string(&rec).unwrap(),
            ANNOTATION_HANDLED: handled_value(&["a".to_string()].into()),
        }}}))
        .unwrap();
        let m = memory_of(&node);
        assert_eq!(m.drain, Some(rec));
        assert!(m.handled.contains("a"));
        let bad: Node = serde_json::from_value(
            json!({"metadata": {"name": "n", "annotations": {ANNOTATION_DRAIN: "{", ANNOTATION_HANDLED: "x"}}}),
        )
        .unwrap();
        assert_eq!(memory_of(&bad), Memory::default());
    }

    #[test]
    fn taint_edit_keeps_other_taints() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "other", "effect": "NoSchedule"}, {"key": TAINT_AGENT_NOT_READY, "effect": "NoSchedule"}]}}))
        .unwrap();
        let t = with_taint(&node, TAINT_AGENT_NOT_READY, None);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["key"], "other");
        let t = with_taint(&node, TAINT_INTERRUPTED, Some("NoSchedule"));
        assert_eq!(t.len(), 3);
        assert!(has_taint(&node, "other"));
    }
}
