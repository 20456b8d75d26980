//! A NodeClaim's life: launch → Launched (status.providerID, capacity, allocatable) →
//! Registered (a Node with that providerID exists: labels synced, owner reference set) →
//! Initialized (node Ready, startup taints gone). Each step is a small idempotent reconcile of
//! one claim from the watched state (level-based: a restart simply resumes), run when the claim
//! changes or its requeue time comes ([`requeue`]); a failing claim backs off alone. A launch
//! the cloud refuses is retried with backoff, shown as `Launched=False` with the cloud's
//! reason (and an event on the claim and its pods), and given up after the launch timeout so
//! its pods are planned again. Registration puts the termination finalizer on the Node; a
//! deleted claim is left to [`crate::termination`].

pub mod requeue;

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
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
    /// A claim the cloud has not launched by then is deleted, so its pods are planned again.
    pub launch_timeout: Duration,
    /// The simulated cloud has no agent to lift startup taints; the lifecycle does it.
    pub remove_startup_taints: bool,
    pub recorder: crate::events::Recorder,
}

/// How often a launched claim whose node has not registered asks the cloud whether its
/// instance still exists (a relaunch is idempotent, but the call is not free).
const VANISHED_CHECK: Duration = Duration::from_secs(30);
/// Requeue while waiting for something only the watches report (a Node, Ready).
const WAITING: Duration = Duration::from_millis(500);
/// Requeue of a claim with nothing left to do (a change reconciles it at once anyway).
const SETTLED: Duration = Duration::from_secs(60);

/// Per-claim bookkeeping shared by the reconciles.
#[derive(Default)]
struct Memory {
    requeue: requeue::Requeue,
    /// Last time a booting claim's instance was looked up, by claim uid.
    vanished_check: HashMap<String, Instant>,
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

pub(crate) use crate::provisioning::snapshot::node_ready;

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

fn uid_of(claim: &NodeClaim) -> String {
    claim.metadata.uid.clone().unwrap_or_default()
}

fn version_of(claim: &NodeClaim) -> String {
    claim.metadata.resource_version.clone().unwrap_or_default()
}

pub(crate) fn nodepool_of(claim: &NodeClaim) -> String {
    claim
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::NODEPOOL).cloned())
        .unwrap_or_default()
}

impl Lifecycle {
    pub async fn run(self) {
        let this = Arc::new(self);
        let memory = Arc::new(Mutex::new(Memory::default()));
        loop {
            let claims = this.state.claims.state();
            let now = Instant::now();
            let live: HashSet<String> = claims
                .iter()
                .filter_map(|c| c.metadata.uid.clone())
                .collect();
            let due: Vec<Arc<NodeClaim>> = {
                let mut m = memory.lock_or_recover();
                m.requeue.retain(&live);
                m.vanished_check.retain(|uid, _| live.contains(uid));
                claims
                    .into_iter()
                    .filter(|c| m.requeue.due(&uid_of(c), &version_of(c), now))
                    .collect()
            };
            futures::stream::iter(due)
                .for_each_concurrent(16, |c| {
                    let this = this.clone();
                    let memory = memory.clone();
                    async move {
                        let name = c.metadata.name.clone().unwrap_or_default();
                        let (uid, version) = (uid_of(&c), version_of(&c));
                        match this.reconcile(&c, &memory).await {
                            Ok(after) => memory.lock_or_recover().requeue.succeeded(&uid, &version, Instant::now(), after),
                            Err(e) => {
                                let wait = memory.lock_or_recover().requeue.failed(&uid, &version, Instant::now());
                                tracing::warn!(nodeclaim = %name, error = %format!("{e:#}"), retry_in_ms = wait.as_millis() as u64, "nodeclaim reconcile failed; backing off");
                            }
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
                    .get_or_create(&crate::metrics::reason(reason))
                    .inc();
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

    /// One step of the claim's life; returns when to look at it again.
    async fn reconcile(
        &self,
        claim: &NodeClaim,
        memory: &Mutex<Memory>,
    ) -> anyhow::Result<Duration> {
        let name = claim.metadata.name.clone().unwrap_or_default();
        // A deleted claim belongs to [`crate::termination`].
        if claim.metadata.deletion_timestamp.is_some() {
            return Ok(SETTLED);
        }
        let conds = claim_conditions(claim).to_vec();
        if !conditions::is_true(&conds, cond::LAUNCHED) {
            self.launch(claim, &name, &conds).await?;
            return Ok(Duration::ZERO);
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
                    return Ok(SETTLED);
                }
                // An instance the cloud no longer knows (e.g. launched before a restart of the
                // simulated cloud) is launched again; create is idempotent per claim. Asked
                // now and then, not on every look: the node's arrival comes through the watch.
                let uid = uid_of(claim);
                let check = {
                    let mut m = memory.lock_or_recover();
                    let last = m.vanished_check.get(&uid).copied();
                    let due = last.is_none_or(|t| t.elapsed() >= VANISHED_CHECK);
                    if due {
                        m.vanished_check.insert(uid, Instant::now());
                    }
                    due && last.is_some()
                };
                if check {
                    let pid = claim
                        .status
                        .as_ref()
                        .and_then(|s| s.provider_id.clone())
                        .unwrap_or_default();
                    if self.cloud.get(&pid).await?.is_none() {
                        tracing::info!(nodeclaim = %name, provider_id = %pid, "instance not found while waiting for its node; launching again (idempotent)");
                        self.cloud.create(claim).await?;
                    }
                }
                return Ok(WAITING);
            };
            self.register(claim, &name, &node, &conds).await?;
            return Ok(Duration::ZERO);
        }
        if let Some(node) = node.filter(|_| !conditions::is_true(&conds, cond::INITIALIZED)) {
            self.initialize(claim, &name, &node, &conds).await?;
            return Ok(WAITING);
        }
        Ok(SETTLED)
    }

    /// Tells the claim and the pods nominated to it why their capacity is late or gone.
    fn announce(&self, claim: &NodeClaim, reason: &str, message: &str) {
        for n in warnings(claim, reason, message) {
            self.recorder.send(n);
        }
    }

    async fn launch(
        &self,
        claim: &NodeClaim,
        name: &str,
        conds: &[Condition],
    ) -> anyhow::Result<()> {
        if age(claim) > self.launch_timeout {
            let last = conditions::find(conds, cond::LAUNCHED)
                .map(|c| format!("{}: {}", c.reason, c.message))
                .unwrap_or_else(|| "no answer from the cloud".into());
            let why = format!(
                "not launched within {:?} ({last}); its pods will be planned again",
                self.launch_timeout
            );
            self.announce(claim, "LaunchTimedOut", &format!("NodeClaim {name} {why}"));
            return self.delete_claim(name, "launch_timeout", &why).await;
        }
        match self.cloud.create(claim).await {
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
                // The claim's labels came from the plan's cheapest option; the cloud may have
                // launched another of the options it was given.
                let old = claim.metadata.labels.clone().unwrap_or_default();
                let new =
                    crate::cloud::relabel_for_instance(&old, &i, &self.cloud.instance_types());
                let mut patch = serde_json::Map::new();
                for k in old.keys().filter(|k| !new.contains_key(*k)) {
                    patch.insert(k.clone(), serde_json::Value::Null);
                }
                for (k, v) in &new {
                    if old.get(k) != Some(v) {
                        patch.insert(k.clone(), json!(v));
                    }
                }
                if !patch.is_empty() {
                    tracing::info!(nodeclaim = %name, planned = ?old.get(labels::INSTANCE_TYPE), launched = %i.instance_type, zone = %i.zone, "labels follow the launched instance");
                    self.claims()
                        .patch(
                            name,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"metadata": {"labels": patch}})),
                        )
                        .await?;
                }
                self.patch_status(name, json!({
                    "providerID": i.provider_id, "capacity": i.capacity, "allocatable": i.allocatable,
                    "conditions": conds,
                }))
                .await?;
                tracing::info!(nodeclaim = %name, provider_id = %i.provider_id, instance_type = %i.instance_type, "launched");
                crate::metrics::provisioner()
                    .nodeclaims_launched
                    .get_or_create(&crate::metrics::nodepool(&nodepool_of(claim)))
                    .inc();
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
                self.announce(
                    claim,
                    INSUFFICIENT_CAPACITY,
                    &insufficient_capacity_message(
                        name,
                        &instance_type,
                        &zone,
                        &capacity_type,
                        &message,
                    ),
                );
                self.delete_claim(name, "insufficient_capacity", &format!("launch failed: {message}; offering {instance_type}/{zone}/{capacity_type} unavailable for 3m")).await
            }
            Err(e) => {
                let reason = e.reason().to_string();
                let message = e.to_string();
                let prev = conditions::find(conds, cond::LAUNCHED);
                if prev.is_none_or(|c| c.reason != reason || c.status != "False") {
                    self.announce(
                        claim,
                        "LaunchFailed",
                        &format!("NodeClaim {name} could not launch: {message}; retrying with backoff for up to {:?}", self.launch_timeout),
                    );
                }
                if prev.is_none_or(|c| c.reason != reason || c.message != message) {
                    let conds = set_condition(conds, cond::LAUNCHED, false, &reason, &message);
                    self.patch_status(name, json!({"conditions": conds}))
                        .await?;
                }
                Err(e.into())
            }
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
        // The finalizer keeps the Node until termination has drained it. A strategic merge
        // patch: labels and owner references merge by key and finalizers as a set, so the
        // kubelet's concurrent writes neither conflict with it nor are overwritten.
        let nodes: Api<Node> = Api::all(self.client.clone());
        nodes
            .patch(
                &node_name,
                &PatchParams::default(),
                &Patch::Strategic(json!({"metadata": {
                    "labels": sync, "ownerReferences": owner,
                    "finalizers": [TERMINATION_FINALIZER],
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
            .get_or_create(&crate::metrics::nodepool(&nodepool_of(claim)))
            .inc();
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
            .get_or_create(&crate::metrics::nodepool(&nodepool_of(claim)))
            .inc();
        Ok(())
    }
}

/// The Warning a launch problem gets: on the NodeClaim and on each pending pod it was planned
/// for (its nominations), where the pod's owner looks (`kubectl describe pod`).
fn warnings(claim: &NodeClaim, reason: &str, message: &str) -> Vec<crate::events::Note> {
    let mut out = vec![crate::events::Note::new(
        crate::events::reference(claim),
        "Warning",
        reason,
        message,
    )];
    for n in crate::state::nomination::of_claim(claim) {
        let about = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(n.name),
            namespace: Some(n.namespace),
            uid: Some(n.uid),
            ..Default::default()
        };
        out.push(crate::events::Note::new(about, "Warning", reason, message));
    }
    out
}

/// The event reason of a launch the cloud refused for want of capacity.
pub const INSUFFICIENT_CAPACITY: &str = "InsufficientCapacity";

/// What the pods of a claim the cloud had no capacity for are told: which offering, the
/// cloud's own words, and what happens next.
fn insufficient_capacity_message(
    claim: &str,
    instance_type: &str,
    zone: &str,
    capacity_type: &str,
    cloud: &str,
) -> String {
    format!(
        "NodeClaim {claim} could not launch: the cloud has no {capacity_type} {instance_type} capacity in {zone} ({cloud}); the NodeClaim is deleted, that offering is avoided for 3m and its pods are planned again on other offerings"
    )
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
    fn insufficient_capacity_is_told_to_the_claim_and_each_pod_it_was_for() {
        let pods = [("shop", "web-1", "u1"), ("shop", "web-2", "u2")].map(|(ns, n, u)| {
            crate::state::nomination::Nomination {
                namespace: ns.into(),
                name: n.into(),
                uid: u.into(),
            }
        });
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abc", "uid": "c1", "annotations": {
                (labels::NOMINATED_PODS): crate::state::nomination::encode(&pods)}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        let message = insufficient_capacity_message(
            "default-abc",
            "t3a.xlarge",
            "us-east-1a",
            "on-demand",
            "InsufficientInstanceCapacity: none left",
        );
        for part in [
            "default-abc",
            "no on-demand t3a.xlarge capacity in us-east-1a",
            "InsufficientInstanceCapacity: none left",
            "planned again",
        ] {
            assert!(message.contains(part), "{part} in {message}");
        }
        let notes = warnings(&claim, INSUFFICIENT_CAPACITY, &message);
        let about: Vec<_> = notes
            .iter()
            .map(|n| {
                (
                    n.about.kind.as_deref().unwrap(),
                    n.about.namespace.as_deref(),
                    n.about.name.as_deref().unwrap(),
                    n.about.uid.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            about,
            [
                ("NodeClaim", None, "default-abc", "c1"),
                ("Pod", Some("shop"), "web-1", "u1"),
                ("Pod", Some("shop"), "web-2", "u2"),
            ]
        );
        assert!(notes.iter().all(|n| n.type_ == "Warning"
            && n.reason == "InsufficientCapacity"
            && n.message == message));
        // A documented reason, distinct from LaunchFailed's.
        assert!(
            crate::events::reasons::ALL
                .iter()
                .any(|r| r.name == INSUFFICIENT_CAPACITY && r.on == "NodeClaim, Pod")
        );
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
