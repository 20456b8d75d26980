//! The "fails everywhere" signal: a pod that `filter` turns away from every candidate node
//! needs new capacity, so the extender tells the provisioner at once by annotating the pod
//! [`UNSCHEDULABLE_AT`](adze_scheduling::labels::UNSCHEDULABLE_AT) rather than leaving it to
//! wait for kube-scheduler's `PodScheduled=False/Unschedulable` condition.
//!
//! Off the request path: `filter` only drops the pod into a bounded queue (a full queue drops
//! the signal; the condition still comes). A task drains the queue after a short debounce
//! and writes each pod once per process.

use std::collections::HashSet;
use std::time::Duration;

use adze_scheduling::labels::UNSCHEDULABLE_AT;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
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
/// Pods remembered as already annotated before the memory is cleared.
const REMEMBERED: usize = 50_000;

impl Signal {
    /// A signal and the receiving end to give to [`annotate`] (or read in tests).
    pub fn new() -> (Signal, mpsc::Receiver<Unschedulable>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (Signal { tx }, rx)
    }

    /// Non-blocking; never fails the request.
    pub fn send(&self, pod: Unschedulable) {
        let _ = self.tx.try_send(pod);
    }
}

/// The merge patch that marks a pod, with `at` as an RFC 3339 time.
pub fn patch_for(uid: &str, at: &str) -> serde_json::Value {
    // The uid precondition keeps a signal for a deleted pod off its same-named successor.
    serde_json::json!({"metadata": {"uid": uid, "annotations": {UNSCHEDULABLE_AT: at}}})
}

/// Drains the queue, annotating each pod once. Runs until every [`Signal`] is dropped.
pub async fn annotate(client: Client, mut rx: mpsc::Receiver<Unschedulable>) {
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
            let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
            match api
                .patch(
                    &p.name,
                    &PatchParams::default(),
                    &Patch::Merge(patch_for(&p.uid, &at)),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(pod = %format!("{}/{}", p.namespace, p.name), "failed filter on every node; annotated for the provisioner")
                }
                Err(e) => {
                    done.remove(&p.uid);
                    tracing::warn!(pod = %format!("{}/{}", p.namespace, p.name), error = %e, "could not annotate unschedulable pod");
                }
            }
        }
    }
}
