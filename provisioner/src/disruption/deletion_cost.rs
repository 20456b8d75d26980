//! `run --pod-deletion-cost` (Karpenter's `PodDeletionCostManagement` gate): the thin part
//! around [`adze_scheduling::disruption::deletion_cost`]. It reads the pods from the watches
//! (owner, node, the annotation now), works out which nodes are nominated for pending pods,
//! and turns each [`PodWrite`] into a JSON merge patch of that one annotation, carrying the
//! pod's `resourceVersion` so a pod changed since it was read answers 409 Conflict; that
//! write is skipped quietly and the next pass decides again on fresh data. The disruption
//! controller calls [`apply`] at most once per [`MIN_INTERVAL`].

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use adze_api::NodeClaim;
use adze_scheduling::disruption::deletion_cost::{ANNOTATION, Owner, PodRef, PodWrite};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// Rankings are recomputed and written at most this often (Karpenter: at most once a
/// minute): each change is one PATCH per pod, and a rank moving every 10 s pass would steer
/// nothing better than one a minute old.
pub const MIN_INTERVAL: Duration = Duration::from_secs(60);

/// What controls `pod` (its controller owner reference's kind).
pub fn owner(pod: &Pod) -> Owner {
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    match controller.map(|o| (o.api_version.as_str(), o.kind.as_str())) {
        Some(("apps/v1", "ReplicaSet")) => Owner::ReplicaSet,
        Some(("apps/v1", "DaemonSet")) => Owner::DaemonSet,
        Some(("batch/v1", "Job")) => Owner::Job,
        _ => Owner::Other,
    }
}

/// A bound pod that is still running (not finished, not being deleted): the ones that sit on
/// their node and that a scale-in could remove.
fn live_on_node(pod: &Pod) -> Option<&str> {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if pod.metadata.deletion_timestamp.is_some() || matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    pod.spec.as_ref()?.node_name.as_deref()
}

/// The ranking's view of the bound, live pods.
pub fn pod_refs(pods: &[Arc<Pod>]) -> Vec<PodRef> {
    pods.iter()
        .filter_map(|p| {
            let node = live_on_node(p)?;
            Some(PodRef {
                namespace: p.metadata.namespace.clone().unwrap_or_default(),
                name: p.metadata.name.clone().unwrap_or_default(),
                node: node.to_string(),
                owner: owner(p),
                current: p
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(ANNOTATION))
                    .cloned(),
            })
        })
        .collect()
}

/// Nodes whose NodeClaim is nominated for a pod that is still pending (unbound): pods are on
/// their way there, so its rank would be out of date at once.
pub fn nominated(
    claim_of_node: &HashMap<String, Arc<NodeClaim>>,
    pods: &[Arc<Pod>],
) -> BTreeSet<String> {
    let pending: HashSet<&str> = pods
        .iter()
        .filter(|p| p.spec.as_ref().is_none_or(|s| s.node_name.is_none()))
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    claim_of_node
        .iter()
        .filter(|(_, c)| {
            crate::state::nomination::of_claim(c)
                .iter()
                .any(|n| pending.contains(n.uid.as_str()))
        })
        .map(|(node, _)| node.clone())
        .collect()
}

/// `namespace/name` → `resourceVersion`, for the patches' precondition.
pub fn versions(pods: &[Arc<Pod>]) -> HashMap<String, String> {
    pods.iter()
        .filter_map(|p| {
            Some((
                format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref()?,
                    p.metadata.name.as_deref()?
                ),
                p.metadata.resource_version.clone()?,
            ))
        })
        .collect()
}

/// The JSON merge patch for `w`: only the one annotation (a `null` removes it), and the
/// resourceVersion the decision was made on, if known.
pub fn patch(w: &PodWrite, resource_version: Option<&str>) -> Value {
    let value = match w.value {
        Some(v) => Value::String(v.to_string()),
        None => Value::Null,
    };
    let mut metadata = json!({ "annotations": { ANNOTATION: value } });
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = Value::String(rv.to_string());
    }
    json!({ "metadata": metadata })
}

/// Why a write did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// 409: the pod changed since it was read.
    Conflict,
    /// 404: the pod is gone.
    NotFound,
    Other(String),
}

/// Sends one merge patch to a pod; the kube client in `run`, a script in tests.
#[cfg(feature = "controller")]
pub trait PodPatcher {
    fn patch(
        &self,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> impl std::future::Future<Output = Result<(), WriteError>> + Send;
}

#[cfg(feature = "controller")]
impl PodPatcher for kube::Client {
    async fn patch(&self, namespace: &str, name: &str, body: &Value) -> Result<(), WriteError> {
        let api: kube::Api<Pod> = kube::Api::namespaced(self.clone(), namespace);
        match api
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(body),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Err(WriteError::Conflict),
            Err(kube::Error::Api(e)) if e.code == 404 => Err(WriteError::NotFound),
            Err(e) => Err(WriteError::Other(e.to_string())),
        }
    }
}

/// How a pass's writes went, by [`crate::metrics::POD_DELETION_COST_RESULTS`] outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub updated: u64,
    pub not_found: u64,
    pub conflict: u64,
    pub error: u64,
}

/// Sends `writes` in order, one patch each. Conflicts and vanished pods are expected under
/// churn and only counted (debug log); other errors are logged as warnings and the rest
/// still sent.
#[cfg(feature = "controller")]
pub async fn apply(
    patcher: &impl PodPatcher,
    writes: &[PodWrite],
    versions: &HashMap<String, String>,
) -> Tally {
    let mut t = Tally::default();
    for w in writes {
        let key = format!("{}/{}", w.namespace, w.name);
        let body = patch(w, versions.get(&key).map(String::as_str));
        match patcher.patch(&w.namespace, &w.name, &body).await {
            Ok(()) => t.updated += 1,
            Err(WriteError::Conflict) => {
                tracing::debug!(pod = %key, "pod-deletion-cost: pod changed since read; next pass");
                t.conflict += 1;
            }
            Err(WriteError::NotFound) => t.not_found += 1,
            Err(WriteError::Other(e)) => {
                tracing::warn!(pod = %key, error = %e, "pod-deletion-cost: write failed");
                t.error += 1;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Arc<Pod> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn rs_pod(name: &str, node: Option<&str>, cost: Option<&str>) -> Arc<Pod> {
        let mut annotations = serde_json::Map::new();
        if let Some(c) = cost {
            annotations.insert(ANNOTATION.into(), c.into());
        }
        pod(json!({
            "metadata": {"namespace": "web", "name": name, "uid": format!("uid-{name}"),
                "resourceVersion": "42", "annotations": annotations,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-abc", "uid": "rs", "controller": true}]},
            "spec": {"containers": [], "nodeName": node},
            "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
        }))
    }

    #[test]
    fn owners_are_read_from_the_controller_reference_only() {
        assert_eq!(owner(&rs_pod("a", Some("n"), None)), Owner::ReplicaSet);
        let sts = pod(json!({"metadata": {"name": "db-0", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s", "controller": true}]}}));
        assert_eq!(owner(&sts), Owner::Other);
        // A ReplicaSet that is an owner but not the controller does not count.
        let not_controller = pod(json!({"metadata": {"name": "x", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "r"}]}}));
        assert_eq!(owner(&not_controller), Owner::Other);
        let job = pod(json!({"metadata": {"name": "j", "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j", "controller": true}]}}));
        assert_eq!(owner(&job), Owner::Job);
    }

    #[test]
    fn only_bound_live_pods_are_read_with_their_current_value() {
        let mut done = (*rs_pod("done", Some("n1"), None)).clone();
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let refs = pod_refs(&[
            rs_pod("a", Some("n1"), Some("-3")),
            rs_pod("pending", None, None),
            Arc::new(done),
        ]);
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(refs[0].node, "n1");
        assert_eq!(refs[0].current.as_deref(), Some("-3"));
    }

    #[test]
    fn a_node_is_nominated_only_for_pods_still_pending() {
        let claim = |pods: &str| -> Arc<NodeClaim> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": "c", "annotations": {
                        adze_scheduling::labels::NOMINATED_PODS: pods}},
                    "spec": {"nodeClassRef": {"group": "adze.sh", "kind": "EC2NodeClass", "name": "d"},
                             "requirements": []}
                }))
                .unwrap(),
            )
        };
        let nom = |uid: &str| format!(r#"[{{"namespace":"web","name":"x","uid":"{uid}"}}]"#);
        let pods = vec![
            rs_pod("waiting", None, None),
            rs_pod("landed", Some("n2"), None),
        ];
        let map = HashMap::from([
            ("n1".to_string(), claim(&nom("uid-waiting"))),
            ("n2".to_string(), claim(&nom("uid-landed"))),
        ]);
        assert_eq!(nominated(&map, &pods), BTreeSet::from(["n1".to_string()]));
    }

    #[test]
    fn the_patch_touches_only_the_annotation_and_carries_the_resource_version() {
        let w = PodWrite {
            namespace: "web".into(),
            name: "a".into(),
            node: "n1".into(),
            value: Some(-3),
        };
        assert_eq!(
            patch(&w, Some("42")),
            json!({"metadata": {"annotations": {ANNOTATION: "-3"}, "resourceVersion": "42"}})
        );
        let remove = PodWrite { value: None, ..w };
        assert_eq!(
            patch(&remove, None),
            json!({"metadata": {"annotations": {ANNOTATION: null}}})
        );
    }

    /// Records every patch and answers from a script keyed by pod name.
    #[cfg(feature = "controller")]
    struct Scripted {
        answers: HashMap<&'static str, WriteError>,
        sent: std::sync::Mutex<Vec<(String, String, Value)>>,
    }

    #[cfg(feature = "controller")]
    impl PodPatcher for Scripted {
        async fn patch(&self, namespace: &str, name: &str, body: &Value) -> Result<(), WriteError> {
            self.sent
                .lock()
                .unwrap()
                .push((namespace.into(), name.into(), body.clone()));
            match self.answers.get(name) {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            }
        }
    }

    /// End to end over plain data: a cluster of two nodes where `light` is what
    /// consolidation would take first, ReplicaSet pods on both (one with a stale value, one
    /// changed under us), and a StatefulSet pod that must never be patched.
    #[cfg(feature = "controller")]
    #[tokio::test]
    async fn a_pass_patches_the_ranked_pods_and_counts_conflicts_quietly() {
        use adze_scheduling::disruption::deletion_cost::{MAX_NODES_PER_PASS, rank, writes};
        use adze_scheduling::fixtures::{
            ClusterBuilder, GI, ZONES, pod as spod, pool, small_catalog,
        };
        let input = ClusterBuilder::new(pool("default", small_catalog()))
            .node("heavy", "m.4x", ZONES[0], false)
            .node("light", "m.4x", ZONES[0], false)
            .pod("heavy", spod("h").cpu(12_000).mem(GI).build())
            .pod("light", spod("l").cpu(500).mem(GI).build())
            .build();
        let mut sts = (*rs_pod("db-0", Some("heavy"), None)).clone();
        sts.metadata.owner_references.as_mut().unwrap()[0].kind = "StatefulSet".into();
        let pods = vec![
            rs_pod("l", Some("light"), None),
            rs_pod("h", Some("heavy"), Some("-2")),
            rs_pod("h2", Some("heavy"), Some("7")),
            Arc::new(sts),
        ];
        let refs = pod_refs(&pods);
        let ranking = rank(&input, &refs, &BTreeSet::new());
        let w = writes(&ranking, &refs, MAX_NODES_PER_PASS);
        let script = Scripted {
            answers: HashMap::from([("h", WriteError::Conflict)]),
            sent: Default::default(),
        };
        let t = apply(&script, &w.writes, &versions(&pods)).await;
        let sent = script.sent.into_inner().unwrap();
        let names: Vec<&str> = sent.iter().map(|(_, n, _)| n.as_str()).collect();
        // heavy has a StatefulSet pod: unranked, so its ReplicaSet pods' values are removed;
        // light is the only ranked node, -1.
        assert_eq!(names, vec!["l", "h", "h2"], "{sent:?}");
        assert_eq!(
            sent[0].2,
            json!({"metadata": {"annotations": {ANNOTATION: "-1"}, "resourceVersion": "42"}})
        );
        assert_eq!(
            sent[1].2["metadata"]["annotations"][ANNOTATION],
            Value::Null
        );
        assert!(sent.iter().all(|(_, n, _)| n != "db-0"));
        assert_eq!(
            t,
            Tally {
                updated: 2,
                conflict: 1,
                ..Tally::default()
            }
        );
    }
}
