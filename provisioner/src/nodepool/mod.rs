//! NodePool status: what the pool's NodeClaims hold (`status.resources`: the sum of their
//! capacity plus a `nodes` count) and three conditions: `NodeClassReady`, False while the
//! pool can launch nothing because its EC2NodeClass is missing or unresolved;
//! `ValidationSucceeded`, False while the spec breaks a rule of [`adze_api::validation`]
//! (the apiserver checks them as CEL where it can; 1.20 cannot); and `Ready`, both of them.
//! Written only when it changes.
//! Limits are enforced by provisioning, which counts every claim (launched or not); this
//! status is what people and dashboards read.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use adze_api::conditions::{self, nodepool as cond};
use adze_api::{EC2NodeClass, NodeClaim, NodePool};
use adze_scheduling::{Resources, labels};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::nodeclaim::set_condition;
use crate::state::ClusterState;

/// `status.resources` for a pool: the capacity of its launched, not-deleting claims, summed,
/// and `nodes`: how many there are.
pub fn pool_resources<'a>(
    pool: &str,
    claims: impl IntoIterator<Item = &'a NodeClaim>,
) -> BTreeMap<String, String> {
    let mut total = Resources::default();
    let mut nodes = 0;
    for c in claims {
        let in_pool = c
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NODEPOOL))
            .is_some_and(|p| p == pool);
        if !in_pool || c.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(capacity) = c
            .status
            .as_ref()
            .map(|s| &s.capacity)
            .filter(|m| !m.is_empty())
        else {
            continue;
        };
        if let Ok(r) =
            Resources::from_quantities(capacity.iter().map(|(k, v)| (k.as_str(), v.0.as_str())))
        {
            total.add(&r);
            nodes += 1;
        }
    }
    let mut out = total.to_quantities();
    out.insert("nodes".into(), nodes.to_string());
    out
}

/// The pool's `Ready` condition: (status, reason, message). With EC2NodeClasses watched
/// (`classes` is Some), a pool whose class is missing, or has no resolved subnets or images
/// yet, can launch nothing: not ready, and the message says why (the same words provisioning
/// logs). Without classes (the simulated cloud) every pool is ready.
pub fn readiness(
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    nodes: &str,
) -> (bool, &'static str, String) {
    match crate::provisioning::snapshot::pool_catalog(pool, classes, &[]) {
        Ok(_) => (true, "Ready", format!("{nodes} nodes launched")),
        Err(why) => {
            let wanted = &pool.spec.template.spec.node_class_ref.name;
            let missing = classes.is_some_and(|cs| {
                !cs.iter()
                    .any(|c| c.metadata.name.as_deref() == Some(wanted.as_str()))
            });
            let reason = if missing {
                "NodeClassNotFound"
            } else {
                "NodeClassNotReady"
            };
            (false, reason, why)
        }
    }
}

/// `ValidationSucceeded`: (status, reason, message).
pub fn validity(pool: &NodePool) -> (bool, &'static str, String) {
    match pool.validate() {
        Ok(()) => (true, "ValidationSucceeded", "spec is valid".into()),
        Err(e) => (false, "ValidationFailed", e.to_string()),
    }
}

/// The pool's conditions given `current` ones: `NodeClassReady` from [`readiness`],
/// `ValidationSucceeded` from [`validity`], and `Ready` rolling both up (the first that fails
/// gives its reason). `None` when nothing a reader would notice changed (Ready's node count
/// aside).
pub fn pool_conditions(
    current: &[Condition],
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    nodes: &str,
) -> Option<Vec<Condition>> {
    let (class_ok, class_reason, class_message) = readiness(pool, classes, nodes);
    let (valid, valid_reason, valid_message) = validity(pool);
    let (ready, reason, message) = if !class_ok {
        (false, class_reason, class_message.clone())
    } else if !valid {
        (false, valid_reason, valid_message.clone())
    } else {
        (true, class_reason, class_message.clone())
    };
    let (class_reason, class_message) = if class_ok {
        (
            "NodeClassReady",
            "the node class can launch nodes".to_string(),
        )
    } else {
        (class_reason, class_message)
    };
    let wanted = [
        (
            cond::NODE_CLASS_READY,
            class_ok,
            class_reason,
            class_message,
        ),
        (
            cond::VALIDATION_SUCCEEDED,
            valid,
            valid_reason,
            valid_message,
        ),
        (conditions::READY, ready, reason, message),
    ];
    let unchanged = wanted.iter().all(|(t, ok, reason, message)| {
        conditions::find(current, t).is_some_and(|c| {
            (c.status == "True") == *ok
                && c.reason == *reason
                && (*t == conditions::READY && *ok || c.message == *message)
        })
    });
    if unchanged {
        return None;
    }
    let mut out = current.to_vec();
    for (t, ok, reason, message) in &wanted {
        out = set_condition(&out, t, *ok, reason, message);
    }
    Some(out)
}

pub struct Status {
    pub client: Client,
    pub state: ClusterState,
    pub interval: Duration,
}

impl Status {
    /// Never returns.
    pub async fn run(self) {
        let api: Api<NodePool> = Api::all(self.client.clone());
        loop {
            let claims = self.state.claims.state();
            let classes = self.state.nodeclasses.as_ref().map(|s| s.state());
            for pool in self.state.nodepools.state() {
                let name = pool.metadata.name.clone().unwrap_or_default();
                let resources = pool_resources(&name, claims.iter().map(|c| c.as_ref()));
                let status = pool.status.clone().unwrap_or_default();
                let current: BTreeMap<String, String> = status
                    .resources
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0.clone()))
                    .collect();
                let nodes = resources.get("nodes").cloned().unwrap_or_default();
                let changed =
                    pool_conditions(&status.conditions, &pool, classes.as_deref(), &nodes);
                if current == resources && changed.is_none() {
                    continue;
                }
                let conditions = changed.unwrap_or_else(|| status.conditions.clone());
                if let Some(c) =
                    conditions::find(&conditions, conditions::READY).filter(|c| c.status != "True")
                {
                    tracing::warn!(nodepool = %name, reason = %c.reason, message = %c.message, "nodepool not ready");
                }
                let quantities: BTreeMap<String, Quantity> = resources
                    .into_iter()
                    .map(|(k, v)| (k, Quantity(v)))
                    .collect();
                let patch = json!({"status": {"resources": quantities, "conditions": conditions}});
                if let Err(e) = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    tracing::warn!(nodepool = %name, error = %e, "nodepool status not written");
                }
            }
            tokio::time::sleep(self.interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, pool: &str, capacity: Option<(&str, &str)>, deleting: bool) -> NodeClaim {
        let mut v = json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {labels::NODEPOOL: pool}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        });
        if let Some((cpu, mem)) = capacity {
            v["status"] = json!({"capacity": {"cpu": cpu, "memory": mem}});
        }
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(v).unwrap()
    }

    fn pool(class: &str) -> NodePool {
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": class}}}},
        }))
        .unwrap()
    }

    fn class(name: &str, resolved: bool) -> Arc<EC2NodeClass> {
        let mut v = json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"subnetSelectorTerms": [{"id": "subnet-0"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "node"},
        });
        if resolved {
            v["status"] = json!({"subnets": [{"id": "subnet-0", "zone": "us-east-1a"}],
                "amis": [{"id": "ami-1", "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn a_pool_is_ready_only_while_its_ec2nodeclass_exists_and_is_resolved() {
        // The simulated cloud watches no classes: every pool can launch.
        let (ready, reason, msg) = readiness(&pool("default"), None, "3");
        assert!(ready);
        assert_eq!((reason, msg.as_str()), ("Ready", "3 nodes launched"));

        let (ready, reason, msg) = readiness(&pool("default"), Some(&[class("other", true)]), "0");
        assert!(!ready);
        assert_eq!(reason, "NodeClassNotFound");
        assert!(msg.contains("EC2NodeClass default does not exist"), "{msg}");

        let (ready, reason, msg) =
            readiness(&pool("default"), Some(&[class("default", false)]), "0");
        assert!(!ready);
        assert_eq!(reason, "NodeClassNotReady");
        assert!(msg.contains("no resolved subnets or images"), "{msg}");

        let (ready, reason, _) = readiness(&pool("default"), Some(&[class("default", true)]), "0");
        assert!(ready);
        assert_eq!(reason, "Ready");
    }

    #[test]
    fn node_class_ready_and_validation_succeeded_roll_up_into_ready() {
        let ok = pool_conditions(&[], &pool("default"), Some(&[class("default", true)]), "1")
            .expect("first write");
        for t in [
            cond::NODE_CLASS_READY,
            cond::VALIDATION_SUCCEEDED,
            conditions::READY,
        ] {
            assert!(conditions::is_true(&ok, t), "{t}: {ok:?}");
        }
        // Nothing new to say: no write, even as the node count moves.
        assert_eq!(
            pool_conditions(&ok, &pool("default"), Some(&[class("default", true)]), "2"),
            None
        );
        let missing = pool_conditions(&ok, &pool("default"), Some(&[]), "0").unwrap();
        assert!(!conditions::is_true(&missing, cond::NODE_CLASS_READY));
        assert!(conditions::is_true(&missing, cond::VALIDATION_SUCCEEDED));
        let ready = conditions::find(&missing, conditions::READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "NodeClassNotFound")
        );
        let mut bad = pool("default");
        bad.spec.weight = Some(1000);
        let invalid = pool_conditions(&ok, &bad, Some(&[class("default", true)]), "1").unwrap();
        let v = conditions::find(&invalid, cond::VALIDATION_SUCCEEDED).unwrap();
        assert_eq!(
            (v.status.as_str(), v.reason.as_str()),
            ("False", "ValidationFailed")
        );
        assert!(conditions::is_true(&invalid, cond::NODE_CLASS_READY));
        assert!(!conditions::is_true(&invalid, conditions::READY));
    }

    #[test]
    fn pool_resources_sum_launched_claims_of_the_pool_only() {
        let claims = [
            claim("a", "web", Some(("4", "16Gi")), false),
            claim("b", "web", Some(("2", "8Gi")), false),
            claim("c", "web", None, false),
            claim("d", "web", Some(("8", "32Gi")), true),
            claim("e", "batch", Some(("16", "64Gi")), false),
        ];
        let r = pool_resources("web", &claims);
        assert_eq!(r["cpu"], "6");
        assert_eq!(r["memory"], "24Gi");
        assert_eq!(r["nodes"], "2");
        assert_eq!(pool_resources("none", &claims)["nodes"], "0");
    }
}
