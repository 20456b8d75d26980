//! What draining a node means for each of its pods, decided without I/O: which pods are
//! evicted in this wave, which are left on the node, and whether the drain is finished.
//!
//! Waves: regular pods first; system-critical pods only once no regular pod is left
//! (evicted or still terminating), so the critical ones keep serving the others to the end.
//! Never drained: DaemonSet pods (their controller would recreate them on the node), mirror
//! pods (the kubelet owns them), pods that tolerate the disrupted taint (they asked to stay),
//! and finished pods. Once the NodeClaim's `terminationGracePeriod` has passed every pod still
//! to drain is force-deleted instead.

use adze_scheduling::labels::TAINT_DISRUPTED;
use k8s_openapi::api::core::v1::{Pod, Toleration};

/// Pods at or above this priority are system-critical (`system-cluster-critical` is 2e9).
pub const CRITICAL_PRIORITY: i32 = 2_000_000_000;
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Why a pod stays on a draining node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stays {
    DaemonSet,
    Mirror,
    ToleratesDisruption,
    Finished,
}

/// One pod on the node, as the drain sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainPod {
    /// "namespace/name".
    pub key: String,
    pub uid: String,
    pub stays: Option<Stays>,
    pub critical: bool,
    /// Already has a deletionTimestamp: evicted or deleted, waiting for the kubelet.
    pub terminating: bool,
}

fn tolerates_disrupted(t: &Toleration) -> bool {
    let key_ok = match t.key.as_deref() {
        None | Some("") => t.operator.as_deref() == Some("Exists"),
        Some(k) => k == TAINT_DISRUPTED,
    };
    let effect_ok = matches!(t.effect.as_deref(), None | Some("") | Some("NoSchedule"));
    // The taint has no value: `Equal` matches only an empty value.
    let value_ok =
        t.operator.as_deref() == Some("Exists") || t.value.as_deref().unwrap_or("").is_empty();
    key_ok && effect_ok && value_ok
}

/// How the drain treats `pod`.
pub fn classify(pod: &Pod) -> DrainPod {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let stays = if meta
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "DaemonSet")
    {
        Some(Stays::DaemonSet)
    } else if meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
    {
        Some(Stays::Mirror)
    } else if matches!(phase, Some("Succeeded") | Some("Failed")) {
        Some(Stays::Finished)
    } else if spec
        .and_then(|s| s.tolerations.as_ref())
        .into_iter()
        .flatten()
        .any(tolerates_disrupted)
    {
        Some(Stays::ToleratesDisruption)
    } else {
        None
    };
    let critical = spec.is_some_and(|s| {
        s.priority.is_some_and(|p| p >= CRITICAL_PRIORITY)
            || matches!(
                s.priority_class_name.as_deref(),
                Some("system-cluster-critical") | Some("system-node-critical")
            )
    });
    DrainPod {
        key: format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or("default"),
            meta.name.as_deref().unwrap_or_default()
        ),
        uid: meta.uid.clone().unwrap_or_default(),
        stays,
        critical,
        terminating: meta.deletion_timestamp.is_some(),
    }
}

/// What to do with the node's pods now.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DrainStep {
    /// Evict these through the Eviction API (PodDisruptionBudgets apply).
    pub evict: Vec<DrainPod>,
    /// The grace period is over: delete these at once.
    pub force: Vec<DrainPod>,
    /// Evicted or deleted, waiting for their containers to stop.
    pub terminating: usize,
    /// Critical pods held back until the regular ones are gone.
    pub held_back: usize,
    /// Nothing left to drain: the node can go.
    pub done: bool,
}

/// The next wave for a node holding `pods`; `grace_over` when the claim's
/// `terminationGracePeriod` has passed since its deletion.
pub fn plan(pods: &[DrainPod], grace_over: bool) -> DrainStep {
    let to_drain: Vec<&DrainPod> = pods.iter().filter(|p| p.stays.is_none()).collect();
    let mut step = DrainStep {
        done: to_drain.is_empty(),
        ..DrainStep::default()
    };
    if grace_over {
        step.force = to_drain.into_iter().cloned().collect();
        return step;
    }
    let regular_left = to_drain.iter().any(|p| !p.critical);
    for p in to_drain {
        if p.terminating {
            step.terminating += 1;
        } else if p.critical && regular_left {
            step.held_back += 1;
        } else {
            step.evict.push(p.clone());
        }
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> DrainPod {
        classify(&serde_json::from_value(v).unwrap())
    }

    fn regular(name: &str) -> DrainPod {
        pod(json!({"metadata": {"name": name, "namespace": "web", "uid": name}}))
    }

    fn critical(name: &str) -> DrainPod {
        pod(
            json!({"metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"containers": [], "priorityClassName": "system-cluster-critical"}}),
        )
    }

    fn keys(v: &[DrainPod]) -> Vec<&str> {
        v.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn regular_pods_are_evicted_before_critical_ones() {
        let pods = vec![regular("a"), critical("dns"), regular("b")];
        let step = plan(&pods, false);
        assert_eq!(keys(&step.evict), vec!["web/a", "web/b"]);
        assert_eq!(step.held_back, 1);
        assert!(!step.done);
    }

    #[test]
    fn critical_pods_wait_while_regular_pods_are_still_terminating() {
        let mut a = regular("a");
        a.terminating = true;
        let step = plan(&[a, critical("dns")], false);
        assert!(step.evict.is_empty());
        assert_eq!((step.terminating, step.held_back), (1, 1));
    }

    #[test]
    fn critical_pods_are_evicted_once_the_regular_ones_are_gone() {
        let step = plan(&[critical("dns")], false);
        assert_eq!(keys(&step.evict), vec!["kube-system/dns"]);
    }

    #[test]
    fn high_priority_value_counts_as_critical() {
        let p = pod(
            json!({"metadata": {"name": "x"}, "spec": {"containers": [], "priority": 2000001000}}),
        );
        assert!(p.critical);
    }

    #[test]
    fn daemonset_mirror_finished_and_tolerating_pods_stay() {
        let ds = pod(json!({"metadata": {"name": "ds", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u"}]}}));
        let mirror = pod(json!({"metadata": {"name": "m",
            "annotations": {"kubernetes.io/config.mirror": "x"}}}));
        let done = pod(json!({"metadata": {"name": "j"}, "status": {"phase": "Succeeded"}}));
        let tol = pod(json!({"metadata": {"name": "t"}, "spec": {"containers": [],
            "tolerations": [{"key": "adze.sh/disrupted", "operator": "Exists"}]}}));
        let all = pod(
            json!({"metadata": {"name": "all"}, "spec": {"containers": [],
            "tolerations": [{"operator": "Exists"}]}}),
        );
        assert_eq!(ds.stays, Some(Stays::DaemonSet));
        assert_eq!(mirror.stays, Some(Stays::Mirror));
        assert_eq!(done.stays, Some(Stays::Finished));
        assert_eq!(tol.stays, Some(Stays::ToleratesDisruption));
        assert_eq!(all.stays, Some(Stays::ToleratesDisruption));
        let step = plan(&[ds, mirror, done, tol, all], false);
        assert!(step.done && step.evict.is_empty());
    }

    #[test]
    fn toleration_for_another_taint_or_effect_does_not_keep_a_pod() {
        let other = pod(json!({"metadata": {"name": "o"}, "spec": {"containers": [],
            "tolerations": [{"key": "adze.sh/interrupted", "operator": "Exists"}]}}));
        let no_exec = pod(json!({"metadata": {"name": "e"}, "spec": {"containers": [],
            "tolerations": [{"key": "adze.sh/disrupted", "operator": "Exists", "effect": "NoExecute"}]}}));
        assert_eq!(other.stays, None);
        assert_eq!(no_exec.stays, None);
    }

    #[test]
    fn after_the_grace_period_every_pod_left_is_force_deleted() {
        let mut a = regular("a");
        a.terminating = true;
        let step = plan(&[a, regular("b"), critical("dns")], true);
        assert_eq!(keys(&step.force), vec!["web/a", "web/b", "kube-system/dns"]);
        assert!(step.evict.is_empty());
        assert!(!step.done);
    }

    #[test]
    fn empty_node_is_drained() {
        assert!(plan(&[], false).done);
        assert!(plan(&[], true).done);
    }
}
