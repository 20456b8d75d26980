//! What draining a node means for each of its pods, decided without I/O: which pods are
//! evicted in this wave, which are left on the node, and whether the drain is finished.
//!
//! Waves: regular pods first; system-critical pods only once no regular pod is left
//! (evicted or still terminating), so the critical ones keep serving the others to the end.
//! Never drained: DaemonSet pods (their controller would recreate them on the node), mirror
//! pods (the kubelet owns them), pods that tolerate the disrupted taint (they asked to stay),
//! and finished pods.
//!
//! The NodeClaim's `terminationGracePeriod` (counted from its deletion) is the node's
//! deadline. Each pod still to drain is deleted (no PodDisruptionBudget asked) early enough to
//! get its own `terminationGracePeriodSeconds` before the deadline, or, when that is no longer
//! possible, with the time that remains ([`deletion_grace`]); at the deadline whatever is left
//! is deleted with grace 0. While a deadline exists, pods annotated do-not-disrupt are not
//! evicted: they stay until their deletion time (Karpenter v1). Without one they are evicted
//! like any other pod, so a deleted node is never held forever.
//!
//! A pod still terminating a minute after its deletion time ([`STUCK_AFTER_SECONDS`], as in
//! Karpenter) is *stuck*: its kubelet is not confirming the deletion (the machine died or
//! lost the network mid-drain). It no longer holds the drain back; pod garbage collection
//! removes it once the Node is gone, and its controller already replaced it when it was
//! deleted.

use crate::disruption::input::PodProtection;
use adze_scheduling::labels::TAINT_DISRUPTED;
use k8s_openapi::api::core::v1::{Pod, Toleration};

/// Pods at or above this priority are system-critical (`system-cluster-critical` is 2e9).
pub const CRITICAL_PRIORITY: i32 = 2_000_000_000;
/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_POD_GRACE: i64 = 30;
/// A terminating pod this long past its deletion time (which already includes its grace)
/// is stuck: nobody on the node is going to finish it.
pub const STUCK_AFTER_SECONDS: i64 = 60;
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
    /// `metadata.deletionTimestamp` (deletion time + grace), in Unix seconds.
    pub deletion_deadline: Option<i64>,
    /// `spec.terminationGracePeriodSeconds` (30 when unset).
    pub grace_seconds: i64,
    /// Annotated `adze.sh/do-not-disrupt` or `karpenter.sh/do-not-disrupt`: "true", or a
    /// duration that has not run out since the pod started.
    pub do_not_disrupt: bool,
}

/// The grace to delete a pod with when its node's deadline is `remaining` seconds away and
/// the pod asks for `pod_grace` seconds: `None` while there is more time than the pod needs
/// (keep asking through the Eviction API), else the pod's full grace if it still fits, else
/// what remains (0 at or past the deadline).
pub fn deletion_grace(remaining: i64, pod_grace: i64) -> Option<i64> {
    let pod_grace = pod_grace.max(0);
    (remaining <= pod_grace).then(|| remaining.clamp(0, pod_grace))
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
pub fn classify(pod: &Pod, now: i64) -> DrainPod {
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
        deletion_deadline: meta.deletion_timestamp.as_ref().map(|t| t.0.as_second()),
        grace_seconds: spec
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_POD_GRACE),
        do_not_disrupt: match crate::disruption::input::pod_protection(pod).0 {
            PodProtection::Indefinite => true,
            PodProtection::Until(until) => now < until,
            PodProtection::None => false,
        },
    }
}

/// What to do with the node's pods now.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DrainStep {
    /// Evict these through the Eviction API (PodDisruptionBudgets apply).
    pub evict: Vec<DrainPod>,
    /// The node's deadline is near: delete these now, each with this grace (seconds).
    pub delete: Vec<(DrainPod, i64)>,
    /// Evicted or deleted, waiting for their containers to stop.
    pub terminating: usize,
    /// Terminating past [`STUCK_AFTER_SECONDS`]: no longer waited for.
    pub stuck: Vec<DrainPod>,
    /// Critical pods held back until the regular ones are gone.
    pub held_back: usize,
    /// Do-not-disrupt pods left alone until their deletion time.
    pub pinned: usize,
    /// Nothing left to drain: the node can go.
    pub done: bool,
}

/// Whether `p` is stuck terminating at `now` (Unix seconds).
pub fn stuck(p: &DrainPod, now: i64) -> bool {
    p.terminating
        && p.deletion_deadline
            .is_some_and(|d| now.saturating_sub(d) > STUCK_AFTER_SECONDS)
}

/// The next wave for a node holding `pods` at `now` (Unix seconds); `remaining` is the time
/// in seconds to the node's deadline (its claim's deletion plus `terminationGracePeriod`),
/// `None` without one.
pub fn plan(pods: &[DrainPod], remaining: Option<i64>, now: i64) -> DrainStep {
    let (stuck_pods, to_drain): (Vec<&DrainPod>, Vec<&DrainPod>) = pods
        .iter()
        .filter(|p| p.stays.is_none())
        .partition(|p| stuck(p, now));
    let mut step = DrainStep {
        done: to_drain.is_empty(),
        stuck: stuck_pods.into_iter().cloned().collect(),
        ..DrainStep::default()
    };
    if remaining.is_some_and(|r| r <= 0) {
        step.delete = to_drain.into_iter().map(|p| (p.clone(), 0)).collect();
        return step;
    }
    let regular_left = to_drain.iter().any(|p| !p.critical);
    for p in to_drain {
        if p.terminating {
            // Deleted earlier with a grace that runs past the node's deadline: delete it
            // again with what remains, so it is gone by then (Karpenter does the same).
            match (remaining, p.deletion_deadline) {
                (Some(r), Some(d)) if d > now.saturating_add(r) => step.delete.push((p.clone(), r)),
                _ => step.terminating += 1,
            }
        } else if let Some(g) = remaining.and_then(|r| deletion_grace(r, p.grace_seconds)) {
            step.delete.push((p.clone(), g));
        } else if p.do_not_disrupt && remaining.is_some() {
            step.pinned += 1;
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
        classify(&serde_json::from_value(v).unwrap(), 0)
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

    /// A fixed "now" for plans; deletion deadlines in tests are relative to it.
    const NOW: i64 = 1_800_000_000;

    fn keys(v: &[DrainPod]) -> Vec<&str> {
        v.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn regular_pods_are_evicted_before_critical_ones() {
        let pods = vec![regular("a"), critical("dns"), regular("b")];
        let step = plan(&pods, None, NOW);
        assert_eq!(keys(&step.evict), vec!["web/a", "web/b"]);
        assert_eq!(step.held_back, 1);
        assert!(!step.done);
    }

    #[test]
    fn critical_pods_wait_while_regular_pods_are_still_terminating() {
        let mut a = regular("a");
        a.terminating = true;
        let step = plan(&[a, critical("dns")], None, NOW);
        assert!(step.evict.is_empty());
        assert_eq!((step.terminating, step.held_back), (1, 1));
    }

    #[test]
    fn critical_pods_are_evicted_once_the_regular_ones_are_gone() {
        let step = plan(&[critical("dns")], None, NOW);
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
        let step = plan(&[ds, mirror, done, tol, all], None, NOW);
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
    fn at_the_deadline_every_pod_left_is_deleted_with_no_grace() {
        let mut a = regular("a");
        a.terminating = true;
        let step = plan(&[a, regular("b"), critical("dns")], Some(0), NOW);
        let got: Vec<(&str, i64)> = step
            .delete
            .iter()
            .map(|(p, g)| (p.key.as_str(), *g))
            .collect();
        assert_eq!(
            got,
            vec![("web/a", 0), ("web/b", 0), ("kube-system/dns", 0)]
        );
        assert!(step.evict.is_empty());
        assert!(!step.done);
    }

    #[test]
    fn remaining_grace_is_the_pods_own_until_the_deadline_is_closer() {
        assert_eq!(deletion_grace(3600, 300), None);
        assert_eq!(deletion_grace(301, 300), None);
        assert_eq!(deletion_grace(300, 300), Some(300));
        assert_eq!(deletion_grace(120, 300), Some(120));
        assert_eq!(deletion_grace(0, 300), Some(0));
        assert_eq!(deletion_grace(-5, 300), Some(0));
        assert_eq!(deletion_grace(10, 0), None);
        assert_eq!(deletion_grace(0, 0), Some(0));
    }

    #[test]
    fn pods_are_deleted_early_enough_to_get_their_grace_before_the_deadline() {
        let slow = pod(
            json!({"metadata": {"name": "slow", "namespace": "web", "uid": "s"},
            "spec": {"containers": [], "terminationGracePeriodSeconds": 300}}),
        );
        assert_eq!(slow.grace_seconds, 300);
        assert_eq!(regular("a").grace_seconds, DEFAULT_POD_GRACE);
        // 55 minutes into a 1h terminationGracePeriod: the slow pod is deleted with its full
        // 300 s; the default-grace pod is still asked through the Eviction API.
        let step = plan(&[slow.clone(), regular("a")], Some(300), NOW);
        assert_eq!(step.delete, vec![(slow.clone(), 300)]);
        assert_eq!(keys(&step.evict), vec!["web/a"]);
        // Too late for its full grace (a restart, or it arrived late): what remains.
        let step = plan(std::slice::from_ref(&slow), Some(100), NOW);
        assert_eq!(step.delete, vec![(slow, 100)]);
    }

    #[test]
    fn do_not_disrupt_pods_wait_for_their_deletion_time_when_there_is_a_deadline() {
        let pinned = pod(
            json!({"metadata": {"name": "p", "namespace": "web", "uid": "p",
            "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
            "spec": {"containers": [], "terminationGracePeriodSeconds": 60}}),
        );
        assert!(pinned.do_not_disrupt);
        let step = plan(std::slice::from_ref(&pinned), Some(3600), NOW);
        assert!(step.evict.is_empty() && step.delete.is_empty());
        assert_eq!(step.pinned, 1);
        assert_eq!(
            plan(std::slice::from_ref(&pinned), Some(60), NOW).delete,
            vec![(pinned.clone(), 60)]
        );
        // No deadline: evicted like any pod, so the node is never held forever.
        assert_eq!(keys(&plan(&[pinned], None, NOW).evict), vec!["web/p"]);
    }

    #[test]
    fn a_do_not_disrupt_duration_pins_the_pod_only_until_it_runs_out() {
        let v = json!({"metadata": {"name": "p", "namespace": "web", "uid": "p",
            "annotations": {"adze.sh/do-not-disrupt": "10m"}},
            "spec": {"containers": []}, "status": {"startTime": "2026-01-01T00:00:00Z"}});
        let started = 1_767_225_600;
        let pod: Pod = serde_json::from_value(v).unwrap();
        assert!(classify(&pod, started + 599).do_not_disrupt);
        assert!(!classify(&pod, started + 600).do_not_disrupt);
        let lapsed = classify(&pod, started + 600);
        assert_eq!(
            keys(&plan(&[lapsed], Some(3600), started + 600).evict),
            vec!["web/p"]
        );
    }

    #[test]
    fn empty_node_is_drained() {
        assert!(plan(&[], None, NOW).done);
        assert!(plan(&[], Some(0), NOW).done);
    }

    #[test]
    fn a_pod_terminating_a_minute_past_its_deletion_time_no_longer_holds_the_drain() {
        let mut a = regular("a");
        a.terminating = true;
        a.deletion_deadline = Some(NOW - STUCK_AFTER_SECONDS);
        let step = plan(std::slice::from_ref(&a), None, NOW);
        assert_eq!(
            (step.terminating, step.done),
            (1, false),
            "within the minute: waited for"
        );
        a.deletion_deadline = Some(NOW - STUCK_AFTER_SECONDS - 1);
        let step = plan(&[a.clone(), regular("b")], None, NOW);
        assert_eq!(keys(&step.stuck), vec!["web/a"]);
        assert_eq!((step.terminating, keys(&step.evict)), (0, vec!["web/b"]));
        assert!(!step.done, "b still has to go");
        let step = plan(&[a], Some(0), NOW);
        assert!(
            step.done && step.delete.is_empty(),
            "a stuck pod is not deleted again: {step:?}"
        );
    }
}
