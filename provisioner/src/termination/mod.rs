//! Termination: what happens between a NodeClaim's deletion and its disappearance. The
//! finalizer `adze.sh/termination` sits on every NodeClaim and on its Node, so neither goes
//! before the steps below are done:
//!
//! 1. taint the node `adze.sh/disrupted:NoSchedule` (nothing new lands on it);
//! 2. evict its pods through the Eviction API in waves ([`drain`]); a PodDisruptionBudget's
//!    429 is retried with backoff;
//! 3. wait for the node's VolumeAttachments to go ([`volumes`]);
//! 4. when the claim has a `terminationGracePeriod`, its deletion plus that period is the
//!    node's deadline: each pod left is deleted early enough to get its own
//!    `terminationGracePeriodSeconds` before it (or with what remains), PDBs no longer asked;
//!    at the deadline whatever is left is deleted with grace 0 and volumes are not waited for;
//! 5. terminate the instance and wait until the cloud no longer reports it;
//! 6. delete the Node and release its finalizer, then release the claim's.
//!
//! Every step reads where it is from the cluster (taint present, pods left, attachments left,
//! instance present, Node present), so a restart resumes where the last process stopped.
//! Deleting a Node that carries the finalizer deletes its NodeClaim, which then runs the same
//! steps.

pub mod drain;
pub mod volumes;
pub mod writes;

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_api::conditions::{self, nodeclaim as cond};
use adze_api::eviction;
use adze_scheduling::labels::TAINT_DISRUPTED;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

use crate::cloud::CloudProvider;
use crate::events::{Recorder, reference};
use crate::provisioning::TERMINATION_FINALIZER;
use crate::provisioning::snapshot::claim_conditions;
use crate::state::ClusterState;

const TICK: Duration = Duration::from_millis(500);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
/// A PDB refusal clears as soon as another pod of the budget turns Ready; waiting longer than
/// this between retries only slows the drain (one request per blocked pod per 10 s is cheap).
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How often `cloud.delete` is repeated while an instance is shutting down.
const DELETE_REPEAT: Duration = Duration::from_secs(10);

/// Seconds from `now` to the claim's deadline (its deletion plus its
/// `terminationGracePeriod`), rounded down; `None` when it has no grace period or is not
/// being deleted. Zero or less: the deadline has passed. A claim deleted by node repair
/// (`Disrupting`, reason `Unhealthy`, or `UnhealthyForceful` in its legacy mode) has no grace period, as in Karpenter: its node is
/// presumed unable to drain, so its deadline is its deletion.
pub fn remaining(claim: &NodeClaim, now: k8s_openapi::jiff::Timestamp) -> Option<i64> {
    let deleted = claim.metadata.deletion_timestamp.as_ref()?;
    let grace = if repaired(claim) {
        0.0
    } else {
        claim
            .spec
            .termination_grace_period
            .as_ref()?
            .as_std()
            .as_secs_f64()
    };
    let elapsed = now.duration_since(deleted.0).as_secs_f64();
    Some((grace - elapsed).floor() as i64)
}

/// Whether node repair deleted the claim.
fn repaired(claim: &NodeClaim) -> bool {
    conditions::find(claim_conditions(claim), cond::DISRUPTING).is_some_and(|c| {
        use adze_scheduling::disruption::repair::{REASON, REASON_FORCEFUL};
        c.status == "True" && (c.reason == REASON || c.reason == REASON_FORCEFUL)
    })
}

/// Whether the claim's deadline has passed: the drain stops asking and deletes what is left.
pub fn grace_over(claim: &NodeClaim, now: k8s_openapi::jiff::Timestamp) -> bool {
    remaining(claim, now).is_some_and(|r| r <= 0)
}

/// Why the claim is going, for log lines and events: the Disrupting condition's message
/// when the disruption controller set one.
fn why(claim: &NodeClaim) -> String {
    conditions::find(claim_conditions(claim), cond::DISRUPTING)
        .filter(|c| c.status == "True")
        .map(|c| c.message.clone())
        .unwrap_or_else(|| "nodeclaim deleted".into())
}

fn has_finalizer(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.finalizers
        .iter()
        .flatten()
        .any(|f| f == TERMINATION_FINALIZER)
}

fn has_disrupted_taint(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .any(|t| t.key == TAINT_DISRUPTED && t.effect == "NoSchedule")
}

/// Per-pod eviction retry state: a 429 doubles the wait, up to [`BACKOFF_MAX`].
#[derive(Debug, Clone, Copy)]
struct Backoff {
    next: Instant,
    wait: Duration,
    /// The last answer was a PodDisruptionBudget's 429.
    blocked: bool,
}

pub struct Termination {
    client: Client,
    state: ClusterState,
    cloud: Arc<dyn CloudProvider>,
    recorder: Recorder,
    eviction_version: String,
    backoff: Mutex<HashMap<String, Backoff>>,
    /// (claim uid, step) pairs already logged, so a step waiting many ticks says so once.
    said: Mutex<HashSet<(String, &'static str)>>,
    last_delete: Mutex<HashMap<String, Instant>>,
}

impl Termination {
    /// Discovers the Eviction version the apiserver serves.
    pub async fn new(
        client: Client,
        state: ClusterState,
        cloud: Arc<dyn CloudProvider>,
        recorder: Recorder,
    ) -> Termination {
        let eviction_version = match client.list_core_api_resources("v1").await {
            Ok(list) => {
                eviction::version(&list).unwrap_or_else(|| eviction::DEFAULT_VERSION.into())
            }
            Err(e) => {
                tracing::warn!(error = %e, "core/v1 discovery failed; assuming {} evictions", eviction::DEFAULT_VERSION);
                eviction::DEFAULT_VERSION.into()
            }
        };
        tracing::info!(eviction = %eviction_version, "termination: eviction API discovered");
        Termination {
            recorder,
            client,
            state,
            cloud,
            eviction_version,
            backoff: Mutex::default(),
            said: Mutex::default(),
            last_delete: Mutex::default(),
        }
    }

    pub async fn run(self) {
        let this = Arc::new(self);
        loop {
            let claims = this.state.claims.state();
            futures::stream::iter(claims)
                .for_each_concurrent(16, |c| {
                    let this = this.clone();
                    async move {
                        match this.reconcile(&c).await {
                            Ok(()) => {}
                            // Another writer got there first: retried next tick, on the
                            // object as it is then.
                            Err(e) if writes::is_conflict(&e) => {
                                tracing::debug!(nodeclaim = %c.name_any(), error = %format!("{e:#}"), "termination step met a concurrent write; requeued");
                            }
                            Err(e) => {
                                tracing::warn!(nodeclaim = %c.name_any(), error = %format!("{e:#}"), "termination step failed; retrying");
                            }
                        }
                    }
                })
                .await;
            for node in this.state.nodes.state() {
                if node.metadata.deletion_timestamp.is_some()
                    && has_finalizer(&node.metadata)
                    && let Err(e) = this.node_deleted(&node).await
                {
                    if writes::is_conflict(&e) {
                        tracing::debug!(node = %node.name_any(), error = %format!("{e:#}"), "termination of a deleted node met a concurrent write; requeued");
                        continue;
                    }
                    tracing::warn!(node = %node.name_any(), error = %format!("{e:#}"), "termination of a deleted node failed; retrying");
                }
            }
            tokio::time::sleep(TICK).await;
        }
    }

    /// Says `msg` once per claim and step.
    fn first_time(&self, claim: &NodeClaim, step: &'static str) -> bool {
        let uid = claim.uid().unwrap_or_default();
        self.said.lock_or_recover().insert((uid, step))
    }

    fn claims(&self) -> Api<NodeClaim> {
        Api::all(self.client.clone())
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
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
        if claim.metadata.deletion_timestamp.is_none() {
            return self.ensure_finalizers(claim).await;
        }
        if !has_finalizer(&claim.metadata) {
            return Ok(());
        }
        let node = self.node_for(claim);
        if let Some(node) = &node
            && !self.drain(claim, node).await?
        {
            return Ok(());
        }
        if !self.instance_gone(claim).await? {
            return Ok(());
        }
        if let Some(node) = node {
            return self.release_node(claim, &node).await;
        }
        let name = claim.name_any();
        if let Some(p) = writes::remove_claim_finalizer(claim.finalizers()) {
            match self
                .claims()
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Json::<()>(writes::json_patch(p)?),
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        let age = claim
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| {
                k8s_openapi::jiff::Timestamp::now()
                    .duration_since(t.0)
                    .as_secs_f64()
            })
            .unwrap_or_default();
        tracing::info!(nodeclaim = %name, seconds = format!("{age:.1}"), reason = %why(claim), "terminated: instance gone, node removed, nodeclaim released");
        self.recorder.publish(
            reference(claim),
            "Normal",
            "Terminated",
            &format!("instance terminated and node removed {age:.1}s after deletion"),
        );
        Ok(())
    }

    /// Claims made before the finalizer existed, and Nodes that registered, get it.
    async fn ensure_finalizers(&self, claim: &NodeClaim) -> anyhow::Result<()> {
        if !has_finalizer(&claim.metadata) {
            let p = writes::add_claim_finalizer(
                claim.finalizers(),
                &claim.resource_version().unwrap_or_default(),
            );
            self.claims()
                .patch(
                    &claim.name_any(),
                    &PatchParams::default(),
                    &Patch::Json::<()>(writes::json_patch(p)?),
                )
                .await?;
        }
        if let Some(node) = self.node_for(claim)
            && node.metadata.deletion_timestamp.is_none()
            && !has_finalizer(&node.metadata)
        {
            self.nodes()
                .patch(
                    &node.name_any(),
                    &PatchParams::default(),
                    &Patch::Strategic(writes::add_node_finalizer()),
                )
                .await?;
        }
        Ok(())
    }

    /// A Node deleted directly: its NodeClaim is deleted and terminates it; a Node without a
    /// claim only has its finalizer released.
    async fn node_deleted(&self, node: &Node) -> anyhow::Result<()> {
        let pid = node.spec.as_ref().and_then(|s| s.provider_id.clone());
        let claim = self.state.claims.state().into_iter().find(|c| {
            pid.is_some() && c.status.as_ref().and_then(|s| s.provider_id.clone()) == pid
        });
        match claim {
            Some(c) if c.metadata.deletion_timestamp.is_none() => {
                tracing::info!(node = %node.name_any(), nodeclaim = %c.name_any(), "node deleted; deleting its nodeclaim so it terminates");
                match self
                    .claims()
                    .delete(&c.name_any(), &DeleteParams::default())
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
            Some(_) => Ok(()),
            None => {
                tracing::info!(node = %node.name_any(), "node deleted and no nodeclaim owns it; releasing it");
                self.remove_node_finalizer(node).await
            }
        }
    }

    async fn remove_node_finalizer(&self, node: &Node) -> anyhow::Result<()> {
        match self
            .nodes()
            .patch(
                &node.name_any(),
                &PatchParams::default(),
                &Patch::Strategic(writes::remove_node_finalizer()),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Steps 1–4. True once nothing on the node needs waiting for.
    async fn drain(&self, claim: &NodeClaim, node: &Node) -> anyhow::Result<bool> {
        let name = claim.name_any();
        let node_name = node.name_any();
        if !has_disrupted_taint(node) {
            self.nodes()
                .patch(
                    &node_name,
                    &PatchParams::default(),
                    &Patch::Strategic(writes::add_disrupted_taint()),
                )
                .await?;
            return Ok(false);
        }
        if self.first_time(claim, "drain") {
            let reason = why(claim);
            tracing::info!(nodeclaim = %name, node = %node_name, reason = %reason, "draining: node tainted {TAINT_DISRUPTED}:NoSchedule");
            let msg = format!("draining node {node_name}: {reason}");
            self.recorder
                .publish(reference(claim), "Normal", "Draining", &msg);
            self.recorder
                .publish(reference(node), "Normal", "Draining", &msg);
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let remaining = remaining(claim, now);
        let grace_over = grace_over(claim, now);
        let pods: Vec<Arc<Pod>> = self
            .state
            .pods
            .state()
            .into_iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&node_name))
            .collect();
        let classified: Vec<drain::DrainPod> = pods
            .iter()
            .map(|p| drain::classify(p, now.as_second()))
            .collect();
        let step = drain::plan(&classified, remaining, now.as_second());
        if !step.stuck.is_empty() && self.first_time(claim, "stuck") {
            let stuck: Vec<&str> = step.stuck.iter().map(|p| p.key.as_str()).collect();
            tracing::warn!(nodeclaim = %name, node = %node_name, pods = ?stuck, "pods terminating over {}s past their deletion time: their kubelet is not finishing them; the drain goes on without them", drain::STUCK_AFTER_SECONDS);
            let msg = format!(
                "not waiting for {} pod(s) stuck terminating on node {node_name} (the kubelet is not confirming their deletion): {}",
                stuck.len(),
                stuck.join(", ")
            );
            self.recorder
                .publish(reference(claim), "Warning", "StuckTerminatingPods", &msg);
        }
        for (p, grace) in &step.delete {
            self.delete_for_deadline(claim, &node_name, p, *grace, remaining.unwrap_or(0))
                .await;
        }
        for p in &step.evict {
            let pod = pods.iter().find(|x| x.uid().as_deref() == Some(&p.uid));
            if let Some(pod) = pod {
                self.evict(claim, &node_name, pod).await;
            }
        }
        if !step.done {
            tracing::debug!(nodeclaim = %name, node = %node_name, evicting = step.evict.len(), terminating = step.terminating, held_back = step.held_back, pinned = step.pinned, "draining");
            return Ok(false);
        }
        // Volumes, asked of the apiserver only once the pods are gone.
        let vas = Api::<VolumeAttachment>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items;
        let kept = if vas.iter().any(|v| v.spec.node_name == node_name) {
            self.kept_volumes(&pods).await?
        } else {
            BTreeSet::new()
        };
        let blocking = volumes::blocking(&vas, &node_name, &kept);
        if !blocking.is_empty() && !grace_over {
            if self.first_time(claim, "volumes") {
                tracing::info!(nodeclaim = %name, node = %node_name, attachments = ?blocking, "drained; waiting for volumes to detach");
            }
            return Ok(false);
        }
        if self.first_time(claim, "drained") {
            tracing::info!(nodeclaim = %name, node = %node_name, "drained");
        }
        Ok(true)
    }

    /// PersistentVolumes that pods staying on the node use.
    async fn kept_volumes(&self, pods: &[Arc<Pod>]) -> anyhow::Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for p in pods {
            if drain::classify(p, k8s_openapi::jiff::Timestamp::now().as_second())
                .stays
                .is_none()
            {
                continue;
            }
            let ns = p.namespace().unwrap_or_default();
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &ns);
            for v in p.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
                if let Some(c) = &v.persistent_volume_claim
                    && let Some(pvc) = api.get_opt(&c.claim_name).await?
                    && let Some(pv) = pvc.spec.and_then(|s| s.volume_name)
                {
                    out.insert(pv);
                }
            }
        }
        Ok(out)
    }

    async fn evict(&self, claim: &NodeClaim, node: &str, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        let now = Instant::now();
        let previous = self.backoff.lock_or_recover().get(&uid).copied();
        if previous.is_some_and(|b| now < b.next) {
            return;
        }
        let ns = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        let key = format!("{ns}/{name}");
        let result = async {
            // The uid precondition keeps a same-named successor (a StatefulSet's) from being evicted.
            let uid = (!uid.is_empty()).then_some(uid.as_str());
            let req = eviction::request(&self.eviction_version, &ns, &name, uid)?;
            self.client.request_text(req).await?;
            Ok::<_, anyhow::Error>(())
        }
        .await;
        let mut backoff = self.backoff.lock_or_recover();
        match result {
            Ok(()) => {
                // The watch shows the pod terminating shortly; do not ask again before.
                backoff.insert(
                    uid,
                    Backoff {
                        next: now + Duration::from_secs(2),
                        wait: BACKOFF_MIN,
                        blocked: false,
                    },
                );
                drop(backoff);
                tracing::info!(pod = %key, node = %node, nodeclaim = %claim.name_any(), "evicted");
                self.recorder.publish(
                    reference(pod),
                    "Normal",
                    "Evicted",
                    &format!(
                        "evicted by adze: node {node} is terminating ({})",
                        why(claim)
                    ),
                );
            }
            Err(e) => {
                let code = e.downcast_ref::<kube::Error>().and_then(|k| match k {
                    kube::Error::Api(s) => Some(s.code),
                    _ => None,
                });
                let outcome = code.map_or(eviction::Outcome::Failed, |c| {
                    eviction::Outcome::from_status(Some(c))
                });
                if outcome == eviction::Outcome::Gone {
                    return;
                }
                let blocked = outcome == eviction::Outcome::Blocked;
                let wait = previous
                    .filter(|b| blocked && b.blocked)
                    .map(|b| (b.wait * 2).min(BACKOFF_MAX))
                    .unwrap_or(BACKOFF_MIN);
                let newly_blocked = blocked && !previous.is_some_and(|b| b.blocked);
                backoff.insert(
                    uid,
                    Backoff {
                        next: now + wait,
                        wait,
                        blocked,
                    },
                );
                drop(backoff);
                if blocked {
                    tracing::info!(pod = %key, node = %node, retry_in_s = wait.as_secs(), "eviction refused by a PodDisruptionBudget; retrying, not forcing");
                    if newly_blocked {
                        self.recorder.publish(
                            reference(pod),
                            "Warning",
                            "EvictionBlocked",
                            &format!("a PodDisruptionBudget does not allow evicting this pod now; node {node} waits and retries"),
                        );
                    }
                } else {
                    tracing::warn!(pod = %key, node = %node, error = %format!("{e:#}"), retry_in_s = wait.as_secs(), "eviction failed; retrying");
                }
            }
        }
    }

    /// Deletes `p` with `grace` seconds because the node's deadline is `remaining` seconds
    /// away: no PodDisruptionBudget is asked, but the pod gets its own grace period when it
    /// still fits before the deadline.
    async fn delete_for_deadline(
        &self,
        claim: &NodeClaim,
        node: &str,
        p: &drain::DrainPod,
        grace: i64,
        remaining: i64,
    ) {
        let (ns, name) = p.key.split_once('/').unwrap_or(("default", &p.key));
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let dp = DeleteParams {
            grace_period_seconds: Some(u32::try_from(grace).unwrap_or(0)),
            preconditions: Some(kube::api::Preconditions {
                uid: Some(p.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(name, &dp).await {
            Ok(_) => {
                let tgp = claim
                    .spec
                    .termination_grace_period
                    .as_ref()
                    .map(|g| g.to_string())
                    .unwrap_or_default();
                let when = if remaining <= 0 {
                    format!("reached its terminationGracePeriod {tgp}")
                } else {
                    format!("must be gone in {remaining}s (terminationGracePeriod {tgp})")
                };
                if grace == 0 {
                    tracing::warn!(pod = %p.key, node = %node, nodeclaim = %claim.name_any(), termination_grace_period = %tgp, remaining_s = remaining, "terminationGracePeriod over; pod force-deleted");
                } else {
                    tracing::warn!(pod = %p.key, node = %node, nodeclaim = %claim.name_any(), termination_grace_period = %tgp, remaining_s = remaining, pod_grace_s = grace, "node deadline near; pod deleted with its grace, without waiting for its disruption budget");
                }
                if let Some(pod) = self
                    .state
                    .pods
                    .state()
                    .into_iter()
                    .find(|x| x.uid().as_deref() == Some(&p.uid))
                {
                    self.recorder.publish(
                        reference(pod.as_ref()),
                        "Warning",
                        "ForceDeleted",
                        &format!("node {node} {when}; pod deleted with grace {grace}s without waiting for its disruption budget"),
                    );
                }
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(pod = %p.key, error = %e, "deleting for the deadline failed; retrying")
            }
        }
    }

    /// Step 5. True once the cloud no longer reports the claim's instance.
    async fn instance_gone(&self, claim: &NodeClaim) -> anyhow::Result<bool> {
        let name = claim.name_any();
        let pid = claim.status.as_ref().and_then(|s| s.provider_id.clone());
        let present = match &pid {
            Some(pid) => self.cloud.get(pid).await?.is_some(),
            // Never launched as far as the status says; a create may still have raced the
            // deletion, and delete is idempotent.
            None => self.first_time(claim, "delete-unlaunched"),
        };
        if !present {
            return Ok(true);
        }
        let due = self
            .last_delete
            .lock_or_recover()
            .get(&name)
            .is_none_or(|t| t.elapsed() >= DELETE_REPEAT);
        if due {
            self.last_delete
                .lock_or_recover()
                .insert(name.clone(), Instant::now());
            self.cloud.delete(claim).await?;
            if self.first_time(claim, "instance") {
                tracing::info!(nodeclaim = %name, provider_id = ?pid, "terminating instance");
                self.recorder.publish(
                    reference(claim),
                    "Normal",
                    "TerminatingInstance",
                    &format!(
                        "terminating instance {}",
                        pid.as_deref().unwrap_or("(not launched)")
                    ),
                );
            }
        }
        Ok(pid.is_none())
    }

    /// Step 6 for the Node: delete it (if nobody has) and release its finalizer.
    async fn release_node(&self, claim: &NodeClaim, node: &Node) -> anyhow::Result<()> {
        let node_name = node.name_any();
        if node.metadata.deletion_timestamp.is_none() {
            match self
                .nodes()
                .delete(&node_name, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        if has_finalizer(&node.metadata) {
            self.remove_node_finalizer(node).await?;
        }
        if self.first_time(claim, "node") {
            tracing::info!(nodeclaim = %claim.name_any(), node = %node_name, "instance gone; node deleted");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(v: serde_json::Value) -> NodeClaim {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn grace_period_counts_from_the_deletion() {
        let c = claim(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"},
                     "terminationGracePeriod": "30s"},
        }));
        let at = |s: &str| s.parse::<k8s_openapi::jiff::Timestamp>().unwrap();
        assert!(!grace_over(&c, at("2026-01-01T00:00:29Z")));
        assert!(grace_over(&c, at("2026-01-01T00:00:30Z")));
        assert_eq!(remaining(&c, at("2026-01-01T00:00:00Z")), Some(30));
        assert_eq!(remaining(&c, at("2026-01-01T00:00:12.5Z")), Some(17));
        assert_eq!(remaining(&c, at("2026-01-01T00:00:40Z")), Some(-10));
        let mut no_grace = c.clone();
        no_grace.spec.termination_grace_period = None;
        assert!(!grace_over(&no_grace, at("2027-01-01T00:00:00Z")));
        assert_eq!(remaining(&no_grace, at("2027-01-01T00:00:00Z")), None);
    }

    #[test]
    fn a_repaired_claim_has_no_grace_whatever_its_termination_grace_period() {
        let mut v = json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"},
                     "terminationGracePeriod": "1h"},
            "status": {"conditions": [{"type": "Disrupting", "status": "True", "reason": "Unhealthy",
                "message": "unhealthy: node condition Ready has been False for 31m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        });
        let at = |s: &str| s.parse::<k8s_openapi::jiff::Timestamp>().unwrap();
        let repaired = claim(v.clone());
        assert_eq!(remaining(&repaired, at("2026-01-01T00:00:00Z")), Some(0));
        assert!(grace_over(&repaired, at("2026-01-01T00:00:00Z")));
        // Without a terminationGracePeriod too: repair never waits on PodDisruptionBudgets.
        v["spec"]
            .as_object_mut()
            .unwrap()
            .remove("terminationGracePeriod");
        assert!(grace_over(&claim(v.clone()), at("2026-01-01T00:00:01Z")));
        // Legacy (forceful) repair's reason alike.
        v["status"]["conditions"][0]["reason"] = json!("UnhealthyForceful");
        assert!(grace_over(&claim(v.clone()), at("2026-01-01T00:00:01Z")));
        // Any other reason keeps the claim's own grace.
        v["status"]["conditions"][0]["reason"] = json!("Drifted");
        v["spec"]["terminationGracePeriod"] = json!("1h");
        assert_eq!(remaining(&claim(v), at("2026-01-01T00:00:00Z")), Some(3600));
    }

    #[test]
    fn reason_comes_from_the_disrupting_condition() {
        let c = claim(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
            "status": {"conditions": [{"type": "Disrupting", "status": "True", "reason": "Drifted",
                "message": "drifted: NodePool template changed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }));
        assert_eq!(why(&c), "drifted: NodePool template changed");
        let plain = claim(
            json!({"apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}}}),
        );
        assert_eq!(why(&plain), "nodeclaim deleted");
    }
}
