//! A NodeClaim's life: launch → Launched (status.providerID, capacity, allocatable) →
//! Registered (a Node with that providerID exists: labels synced, owner reference set) →
//! Initialized (node Ready, startup taints gone). Each step is a small idempotent reconcile,
//! run for every claim on every tick from the watched state (level-based: a restart simply
//! resumes). Registration puts the termination finalizer on the Node; a deleted claim is left
//! to [`crate::termination`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_api::conditions::{self, nodeclaim as cond};
use adze_scheduling::labels;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::cloud::{CloudError, CloudProvider, UnavailableOfferings};
use crate::provisioning::TERMINATION_FINALIZER;
use crate::provisioning::snapshot::{NOT_READY_TAINT, claim_conditions};
use crate::state::ClusterState;

pub struct Lifecycle {
    pub client: Client,
    pub state: ClusterState,
    pub cloud: Arc<dyn CloudProvider>,
    pub unavailable: UnavailableOfferings,
    pub registration_timeout: Duration,
    /// The simulated cloud has no agent to lift startup taints; the lifecycle does it.
    pub remove_startup_taints: bool,
}

/// `list` with condition `type_` set; the transition time moves only when the status changes.
pub fn set_condition(
    list: &[Condition],
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> Vec<Condition> {
    let status = if status { "True" } else { "False" };
    let mut out: Vec<Condition> = list.iter().filter(|c| c.type_ != type_).cloned().collect();
    let transition = conditions::find(list, type_)
        .filter(|c| c.status == status)
        .map(|c| c.last_transition_time.clone());
    out.push(Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        // The CRD's schema wants a string; k8s-openapi writes an empty message as null.
        message: if message.is_empty() {
            reason.into()
        } else {
            message.into()
        },
        observed_generation: None,
        last_transition_time:
            transition.unwrap_or_else(|| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now(),
                )
            }),
    });
    out
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Extended resources (domain-qualified names such as `nvidia.com/gpu`) the instance has but
/// the Node does not advertise yet: device plugins register them some time after Ready, and
/// pods asking for them cannot schedule until then.
pub fn unregistered_extended_resources(
    instance: &BTreeMap<String, Quantity>,
    node_allocatable: &BTreeMap<String, Quantity>,
) -> Vec<String> {
    let nonzero = |q: &Quantity| !q.0.trim().is_empty() && q.0.trim() != "0";
    instance
        .iter()
        .filter(|(k, v)| k.contains('/') && !k.starts_with("kubernetes.io/") && nonzero(v))
        .filter(|(k, _)| !node_allocatable.get(*k).is_some_and(nonzero))
        .map(|(k, _)| k.clone())
        .collect()
}

fn age(claim: &NodeClaim) -> Duration {
    claim
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| {
            let d = k8s_openapi::jiff::Timestamp::now().duration_since(t.0);
            Duration::from_secs(d.as_secs().max(0) as u64)
        })
        .unwrap_or_default()
}

fn nodepool_of(claim: &NodeClaim) -> String {
    claim
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::NODEPOOL).cloned())
        .unwrap_or_default()
}

/// Counts a failed cloud call by operation and kind, and passes the error on.
fn cloud_error(op: &str, e: CloudError) -> CloudError {
    let kind = match &e {
        CloudError::InsufficientCapacity { .. } => "insufficient_capacity",
        _ => "other",
    };
    crate::metrics::provisioner().cloud_errors.inc(&[op, kind]);
    e
}

impl Lifecycle {
    pub async fn run(self) {
        let this = Arc::new(self);
        loop {
            let claims = this.state.claims.state();
            futures::stream::iter(claims)
                .for_each_concurrent(16, |c| {
                    let this = this.clone();
                    async move {
                        let name = c.metadata.name.clone().unwrap_or_default();
                        if let Err(e) = this.reconcile(&c).await {
                            tracing::warn!(nodeclaim = %name, error = %format!("{e:#}"), "nodeclaim reconcile failed; retrying");
                        }
                    }
                })
                .await;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    fn claims(&self) -> Api<NodeClaim> {
        Api::all(self.client.clone())
    }

    async fn patch_status(&self, name: &str, status: serde_json::Value) -> anyhow::Result<()> {
        self.claims()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await?;
        Ok(())
    }

    /// Deletes the claim; `reason` is the metric label, `why` the log line.
    async fn delete_claim(&self, name: &str, reason: &str, why: &str) -> anyhow::Result<()> {
        tracing::info!(nodeclaim = %name, reason = %why, "deleting nodeclaim");
        match self.claims().delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                crate::metrics::provisioner()
                    .nodeclaims_terminated
                    .inc(&[reason]);
                Ok(())
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn node_for(&self, claim: &NodeClaim) -> Option<Arc<Node>> {
        let pid = claim.status.as_ref()?.provider_id.as_deref()?;
        self.state
            .nodes
            .state()
            .into_iter()
            .find(|n| n.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(pid))
    }

    pub async fn reconcile(&self, claim: &NodeClaim) -> anyhow::Result<()> {
        let name = claim.metadata.name.clone().unwrap_or_default();
        // A deleted claim belongs to [`crate::termination`].
        if claim.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let conds = claim_conditions(claim).to_vec();
        if !conditions::is_true(&conds, cond::LAUNCHED) {
            return self.launch(claim, &name, &conds).await;
        }
        let node = self.node_for(claim);
        if !conditions::is_true(&conds, cond::REGISTERED) {
            let Some(node) = node else {
                if age(claim) > self.registration_timeout {
                    self.delete_claim(
                        &name,
                        "registration_timeout",
                        &format!("not registered within {:?}", self.registration_timeout),
                    )
                    .await?;
                    return Ok(());
                }
                // An instance the cloud no longer knows (e.g. launched before a restart of the
                // simulated cloud) is launched again; create is idempotent per claim.
                let pid = claim
                    .status
                    .as_ref()
                    .and_then(|s| s.provider_id.clone())
                    .unwrap_or_default();
                if self
                    .cloud
                    .get(&pid)
                    .await
                    .map_err(|e| cloud_error("get", e))?
                    .is_none()
                {
                    self.cloud
                        .create(claim)
                        .await
                        .map_err(|e| cloud_error("create", e))?;
                }
                return Ok(());
            };
            return self.register(claim, &name, &node, &conds).await;
        }
        if let Some(node) = node.filter(|_| !conditions::is_true(&conds, cond::INITIALIZED)) {
            return self.initialize(claim, &name, &node, &conds).await;
        }
        Ok(())
    }

    async fn launch(
        &self,
        claim: &NodeClaim,
        name: &str,
        conds: &[Condition],
    ) -> anyhow::Result<()> {
        match self
            .cloud
            .create(claim)
            .await
            .map_err(|e| cloud_error("create", e))
        {
            Ok(i) => {
                let conds = set_condition(
                    conds,
                    cond::LAUNCHED,
                    true,
                    "Launched",
                    &format!("{} {} {}", i.instance_type, i.zone, i.capacity_type),
                );
                let conds = set_condition(
                    &conds,
                    cond::REGISTERED,
                    false,
                    "AwaitingNode",
                    "no node with the instance's providerID yet",
                );
                self.patch_status(name, json!({
                    "providerID": i.provider_id, "capacity": i.capacity, "allocatable": i.allocatable,
                    "conditions": conds,
                }))
                .await?;
                tracing::info!(nodeclaim = %name, provider_id = %i.provider_id, instance_type = %i.instance_type, "launched");
                crate::metrics::provisioner()
                    .nodeclaims_launched
                    .inc(&[&nodepool_of(claim)]);
                Ok(())
            }
            Err(CloudError::InsufficientCapacity {
                instance_type,
                zone,
                capacity_type,
                message,
            }) => {
                self.unavailable
                    .mark(&instance_type, &zone, &capacity_type, Instant::now());
                self.delete_claim(name, "insufficient_capacity", &format!("launch failed: {message}; offering {instance_type}/{zone}/{capacity_type} unavailable for 3m")).await
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn register(
        &self,
        claim: &NodeClaim,
        name: &str,
        node: &Node,
        conds: &[Condition],
    ) -> anyhow::Result<()> {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let mut sync: BTreeMap<String, String> = claim.metadata.labels.clone().unwrap_or_default();
        sync.insert(labels::NODECLAIM.into(), name.into());
        sync.insert(labels::REGISTERED.into(), "true".into());
        let owner = json!([{
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "name": name,
            "uid": claim.metadata.uid,
        }]);
        // The finalizer keeps the Node until termination has drained it.
        let mut finalizers = node.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == TERMINATION_FINALIZER) {
            finalizers.push(TERMINATION_FINALIZER.into());
        }
        let nodes: Api<Node> = Api::all(self.client.clone());
        nodes
            .patch(
                &node_name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {
                    "labels": sync, "ownerReferences": owner, "finalizers": finalizers,
                    "resourceVersion": node.metadata.resource_version,
                }})),
            )
            .await?;
        let conds = set_condition(
            conds,
            cond::REGISTERED,
            true,
            "Registered",
            &format!("node {node_name}"),
        );
        let conds = set_condition(
            &conds,
            cond::INITIALIZED,
            false,
            "NotInitialized",
            "waiting for Ready and startup taints to go",
        );
        self.patch_status(name, json!({"nodeName": node_name, "conditions": conds}))
            .await?;
        tracing::info!(nodeclaim = %name, node = %node_name, "registered");
        crate::metrics::provisioner()
            .nodeclaims_registered
            .inc(&[&nodepool_of(claim)]);
        Ok(())
    }

    async fn initialize(
        &self,
        claim: &NodeClaim,
        name: &str,
        node: &Node,
        conds: &[Condition],
    ) -> anyhow::Result<()> {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let startup = |k: &str| claim.spec.startup_taints.iter().any(|t| t.key == k);
        let nodes: Api<Node> = Api::all(self.client.clone());
        if self.remove_startup_taints && taints.iter().any(|t| startup(&t.key)) {
            let kept: Vec<_> = taints.iter().filter(|t| !startup(&t.key)).collect();
            nodes
                .patch(
                    &node_name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({
                        "metadata": {"resourceVersion": node.metadata.resource_version},
                        "spec": {"taints": kept},
                    })),
                )
                .await?;
            return Ok(());
        }
        if !node_ready(node)
            || taints
                .iter()
                .any(|t| t.key == NOT_READY_TAINT || startup(&t.key))
        {
            return Ok(());
        }
        let expected = claim
            .status
            .as_ref()
            .map(|s| s.capacity.clone())
            .unwrap_or_default();
        let allocatable = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        let missing = unregistered_extended_resources(&expected, &allocatable);
        if !missing.is_empty() {
            tracing::debug!(nodeclaim = %name, node = %node_name, missing = ?missing, "waiting for extended resources");
            return Ok(());
        }
        nodes
            .patch(
                &node_name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {labels::INITIALIZED: "true"}}})),
            )
            .await?;
        let conds = set_condition(
            conds,
            cond::INITIALIZED,
            true,
            "Initialized",
            "node ready, startup taints removed, extended resources registered",
        );
        let conds = set_condition(&conds, conditions::READY, true, "Ready", "node is ready");
        self.patch_status(name, json!({"conditions": conds}))
            .await?;
        tracing::info!(nodeclaim = %name, node = %node_name, age_s = age(claim).as_secs(), "initialized");
        crate::metrics::provisioner()
            .nodeclaims_initialized
            .inc(&[&nodepool_of(claim)]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialization_waits_until_the_node_advertises_the_instances_gpus() {
        let q = |v: &str| Quantity(v.into());
        let instance: BTreeMap<String, Quantity> = [
            ("cpu".to_string(), q("4")),
            ("nvidia.com/gpu".to_string(), q("1")),
            ("example.com/none".to_string(), q("0")),
        ]
        .into();
        let mut node: BTreeMap<String, Quantity> = [("cpu".to_string(), q("4"))].into();
        assert_eq!(
            unregistered_extended_resources(&instance, &node),
            vec!["nvidia.com/gpu".to_string()]
        );
        node.insert("nvidia.com/gpu".into(), q("0"));
        assert_eq!(unregistered_extended_resources(&instance, &node).len(), 1);
        node.insert("nvidia.com/gpu".into(), q("1"));
        assert!(unregistered_extended_resources(&instance, &node).is_empty());
    }

    #[test]
    fn condition_keeps_transition_time_when_status_unchanged() {
        let a = set_condition(&[], "Launched", true, "Launched", "x");
        let t = a[0].last_transition_time.clone();
        let b = set_condition(&a, "Launched", true, "Launched", "y");
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].last_transition_time, t);
        assert_eq!(b[0].message, "y");
        let c = set_condition(&b, "Registered", false, "AwaitingNode", "");
        assert_eq!(c.len(), 2);
    }
}
