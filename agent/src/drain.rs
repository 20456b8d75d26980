//! One drain round against the apiserver: list the node's pods, then evict each as
//! [`decide::pod_step`] says. Rounds repeat every poll until the node is drained, so a PDB that
//! refuses now (429) is asked again next round, and a restarted agent simply carries on. The
//! agent never deletes pods (its role has no pod `delete`; see [`decide::pod_step`]).

use adze_api::eviction::{self, Outcome};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
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
    }
}

/// How long one eviction may take: at most 10 s, and never past the deadline (at least 1 s, so
/// a round after the deadline still asks once).
pub fn call_timeout(left: std::time::Duration) -> std::time::Duration {
    left.clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(10),
    )
}

/// What a round did, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Round {
    pub remaining: usize,
    pub evicted: usize,
    pub blocked: usize,
    pub drained: bool,
}

pub struct Drainer {
    pub client: Client,
    pub node_name: String,
    /// `policy/v1` or `policy/v1beta1`, found by discovery once.
    eviction_version: Option<String>,
}

impl Drainer {
    pub fn new(client: Client, node_name: String) -> Self {
        Self {
            client,
            node_name,
            eviction_version: None,
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
            match decide::pod_step(p) {
                PodStep::Leave => {}
                PodStep::Evict => match tokio::time::timeout(call_timeout(left), self.evict(p))
                    .await
                    .unwrap_or_else(|_| {
                        tracing::warn!(pod = %key, "eviction request timed out; retrying");
                        Ok(Outcome::Failed)
                    }) {
                    Ok(Outcome::Evicted | Outcome::Gone) => {
                        round.evicted += 1;
                        tracing::info!(pod = %key, node = %self.node_name, "evicted");
                    }
                    Ok(Outcome::Blocked) if left.is_zero() => {
                        round.blocked += 1;
                        tracing::warn!(pod = %key, "deadline passed and a PodDisruptionBudget still refuses the eviction; the pod stops with the instance");
                    }
                    Ok(Outcome::Blocked) => {
                        round.blocked += 1;
                        tracing::debug!(pod = %key, "eviction refused by a PodDisruptionBudget; retrying");
                    }
                    Ok(Outcome::Failed) => {}
                    Err(e) => tracing::warn!(pod = %key, error = %e, "eviction failed; retrying"),
                },
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
    fn an_eviction_never_waits_past_the_deadline_nor_longer_than_ten_seconds() {
        let s = std::time::Duration::from_secs;
        assert_eq!(call_timeout(s(120)), s(10));
        assert_eq!(call_timeout(s(4)), s(4));
        assert_eq!(call_timeout(s(0)), s(1));
        assert_eq!(call_timeout(std::time::Duration::MAX), s(10));
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
            json!({"metadata": {"name": "d"}, "spec": {"containers": []}}),
        ));
        assert!(!web.stays && !web.finished && !web.terminating);
        assert!(!decide::drained(&[ds, mirror, done, web]));
    }
}
