//! The extender's view of the cluster: watches on nodes, pods and NodeClaims that keep the
//! [`Ledger`] current, one on NodePools for the preemption hold, and the one API call made
//! on the request path, `pods/binding`.
//!
//! Each watch relists on (re)start and replaces its kind's objects in the ledger whole, so a
//! restarted extender, or a second replica, rebuilds the same ledger from cluster state.
//! Readiness is reported once all three watches have listed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use adze_api::conditions;
use adze_api::{NodeClaim, NodePool};
use adze_scheduling::preemption::PoolView;
use adze_scheduling::{Resources, labels};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use crate::ledger::{ClaimInfo, Ledger, NodeInfo, PodInfo, PodRef};
use crate::server::{Binder, Pools};
use crate::types::ExtenderBindingArgs;

/// A node as the ledger sees it; `None` when it has no name or an allocatable that does not
/// parse (logged).
pub fn node_info(n: &Node) -> Option<(String, NodeInfo)> {
    match adze_api::convert::node(n) {
        Ok(model) => Some((
            model.name,
            NodeInfo {
                allocatable: model.allocatable,
                claim: n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::NODECLAIM).cloned()),
            },
        )),
        Err(e) => {
            tracing::warn!(error = %e, "node left out of the ledger");
            None
        }
    }
}

/// A pod as the ledger sees it; `None` for pods that hold no resources (Succeeded, Failed).
/// A pod whose requests do not convert is kept with one pod slot and no other request.
pub fn pod_info(p: &Pod) -> Option<PodInfo> {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    let requests = match adze_api::convert::pod(p) {
        Ok(model) => model.requests,
        Err(e) => {
            tracing::warn!(error = %e, "pod counted without its requests");
            Resources::default().with_pods(1)
        }
    };
    Some(PodInfo {
        namespace: p
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| adze_api::convert::DEFAULT_NAMESPACE.to_string()),
        name: p.metadata.name.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
        requests,
        node: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
    })
}

/// A NodeClaim as the ledger sees it; `None` when its nominations have expired because it
/// is being deleted or failed to launch (`Launched=False`).
pub fn claim_info(c: &NodeClaim) -> Option<ClaimInfo> {
    if c.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = c.status.as_ref();
    let launch_failed = status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|cond| cond.type_ == conditions::nodeclaim::LAUNCHED && cond.status == "False")
    });
    if launch_failed {
        return None;
    }
    let nominated = match c
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::NOMINATED_PODS))
    {
        Some(json) => serde_json::from_str::<Vec<PodRef>>(json).unwrap_or_else(|e| {
            tracing::warn!(nodeclaim = c.metadata.name.as_deref().unwrap_or_default(), error = %e, "unreadable {} annotation", labels::NOMINATED_PODS);
            Vec::new()
        }),
        None => Vec::new(),
    };
    let initialized = status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|cond| cond.type_ == conditions::nodeclaim::INITIALIZED && cond.status == "True")
    });
    Some(ClaimInfo {
        node: status.and_then(|s| s.node_name.clone()),
        initialized,
        nominated,
        created: c
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
    })
}

/// A NodePool as the preemption hold reads it: requirements, labels, taints and limits (no
/// instance types), and what its nodes use (`status.resources`). `None`, logged, for a pool
/// that does not convert (the provisioner reports it in the pool's status).
pub fn pool_view(np: &NodePool) -> Option<(String, PoolView)> {
    let pool = match adze_api::convert::nodepool(np, Vec::new()) {
        Ok(pool) => pool,
        Err(e) => {
            tracing::warn!(error = %e, "NodePool left out of the preemption hold");
            return None;
        }
    };
    let in_use = np
        .status
        .as_ref()
        .and_then(|st| {
            Resources::from_quantities(st.resources.iter().map(|(k, v)| (k.as_str(), v.0.as_str())))
                .ok()
        })
        .unwrap_or_default();
    Some((pool.name.clone(), PoolView { pool, in_use }))
}

/// Flags the four watches raise once they have listed.
#[derive(Debug, Default)]
pub struct Synced {
    pub nodes: AtomicBool,
    pub pods: AtomicBool,
    pub claims: AtomicBool,
    pub pools: AtomicBool,
}

impl Synced {
    pub fn all(&self) -> bool {
        self.nodes.load(Ordering::Relaxed)
            && self.pods.load(Ordering::Relaxed)
            && self.claims.load(Ordering::Relaxed)
            && self.pools.load(Ordering::Relaxed)
    }
}

/// Runs the four watches until one of them ends (they retry with backoff, so never in
/// practice), setting `ready` once all have listed.
pub async fn watch(
    client: Client,
    ledger: Arc<RwLock<Ledger>>,
    pools: Pools,
    ready: Arc<AtomicBool>,
) {
    let synced = Arc::new(Synced::default());
    let nodepools = {
        let (synced, ready) = (synced.clone(), ready.clone());
        drive(
            Api::<NodePool>::all(client.clone()),
            watcher::Config::default(),
            move |change| {
                let mut p = pools.write().unwrap_or_else(|e| e.into_inner());
                match change {
                    Change::Apply(np) => {
                        let name = np.metadata.name.clone().unwrap_or_default();
                        match pool_view(&np) {
                            Some((name, view)) => {
                                p.insert(name, view);
                            }
                            None => {
                                p.remove(&name);
                            }
                        }
                    }
                    Change::Delete(np) => {
                        p.remove(np.metadata.name.as_deref().unwrap_or_default());
                    }
                    Change::Replace(all) => {
                        *p = all.iter().filter_map(pool_view).collect();
                        synced.pools.store(true, Ordering::Relaxed);
                        ready.store(synced.all(), Ordering::Relaxed);
                    }
                }
            },
        )
    };
    let nodes = {
        let (ledger, synced, ready) = (ledger.clone(), synced.clone(), ready.clone());
        drive(
            Api::<Node>::all(client.clone()),
            watcher::Config::default(),
            move |change| {
                let mut l = ledger.write().unwrap_or_else(|e| e.into_inner());
                match change {
                    Change::Apply(n) => {
                        if let Some((name, info)) = node_info(&n) {
                            l.upsert_node(&name, info);
                        }
                    }
                    Change::Delete(n) => {
                        l.remove_node(n.metadata.name.as_deref().unwrap_or_default())
                    }
                    Change::Replace(all) => {
                        l.replace_nodes(all.iter().filter_map(node_info).collect());
                        synced.nodes.store(true, Ordering::Relaxed);
                        ready.store(synced.all(), Ordering::Relaxed);
                    }
                }
            },
        )
    };
    let pods = {
        let (ledger, synced, ready) = (ledger.clone(), synced.clone(), ready.clone());
        drive(
            Api::<Pod>::all(client.clone()),
            watcher::Config::default().fields("status.phase!=Succeeded,status.phase!=Failed"),
            move |change| {
                let mut l = ledger.write().unwrap_or_else(|e| e.into_inner());
                match change {
                    Change::Apply(p) => match pod_info(&p) {
                        Some(info) => l.upsert_pod(info),
                        None => remove_pod(&mut l, &p),
                    },
                    Change::Delete(p) => remove_pod(&mut l, &p),
                    Change::Replace(all) => {
                        l.replace_pods(all.iter().filter_map(pod_info).collect());
                        synced.pods.store(true, Ordering::Relaxed);
                        ready.store(synced.all(), Ordering::Relaxed);
                    }
                }
            },
        )
    };
    let claims = {
        let (ledger, synced, ready) = (ledger.clone(), synced.clone(), ready.clone());
        drive(
            Api::<NodeClaim>::all(client),
            watcher::Config::default(),
            move |change| {
                let mut l = ledger.write().unwrap_or_else(|e| e.into_inner());
                match change {
                    Change::Apply(c) => {
                        let name = c.metadata.name.clone().unwrap_or_default();
                        match claim_info(&c) {
                            Some(info) => l.upsert_claim(&name, info),
                            None => l.remove_claim(&name),
                        }
                    }
                    Change::Delete(c) => {
                        l.remove_claim(c.metadata.name.as_deref().unwrap_or_default())
                    }
                    Change::Replace(all) => {
                        l.replace_claims(
                            all.iter()
                                .filter_map(|c| Some((c.metadata.name.clone()?, claim_info(c)?)))
                                .collect(),
                        );
                        synced.claims.store(true, Ordering::Relaxed);
                        ready.store(synced.all(), Ordering::Relaxed);
                    }
                }
            },
        )
    };
    tokio::join!(nodes, pods, claims, nodepools);
}

fn remove_pod(l: &mut Ledger, p: &Pod) {
    l.remove_pod(
        p.metadata
            .namespace
            .as_deref()
            .unwrap_or(adze_api::convert::DEFAULT_NAMESPACE),
        p.metadata.name.as_deref().unwrap_or_default(),
    );
}

/// A watch event with relists already gathered into one replacement.
enum Change<K> {
    Apply(K),
    Delete(K),
    Replace(Vec<K>),
}

async fn drive<K>(api: Api<K>, config: watcher::Config, mut on: impl FnMut(Change<K>) + Send)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let kind = std::any::type_name::<K>();
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut buffer: Option<Vec<K>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => buffer = Some(Vec::new()),
            Ok(Event::InitApply(o)) => buffer.get_or_insert_with(Vec::new).push(o),
            Ok(Event::InitDone) => {
                let all = buffer.take().unwrap_or_default();
                tracing::info!(kind, objects = all.len(), "listed");
                on(Change::Replace(all));
            }
            Ok(Event::Apply(o)) => on(Change::Apply(o)),
            Ok(Event::Delete(o)) => on(Change::Delete(o)),
            Err(e) => tracing::warn!(kind, error = %e, "watch failed; retrying"),
        }
    }
}

/// Binds through `pods/binding` (with the pod's UID as a precondition, as kube-scheduler's
/// own binder does). No event: kube-scheduler records the pod's `Scheduled` event itself once
/// an extender's bind succeeds (its `finishBinding`), and a second one per pod was an extra
/// API write that competed with binding for the API server.
pub struct KubeBinder {
    client: Client,
    timeout: std::time::Duration,
}

/// Below kube-scheduler's default extender timeout (5 s): a bind that cannot finish in time
/// is reported failed while kube-scheduler still waits for the answer, so the ledger forgets
/// it and kube-scheduler's retry is judged afresh instead of meeting "already bound elsewhere".
pub const DEFAULT_BIND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(4);

impl KubeBinder {
    pub fn new(client: Client) -> Self {
        KubeBinder {
            client,
            timeout: DEFAULT_BIND_TIMEOUT,
        }
    }

    /// How long one `pods/binding` call may take.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl Binder for KubeBinder {
    fn bind<'a>(
        &'a self,
        args: &'a ExtenderBindingArgs,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            // The server checks first; checked again here because kube-rs puts the names
            // into the URL unescaped and an empty UID would drop the precondition.
            args.validate().map_err(|e| e.to_string())?;
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &args.pod_namespace);
            let binding = Binding {
                metadata: ObjectMeta {
                    name: Some(args.pod_name.clone()),
                    namespace: Some(args.pod_namespace.clone()),
                    uid: Some(args.pod_uid.clone()),
                    ..Default::default()
                },
                target: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Node".into()),
                    name: Some(args.node.clone()),
                    ..Default::default()
                },
            };
            let params = PostParams::default();
            let call = api.create_subresource::<_, serde_json::Value>(
                "binding",
                &args.pod_name,
                &params,
                &binding,
            );
            tokio::time::timeout(self.timeout, call)
                .await
                .map_err(|_| format!("no answer from the API server within {:?}", self.timeout))?
                .map_err(|e| match e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                })?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(yaml: &str) -> NodeClaim {
        serde_yaml::from_str(yaml).unwrap()
    }

    const CLAIM: &str = r#"
apiVersion: adze.sh/v1
kind: NodeClaim
metadata:
  name: default-x7k2p
  annotations:
    adze.sh/nominated-pods: '[{"namespace":"default","name":"a-0","uid":"u0"},{"namespace":"default","name":"a-1","uid":"u1"}]'
spec:
  nodeClassRef: {group: adze.sh, kind: EC2NodeClass, name: default}
  requirements: []
status:
  nodeName: ip-10-0-1-2
"#;

    #[test]
    fn claim_annotation_and_node_name_are_read() {
        let info = claim_info(&claim(CLAIM)).unwrap();
        assert_eq!(info.node.as_deref(), Some("ip-10-0-1-2"));
        assert_eq!(
            info.nominated,
            vec![
                PodRef::new("default", "a-0", "u0"),
                PodRef::new("default", "a-1", "u1")
            ]
        );
    }

    #[test]
    fn deleting_or_failed_claims_expire_their_nominations() {
        let mut c = claim(CLAIM);
        c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-11-22T00:00:00Z".parse().unwrap(),
        ));
        assert!(claim_info(&c).is_none());
        let failed = CLAIM.replace(
            "  nodeName: ip-10-0-1-2",
            "  conditions: [{type: Launched, status: \"False\", reason: InsufficientCapacity, message: none, lastTransitionTime: \"2026-11-22T00:00:00Z\"}]",
        );
        assert!(claim_info(&claim(&failed)).is_none());
    }

    #[test]
    fn unreadable_annotation_means_no_nominations() {
        let bad = CLAIM.replace("'[{", "'[oops{");
        assert!(claim_info(&claim(&bad)).unwrap().nominated.is_empty());
    }

    #[test]
    fn finished_pods_hold_nothing_and_running_pods_keep_their_node() {
        let p: Pod = serde_yaml::from_str(
            "{metadata: {name: p, uid: u}, spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: 250m}}}]}, status: {phase: Running}}",
        )
        .unwrap();
        let info = pod_info(&p).unwrap();
        assert_eq!(info.namespace, "default");
        assert_eq!(info.node.as_deref(), Some("n1"));
        assert_eq!(info.requests.cpu, 250);
        let done: Pod = serde_yaml::from_str(
            "{metadata: {name: p}, spec: {containers: []}, status: {phase: Succeeded}}",
        )
        .unwrap();
        assert!(pod_info(&done).is_none());
    }

    #[test]
    fn node_claim_label_links_node_to_claim() {
        let n: Node = serde_yaml::from_str(
            "{metadata: {name: n1, labels: {adze.sh/nodeclaim: default-x7k2p}}, status: {allocatable: {cpu: '4', memory: 16Gi, pods: '110'}}}",
        )
        .unwrap();
        let (name, info) = node_info(&n).unwrap();
        assert_eq!(name, "n1");
        assert_eq!(info.claim.as_deref(), Some("default-x7k2p"));
        assert_eq!(info.allocatable.cpu, 4000);
    }
}
