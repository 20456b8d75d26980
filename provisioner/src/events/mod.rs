//! core/v1 Events about any object (NodeClaims, Nodes, Pods), recorded in the background so a
//! controller never waits on them. Cluster-scoped objects get their events in `default`, as
//! kubectl looks for them there.
//!
//! Repeats are aggregated ([`aggregate`]): the same event about the same object within
//! [`WINDOW_SECS`] of its last occurrence raises the existing Event's `count` and
//! `lastTimestamp` instead of writing a new object, so a pod retried every 30 s has one
//! `FailedScheduling` Event, not one per retry.

pub mod aggregate;
pub mod reasons;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;

use crate::provisioning::FIELD_MANAGER;

/// The object an event is about.
pub fn reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: Some(obj.name_any()),
        namespace: obj.namespace(),
        uid: obj.uid(),
        resource_version: None,
        field_path: None,
    }
}

/// An Event of `type_` ("Normal" or "Warning") about `about`.
pub fn event(about: ObjectReference, type_: &str, reason: &str, message: &str) -> Event {
    let ns = about.namespace.clone().unwrap_or_else(|| "default".into());
    let name = about.name.clone().unwrap_or_default();
    let ts = crate::cloud::simulated::now();
    serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": ns},
        "involvedObject": about,
        "reason": reason, "message": message, "type": type_,
        "source": {"component": FIELD_MANAGER},
        "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        "reportingComponent": FIELD_MANAGER, "reportingInstance": FIELD_MANAGER,
    }))
    .expect("event object")
}

/// Repeats later than this after the last occurrence start a new Event (client-go uses 10 min).
pub const WINDOW_SECS: i64 = 600;
/// Distinct events remembered for aggregation.
const CACHE_KEYS: usize = 4096;
/// Events waiting to be written; beyond this new ones are dropped (and logged), so a stalled
/// apiserver costs bounded memory.
const QUEUE: usize = 1024;

/// One event to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub about: ObjectReference,
    /// "Normal" or "Warning".
    pub type_: String,
    pub reason: String,
    pub message: String,
}

impl Note {
    pub fn new(about: ObjectReference, type_: &str, reason: &str, message: &str) -> Note {
        Note {
            about,
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Records events without blocking the caller: [`Recorder::publish`] queues, one background
/// task writes them in order. A failure is logged, never retried. Clones share the queue and
/// the aggregation cache, so make one per process and hand out clones.
#[derive(Clone)]
pub struct Recorder {
    queue: mpsc::Sender<Note>,
}

impl Recorder {
    /// Starts the writer task; needs a Tokio runtime.
    pub fn new(client: Client) -> Recorder {
        let (queue, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write_all(client, rx));
        Recorder { queue }
    }

    pub fn publish(&self, about: ObjectReference, type_: &str, reason: &str, message: &str) {
        self.send(Note::new(about, type_, reason, message));
    }

    pub fn send(&self, note: Note) {
        if let Err(e) = self.queue.try_send(note) {
            tracing::warn!(error = %e, "event dropped: the event queue is full");
        }
    }
}

/// The writer: decides with the [`aggregate::Aggregator`], then creates or patches.
async fn write_all(client: Client, mut rx: mpsc::Receiver<Note>) {
    let mut cache = aggregate::Aggregator::new(WINDOW_SECS, CACHE_KEYS);
    while let Some(n) = rx.recv().await {
        let key = aggregate::Key::new(&n.about, &n.type_, &n.reason, &n.message);
        let ns = n
            .about
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let api: Api<Event> = Api::namespaced(client.clone(), &ns);
        let now = k8s_openapi::jiff::Timestamp::now().as_second();
        if let aggregate::Step::Patch { name, count } = cache.observe(key.clone(), now) {
            let patch = json!({"count": count, "lastTimestamp": crate::cloud::simulated::now()});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => continue,
                // Gone (the apiserver's event TTL): write it afresh below.
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    cache.forget(&key);
                    cache.observe(key.clone(), now);
                }
                Err(e) => {
                    tracing::warn!(error = %e, reason = %n.reason, "event not recorded");
                    continue;
                }
            }
        }
        let ev = event(n.about, &n.type_, &n.reason, &n.message);
        match api.create(&PostParams::default(), &ev).await {
            Ok(created) => cache.created(&key, created.name_any()),
            Err(e) => {
                cache.forget(&key);
                tracing::warn!(error = %e, reason = %n.reason, "event not recorded");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_api::NodeClaim;

    #[test]
    fn cluster_scoped_object_events_land_in_default_namespace() {
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "c1", "uid": "u1"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        let ev = event(reference(&claim), "Normal", "Draining", "node n1");
        assert_eq!(ev.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(ev.involved_object.kind.as_deref(), Some("NodeClaim"));
        assert_eq!(
            ev.involved_object.api_version.as_deref(),
            Some("adze.sh/v1")
        );
        assert_eq!(ev.involved_object.uid.as_deref(), Some("u1"));
        assert_eq!(ev.message.as_deref(), Some("node n1"));
    }
}
