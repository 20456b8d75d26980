//! The "fails everywhere" signal: a pod that `filter` turns away from every candidate node
//! needs new capacity, so the extender tells the provisioner at once rather than leaving it to
//! wait for kube-scheduler's `PodScheduled=False/Unschedulable` condition.
//!
//! The channel is a core/v1 Event on the pod (reason
//! [`FAILED_EVERY_NODE_REASON`](adze_scheduling::labels::FAILED_EVERY_NODE_REASON), source
//! [`EXTENDER_COMPONENT`](adze_scheduling::labels::EXTENDER_COMPONENT)), which the provisioner
//! watches by those two fields. Why an Event and not a pod annotation: writing an annotation
//! needs `patch` on every pod in the cluster, and pod patch can change a pod's image or command
//! (a compromised extender would run code as any workload). Events need only `create`, which
//! the extender's role already had, and change nothing a kubelet acts on. Why not a ConfigMap
//! of UIDs in the release namespace: one object rewritten by every signal needs pruning,
//! conflict retries between replicas and a size cap, where Events are one small object per pod
//! that the apiserver deletes after `--event-ttl` (1 h by default): no growth to manage.
//!
//! Each Event is named after the pod's UID, so a second replica or a restarted process
//! recording the same pod gets 409 AlreadyExists (taken as done) instead of a second object,
//! and a deleted pod's same-named successor (a new UID) never matches it. Anyone who may create
//! Events in a namespace can forge one; the worst it does is make the provisioner plan an unbound
//! pod of that namespace a few seconds before kube-scheduler's condition would (capacity
//! nothing uses is removed by emptiness consolidation).
//!
//! Off the request path: `filter` only drops the pod into a bounded queue (a full queue drops
//! the signal; the condition still comes). A task drains the queue after a short debounce
//! and records each pod once per process (the memory of recorded UIDs is bounded).

use std::collections::HashSet;
use std::time::Duration;

use adze_scheduling::labels::{EXTENDER_COMPONENT, FAILED_EVERY_NODE_REASON};
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::mpsc;

/// A pod that failed on every candidate node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unschedulable {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The sending side, held by the HTTP handlers.
#[derive(Debug, Clone)]
pub struct Signal {
    tx: mpsc::Sender<Unschedulable>,
}

/// Queue length; beyond it signals are dropped rather than slowing `filter`.
const QUEUE: usize = 4096;
/// How long the task waits after the first signal to gather others.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// Pods remembered as already recorded before the memory is cleared.
const REMEMBERED: usize = 50_000;
/// Longest pod-name prefix in an Event's name: with "." and a 36-character UID the name stays
/// within the 253 characters of a DNS subdomain.
const NAME_PREFIX: usize = 200;

impl Signal {
    /// A signal and the receiving end to give to [`record`] (or read in tests).
    pub fn new() -> (Signal, mpsc::Receiver<Unschedulable>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (Signal { tx }, rx)
    }

    /// Non-blocking; never fails the request.
    pub fn send(&self, pod: Unschedulable) {
        let _ = self.tx.try_send(pod);
    }
}

/// The Event's name: the pod's name (cut to fit, never ending in `.` or `-`) and its UID, so
/// one pod UID has one Event whoever records it.
pub fn event_name(pod: &Unschedulable) -> String {
    let cut = pod
        .name
        .char_indices()
        .nth(NAME_PREFIX)
        .map_or(pod.name.as_str(), |(i, _)| &pod.name[..i]);
    let cut = cut.trim_end_matches(['.', '-']);
    format!("{cut}.{}", pod.uid)
}

/// The Event that tells the provisioner `pod` fits on no node, at `at` (RFC 3339).
pub fn event_for(pod: &Unschedulable, at: &str) -> Event {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": event_name(pod), "namespace": pod.namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace,
            "name": pod.name, "uid": pod.uid},
        "reason": FAILED_EVERY_NODE_REASON,
        "message": "failed the Adze extender's filter on every candidate node: needs new capacity",
        "type": "Normal",
        "source": {"component": EXTENDER_COMPONENT},
        "reportingComponent": EXTENDER_COMPONENT,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }))
    .expect("a well-formed Event")
}

/// Drains the queue, recording each pod once. Runs until every [`Signal`] is dropped.
pub async fn record(client: Client, mut rx: mpsc::Receiver<Unschedulable>) {
    let mut done: HashSet<String> = HashSet::new();
    while let Some(first) = rx.recv().await {
        tokio::time::sleep(DEBOUNCE).await;
        let mut batch = vec![first];
        while let Ok(p) = rx.try_recv() {
            batch.push(p);
        }
        if done.len() > REMEMBERED {
            done.clear();
        }
        let at = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        for p in batch {
            if !done.insert(p.uid.clone()) {
                continue;
            }
            let key = format!("{}/{}", p.namespace, p.name);
            let api: Api<Event> = Api::namespaced(client.clone(), &p.namespace);
            match api
                .create(&PostParams::default(), &event_for(&p, &at))
                .await
            {
                Ok(_) => {
                    tracing::info!(pod = %key, "failed filter on every node; Event recorded for the provisioner")
                }
                // Another replica, or this process before a restart, recorded it already.
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => {
                    done.remove(&p.uid);
                    tracing::warn!(pod = %key, error = %e, "could not record the unschedulable pod's Event");
                }
            }
        }
    }
}
