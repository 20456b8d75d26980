//! One drain round against the apiserver: list the node's pods, then evict or delete each as
//! [`decide::pod_step`] says. Rounds repeat every poll until the node is drained, so a PDB that
//! refuses now (429) is asked again next round, and a restarted agent simply carries on.

use adze_api::eviction::{self, Outcome};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};

use crate::decide::{self, DrainPod, PodStep};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

pub fn drain_pod(p: &Pod) -> DrainPod {
    let owned_by_ds = p
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "DaemonSet");
    let mirror = p
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION));
    DrainPod {
        namespace: p.metadata.namespace.clone().unwrap_or_default(),
        name: p.metadata.name.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
        stays: owned_by_ds || mirror,
        terminating: p.metadata.deletion_timestamp.is_some(),
        finished: matches!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded") | Some("Failed")
        ),
        grace_seconds: p
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30),
    }
}

/// How long one eviction may take: a request the apiserver holds must not eat the time left
/// for deleting the pod before the deadline.
pub fn call_timeout(
    left: std::time::Duration,
    grace_seconds: i64,
    margin: Duration,
) -> std::time::Duration {
    // Saturating: the grace period comes from the pod's spec, any i64.
    let reserve = grace_seconds.saturating_add(margin.num_seconds()).max(0);
    let reserve = std::time::Duration::from_secs(reserve.unsigned_abs());
    left.saturating_sub(reserve).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(10),
    )
}

/// The grace period for a delete request, which the API takes as a u32: a longer one (a pod
/// may ask for up to i64::MAX seconds) is capped, not wrapped to some short value.
pub fn delete_grace(grace_seconds: i64) -> u32 {
    u32::try_from(grace_seconds.max(0)).unwrap_or(u32::MAX)
}

/// What a round did, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Round {
    pub remaining: usize,
    pub evicted: usize,
    pub blocked: usize,
    pub deleted: usize,
    pub drained: bool,
}

pub struct Drainer {
    pub client: Client,
    pub node_name: String,
    /// `policy/v1` or `policy/v1beta1`, found by discovery once.
    eviction_version: Option<String>,
    pub margin: Duration,
}

impl Drainer {
    pub fn new(client: Client, node_name: String, margin: Duration) -> Self {
        Self {
            client,
            node_name,
            eviction_version: None,
            margin,
        }
    }

    /// The Eviction API version the server serves (1.20 has only policy/v1beta1), found by
    /// core/v1 discovery once; a failed discovery is asked again next round.
    async fn eviction_version(&mut self) -> String {
        if let Some(v) = &self.eviction_version {
            return v.clone();
        }
        match self.client.list_core_api_resources("v1").await {
            Ok(list) => {
                let v =
                    eviction::version(&list).unwrap_or_else(|| eviction::DEFAULT_VERSION.into());
                tracing::debug!(version = %v, "eviction API version");
                self.eviction_version = Some(v.clone());
                v
            }
            Err(e) => {
                tracing::debug!(error = %e, "core/v1 discovery failed; trying {}", eviction::DEFAULT_VERSION);
                eviction::DEFAULT_VERSION.into()
            }
        }
    }

    async fn evict(&mut self, pod: &DrainPod) -> Result<Outcome, kube::Error> {
        let version = self.eviction_version().await;
        let req = eviction::request(&version, &pod.namespace, &pod.name, Some(&pod.uid))
            .map_err(kube::Error::BuildRequest)?;
        match self.client.request_text(req).await {
            Ok(_) => Ok(Outcome::Evicted),
            Err(kube::Error::Api(e)) => match Outcome::from_status(Some(e.code)) {
                Outcome::Failed => Err(kube::Error::Api(e)),
                known => Ok(known),
            },
            Err(e) => Err(e),
        }
    }

    /// One round at time `now` toward `deadline`.
    pub async fn round(
        &mut self,
        now: DateTime<Utc>,
        deadline: DateTime<Utc>,
    ) -> kube::Result<Round> {
        let pods: Api<Pod> = Api::all(self.client.clone());
        let list = pods
            .list(&ListParams::default().fields(&format!("spec.nodeName={}", self.node_name)))
            .await?;
        let views: Vec<DrainPod> = list.items.iter().map(drain_pod).collect();
        let left = (deadline - now).to_std().unwrap_or_default();
        let mut round = Round {
            remaining: views.iter().filter(|p| !p.stays && !p.finished).count(),
            drained: decide::drained(&views),
            ..Round::default()
        };
        for p in &views {
            let key = format!("{}/{}", p.namespace, p.name);
            match decide::pod_step(p, now, deadline, self.margin) {
                PodStep::Leave => {}
                PodStep::Evict => match tokio::time::timeout(
                    call_timeout(left, p.grace_seconds, self.margin),
                    self.evict(p),
                )
                .await
                .unwrap_or_else(|_| {
                    tracing::warn!(pod = %key, "eviction request timed out; retrying");
                    Ok(Outcome::Failed)
                }) {
                    Ok(Outcome::Evicted | Outcome::Gone) => {
                        round.evicted += 1;
                        tracing::info!(pod = %key, node = %self.node_name, "evicted");
                    }
                    Ok(Outcome::Blocked) => {
                        round.blocked += 1;
                        tracing::debug!(pod = %key, "eviction refused by a PodDisruptionBudget; retrying");
                    }
                    Ok(Outcome::Failed) => {}
                    Err(e) => tracing::warn!(pod = %key, error = %e, "eviction failed; retrying"),
                },
                PodStep::Delete { grace_seconds } => {
                    let api: Api<Pod> = Api::namespaced(self.client.clone(), &p.namespace);
                    let dp = DeleteParams {
                        grace_period_seconds: Some(delete_grace(grace_seconds)),
                        preconditions: Some(kube::api::Preconditions {
                            uid: Some(p.uid.clone()),
                            resource_version: None,
                        }),
                        ..DeleteParams::default()
                    };
                    let deleted = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        api.delete(&p.name, &dp),
                    )
                    .await;
                    let Ok(deleted) = deleted else {
                        tracing::warn!(pod = %key, "delete timed out; retrying");
                        continue;
                    };
                    match deleted {
                        Ok(_) => {
                            round.deleted += 1;
                            tracing::warn!(pod = %key, grace_seconds, "deadline near: deleted without waiting for PDBs");
                        }
                        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                        Err(e) => tracing::warn!(pod = %key, error = %e, "delete failed; retrying"),
                    }
                }
            }
        }
        Ok(round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_eviction_never_waits_into_the_time_reserved_for_deletion() {
        let s = std::time::Duration::from_secs;
        assert_eq!(call_timeout(s(120), 5, Duration::seconds(5)), s(10));
        assert_eq!(call_timeout(s(14), 5, Duration::seconds(5)), s(4));
        assert_eq!(call_timeout(s(3), 5, Duration::seconds(5)), s(1));
    }

    #[test]
    fn grace_periods_near_the_integer_limits_are_capped_not_wrapped() {
        let s = std::time::Duration::from_secs;
        assert_eq!(call_timeout(s(120), i64::MAX, Duration::MAX), s(1));
        assert_eq!(call_timeout(s(120), i64::MIN, Duration::MIN), s(10));
        assert_eq!(
            call_timeout(std::time::Duration::MAX, i64::MAX, Duration::seconds(5)),
            s(10)
        );
        assert_eq!(delete_grace(i64::MAX), u32::MAX);
        assert_eq!(delete_grace(1 << 32), u32::MAX);
        assert_eq!(delete_grace(-1), 0);
        assert_eq!(delete_grace(30), 30);
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "x"},
            "spec": {"containers": [], "terminationGracePeriodSeconds": i64::MAX}}))
        .unwrap();
        assert_eq!(drain_pod(&pod).grace_seconds, i64::MAX);
    }

    #[test]
    fn daemonset_and_mirror_pods_stay_and_finished_pods_count_as_gone() {
        let pod = |v| serde_json::from_value::<Pod>(v).unwrap();
        let ds = drain_pod(&pod(
            json!({"metadata": {"name": "a", "namespace": "n", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u"}]}}),
        ));
        assert!(ds.stays);
        let mirror = drain_pod(&pod(json!({"metadata": {"name": "b", "namespace": "n",
            "annotations": {MIRROR_ANNOTATION: "abc"}}})));
        assert!(mirror.stays);
        let done = drain_pod(&pod(
            json!({"metadata": {"name": "c"}, "status": {"phase": "Succeeded"}}),
        ));
        assert!(done.finished && !done.stays);
        let web = drain_pod(&pod(
            json!({"metadata": {"name": "d"}, "spec": {"containers": [],
            "terminationGracePeriodSeconds": 5}}),
        ));
        assert_eq!(web.grace_seconds, 5);
        assert!(!decide::drained(&[ds, mirror, done, web]));
    }
}
