//! A simulated kubelet for the simulated cloud's nodes (providerID `adze-sim://`): there is
//! no real kubelet, so this keeps their Ready heartbeat, moves pods bound to them to
//! Running/Ready, and completes deletions of their terminating pods.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;

use crate::cloud::simulated::{PROVIDER_PREFIX, now};
use crate::state::ClusterState;

pub struct Kubelet {
    pub client: Client,
    pub state: ClusterState,
    pub heartbeat: Duration,
}

/// What the kubelet must do for a pod on one of its nodes, if anything.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Start,
    FinishDeletion,
}

pub fn action(pod: &Pod) -> Option<Action> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(Action::FinishDeletion);
    }
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded") | Some("Failed")) {
        return None;
    }
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    (phase != Some("Running") || !ready).then_some(Action::Start)
}

fn running_status() -> serde_json::Value {
    let t = now();
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastTransitionTime": t});
    json!({"status": {
        "phase": "Running", "startTime": t, "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
        "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
    }})
}

impl Kubelet {
    pub async fn run(self) {
        let mut last_heartbeat = Instant::now() - self.heartbeat;
        // Pods acted on recently: skipped until the watch catches up.
        let mut recent: HashMap<String, Instant> = HashMap::new();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now_i = Instant::now();
            recent.retain(|_, t| now_i.duration_since(*t) < Duration::from_secs(5));
            let nodes: Vec<_> = self
                .state
                .nodes
                .state()
                .into_iter()
                .filter(|n| {
                    n.spec
                        .as_ref()
                        .and_then(|s| s.provider_id.as_deref())
                        .is_some_and(|p| p.starts_with(PROVIDER_PREFIX))
                })
                .collect();
            let ours: HashSet<String> = nodes
                .iter()
                .filter_map(|n| n.metadata.name.clone())
                .collect();
            if now_i.duration_since(last_heartbeat) >= self.heartbeat {
                last_heartbeat = now_i;
                let api: Api<Node> = Api::all(self.client.clone());
                for n in &ours {
                    let patch = json!({"status": {"conditions": [{
                        "type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "adze simulated kubelet is posting ready status",
                        "lastHeartbeatTime": now(),
                    }]}});
                    if let Err(e) = api
                        .patch_status(n, &PatchParams::default(), &Patch::Strategic(patch))
                        .await
                    {
                        tracing::debug!(node = %n, error = %e, "heartbeat failed");
                    }
                }
            }
            let work: Vec<_> = self
                .state
                .pods
                .state()
                .into_iter()
                .filter(|p| {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_ref())
                        .is_some_and(|n| ours.contains(n))
                })
                .filter_map(|p| Some((action(&p)?, p)))
                .filter(|(_, p)| {
                    !recent.contains_key(p.metadata.uid.as_deref().unwrap_or_default())
                })
                .collect();
            for (_, p) in &work {
                recent.insert(p.metadata.uid.clone().unwrap_or_default(), now_i);
            }
            futures::stream::iter(work)
                .for_each_concurrent(16, |(act, p)| {
                    let client = self.client.clone();
                    async move {
                        let ns = p.metadata.namespace.clone().unwrap_or_default();
                        let name = p.metadata.name.clone().unwrap_or_default();
                        let api: Api<Pod> = Api::namespaced(client, &ns);
                        let res = match act {
                            Action::Start => api
                                .patch_status(&name, &PatchParams::default(), &Patch::Merge(running_status()))
                                .await
                                .map(|_| ()),
                            Action::FinishDeletion => {
                                let dp = DeleteParams {
                                    grace_period_seconds: Some(0),
                                    preconditions: Some(Preconditions { uid: p.metadata.uid.clone(), resource_version: None }),
                                    ..DeleteParams::default()
                                };
                                api.delete(&name, &dp).await.map(|_| ())
                            }
                        };
                        match res {
                            Ok(()) => tracing::debug!(pod = %format!("{ns}/{name}"), action = ?act, "simulated kubelet"),
                            Err(kube::Error::Api(e)) if e.code == 404 => {}
                            Err(e) => tracing::warn!(pod = %format!("{ns}/{name}"), error = %e, "simulated kubelet action failed"),
                        }
                    }
                })
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn bound_pending_pod_is_started_and_running_pod_left_alone() {
        let p = pod(json!({"metadata": {"name": "a"}, "status": {"phase": "Pending"}}));
        assert_eq!(action(&p), Some(Action::Start));
        let r = pod(
            json!({"metadata": {"name": "a"}, "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        assert_eq!(action(&r), None);
    }

    #[test]
    fn terminating_pod_deletion_is_completed() {
        let p = pod(
            json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running"}}),
        );
        assert_eq!(action(&p), Some(Action::FinishDeletion));
    }
}
