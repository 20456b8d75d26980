//! Karpenter's node termination suite (pkg/controllers/node/termination/suite_test.go), restated
//! on the drain decision the termination controller takes each pass
//! (`adze_provisioner::termination::drain`: how each pod is treated, then the next wave). The
//! table is docs/conformance/termination.md.

use adze_provisioner::termination::drain::{DrainPod, Stays, classify, plan};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// The clock of every case.
const NOW: i64 = 1_800_000_000;

/// A pod on the draining node, owned by a ReplicaSet unless `extra` says otherwise: `extra`'s
/// `metadata` and `spec` keys are merged over the defaults.
fn pod(name: &str, extra: Value) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1"}]},
        "spec": {"nodeName": "n0", "containers": [{"name": "app", "image": "nginx"}]},
    });
    for part in ["metadata", "spec", "status"] {
        if let Some(obj) = extra.get(part).and_then(Value::as_object) {
            let target = v
                .as_object_mut()
                .unwrap()
                .entry(part)
                .or_insert_with(|| json!({}));
            for (k, val) in obj {
                target[k] = val.clone();
            }
        }
    }
    serde_json::from_value(v).unwrap()
}

fn drain(pods: &[Pod]) -> Vec<DrainPod> {
    pods.iter().map(|p| classify(p, NOW)).collect()
}

fn keys(v: &[DrainPod]) -> Vec<&str> {
    v.iter().map(|p| p.key.as_str()).collect()
}

/// Reconciliation > should not evict pods that tolerate karpenter disruption taint with equal operator
/// Reconciliation > should not evict pods that tolerate karpenter disruption taint with exists operator
#[test]
fn pods_tolerating_the_disrupted_taint_stay() {
    for toleration in [
        json!({"key": "adze.sh/disrupted", "operator": "Equal", "effect": "NoSchedule"}),
        json!({"key": "adze.sh/disrupted", "operator": "Exists", "effect": "NoSchedule"}),
    ] {
        let pods = drain(&[
            pod("evict", json!({})),
            pod("skip", json!({"spec": {"tolerations": [toleration]}})),
        ]);
        assert_eq!(pods[1].stays, Some(Stays::ToleratesDisruption));
        let step = plan(&pods, None, NOW);
        assert_eq!(keys(&step.evict), ["default/evict"]);
    }
}

/// Reconciliation > should evict pods that tolerate the node.kubernetes.io/unschedulable taint
#[test]
fn pods_tolerating_unschedulable_are_evicted() {
    let pods = drain(&[pod(
        "p",
        json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}}),
    )]);
    assert_eq!(keys(&plan(&pods, None, NOW).evict), ["default/p"]);
}

/// Reconciliation > should delete nodes that have pods without an ownerRef
#[test]
fn pods_without_owner_are_evicted() {
    let pods = drain(&[pod("p", json!({"metadata": {"ownerReferences": []}}))]);
    let step = plan(&pods, None, NOW);
    assert_eq!(keys(&step.evict), ["default/p"]);
    assert!(!step.done);
}

/// Reconciliation > should delete nodes with terminal pods
#[test]
fn finished_pods_do_not_hold_the_drain() {
    let pods = drain(&[
        pod("ok", json!({"status": {"phase": "Succeeded"}})),
        pod("bad", json!({"status": {"phase": "Failed"}})),
    ]);
    assert!(pods.iter().all(|p| p.stays == Some(Stays::Finished)));
    let step = plan(&pods, None, NOW);
    assert!(step.done && step.evict.is_empty());
}

/// Reconciliation > should fail to evict pods that violate a PDB
#[test]
fn pods_go_through_the_eviction_api() {
    // PodDisruptionBudgets are the Eviction API's to enforce: the pod is evicted (and retried
    // while the PDB refuses), never deleted, while no deadline is near.
    let pods = drain(&[pod(
        "guarded",
        json!({"metadata": {"labels": {"app": "guarded"}}}),
    )]);
    let step = plan(&pods, None, NOW);
    assert_eq!(keys(&step.evict), ["default/guarded"]);
    assert!(step.delete.is_empty());
}

fn critical(name: &str, class: &str, daemon: bool) -> Pod {
    let mut extra = json!({"spec": {"priorityClassName": class}});
    if daemon {
        extra["metadata"] = json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-1"}]});
    }
    pod(name, extra)
}

/// Reconciliation > should evict pods in order and wait until pods are fully deleted
#[test]
fn waves_regular_then_critical_and_daemonsets_stay() {
    let all = [
        pod("regular", json!({})),
        pod(
            "daemon",
            json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-1"}]}}),
        ),
        critical("node-critical", "system-node-critical", false),
        critical("cluster-critical", "system-cluster-critical", false),
        critical("daemon-node-critical", "system-node-critical", true),
        critical("daemon-cluster-critical", "system-cluster-critical", true),
    ];
    let pods = drain(&all);
    let first = plan(&pods, None, NOW);
    assert_eq!(keys(&first.evict), ["default/regular"]);
    assert_eq!(first.held_back, 2);
    // while the regular pod terminates, the critical ones still wait
    let mut terminating = pods.clone();
    terminating[0].terminating = true;
    terminating[0].deletion_deadline = Some(NOW + 30);
    let waiting = plan(&terminating, None, NOW);
    assert!(waiting.evict.is_empty());
    assert_eq!((waiting.terminating, waiting.held_back), (1, 2));
    // once it is gone, the critical ones go; DaemonSet pods are never drained
    let second = plan(&pods[1..], None, NOW);
    assert_eq!(
        keys(&second.evict),
        ["default/node-critical", "default/cluster-critical"]
    );
    assert!(plan(&pods[4..], None, NOW).done);
    assert!(pods[1].stays == Some(Stays::DaemonSet) && pods[4].stays == Some(Stays::DaemonSet));
}

/// Reconciliation > should evict non-critical pods first
#[test]
fn non_critical_pods_first() {
    let pods = drain(&[
        pod("regular", json!({})),
        critical("node-critical", "system-node-critical", false),
        critical("cluster-critical", "system-cluster-critical", false),
    ]);
    let step = plan(&pods, None, NOW);
    assert_eq!(keys(&step.evict), ["default/regular"]);
    assert_eq!(step.held_back, 2);
    let next = plan(&pods[1..], None, NOW);
    assert_eq!(next.evict.len(), 2);
}

/// Reconciliation > should not evict static pods
#[test]
fn mirror_pods_stay() {
    // as the kubelet creates them: owned by the Node and annotated as a mirror
    let mirror = pod(
        "static",
        json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n0", "uid": "n0"}],
                            "annotations": {"kubernetes.io/config.mirror": "abc"}}}),
    );
    let pods = drain(&[pod("evict", json!({})), mirror]);
    assert_eq!(pods[1].stays, Some(Stays::Mirror));
    assert_eq!(keys(&plan(&pods, None, NOW).evict), ["default/evict"]);
}

/// Reconciliation > should not delete nodes until all pods are deleted
#[test]
fn not_done_while_pods_terminate() {
    let mut pods = drain(&[pod("a", json!({})), pod("b", json!({}))]);
    for p in pods.iter_mut() {
        p.terminating = true;
        p.deletion_deadline = Some(NOW + 30);
    }
    let step = plan(&pods, None, NOW);
    assert!(!step.done);
    assert_eq!(step.terminating, 2);
    assert!(!plan(&pods[..1], None, NOW).done);
    assert!(plan(&[], None, NOW).done);
}

/// Reconciliation > should bypass pods which are stuck terminating past their grace period
#[test]
fn stuck_pods_no_longer_hold_the_drain() {
    let mut pods = drain(&[pod("p", json!({}))]);
    pods[0].terminating = true;
    pods[0].deletion_deadline = Some(NOW);
    assert!(!plan(&pods, None, NOW + 30).done);
    let later = plan(&pods, None, NOW + 90);
    assert!(later.done);
    assert_eq!(keys(&later.stuck), ["default/p"]);
}

fn do_not_disrupt(name: &str, grace: i64) -> Pod {
    pod(
        name,
        json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}},
               "spec": {"terminationGracePeriodSeconds": grace}}),
    )
}

/// Reconciliation > should preemptively delete pods to satisfy their terminationGracePeriodSeconds
#[test]
fn pods_deleted_in_time_for_their_grace() {
    // the node's terminationGracePeriod is 300 s and a moment has passed; the pod wants 300 s
    let pods = drain(&[do_not_disrupt("p", 300)]);
    let step = plan(&pods, Some(290), NOW);
    assert_eq!(step.delete.len(), 1);
    assert_eq!(step.delete[0].1, 290);
}

/// Reconciliation > should only delete pods when their terminationGracePeriodSeconds is less than the the node's remaining terminationGracePeriod
#[test]
fn pods_deleted_only_once_their_grace_reaches_the_deadline() {
    let pods = drain(&[do_not_disrupt("p", 60)]);
    // 90 s into a 300 s grace period: the do-not-disrupt pod stays
    let early = plan(&pods, Some(210), NOW);
    assert!(early.delete.is_empty() && early.evict.is_empty());
    assert_eq!(early.pinned, 1);
    // 265 s in: 35 s remain, less than its 60 s: deleted with what remains
    let late = plan(&pods, Some(35), NOW);
    assert_eq!(late.delete.len(), 1);
    assert_eq!(late.delete[0].1, 35);
}

/// Reconciliation > should update deletion timestamp for terminating pods when it is after node deletion timestamp
#[test]
fn terminating_pods_are_brought_forward_to_the_deadline() {
    let mut pods = drain(&[do_not_disrupt("p", 6000)]);
    pods[0].terminating = true;
    pods[0].deletion_deadline = Some(NOW + 6000);
    let step = plan(&pods, Some(210), NOW);
    assert_eq!(step.delete.len(), 1, "{step:?}");
    assert!(step.delete[0].1 <= 210);
}

fn attachment(name: &str, pv: &str) -> k8s_openapi::api::storage::v1::VolumeAttachment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n0", "source": {"persistentVolumeName": pv}},
    }))
    .unwrap()
}

/// Reconciliation > VolumeAttachments > should wait for volume attachments
#[test]
fn drained_node_waits_for_its_volume_attachments() {
    let vas = [attachment("va", "foo")];
    let none = std::collections::BTreeSet::new();
    assert_eq!(
        adze_provisioner::termination::volumes::blocking(&vas, "n0", &none),
        ["va"]
    );
    // once it is gone, nothing blocks
    assert!(adze_provisioner::termination::volumes::blocking(&[], "n0", &none).is_empty());
}

/// Reconciliation > VolumeAttachments > should only wait for volume attachments associated with drainable pods
#[test]
fn attachments_of_pods_staying_on_the_node_do_not_block() {
    // `bar` is used by a pod that tolerates the disrupted taint and stays (the controller
    // collects such pods' volumes); `foo` is not.
    let vas = [
        attachment("va-drainable", "foo"),
        attachment("va-kept", "bar"),
    ];
    let kept = std::collections::BTreeSet::from(["bar".to_string()]);
    assert_eq!(
        adze_provisioner::termination::volumes::blocking(&vas, "n0", &kept),
        ["va-drainable"]
    );
}

/// Reconciliation > VolumeAttachments > should wait for volume attachments until the nodeclaim's termination grace period expires
#[test]
fn attachments_are_waited_for_only_until_the_grace_period_ends() {
    let claim: adze_api::NodeClaim = serde_json::from_value(json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"},
                 "terminationGracePeriod": "1m"},
    }))
    .unwrap();
    let at = |s: &str| s.parse::<k8s_openapi::jiff::Timestamp>().unwrap();
    // the controller waits while attachments block and the grace period has not ended
    assert!(!adze_provisioner::termination::grace_over(
        &claim,
        at("2026-01-01T00:00:30Z")
    ));
    assert!(adze_provisioner::termination::grace_over(
        &claim,
        at("2026-01-01T00:05:00Z")
    ));
}

// ---- terminator/suite_test.go and eviction/suite_test.go: the Eviction API's answers ----
//
// Restated on how the termination controller reads an Eviction's answer
// (`adze_api::eviction::Outcome::from_status`) and builds the request
// (`adze_api::eviction::request`); the Evicted / EvictionBlocked events and the retry
// backoff follow from the outcome in the controller.

use adze_api::eviction::{Outcome, request};

/// Eviction API > should succeed with no event when the pod is not found
#[test]
fn eviction_of_a_pod_already_gone_is_done() {
    assert_eq!(Outcome::from_status(Some(404)), Outcome::Gone);
}

/// Eviction API > should succeed with no event when the pod UID conflicts
#[test]
fn eviction_names_the_pods_uid_and_a_successor_is_left_alone() {
    // The request carries the uid as a precondition, so a same-named successor answers 409,
    // which is read as "the pod asked for is gone" (no retry, no event).
    let req = request("policy/v1", "default", "web-0", Some("uid-old")).unwrap();
    let body: Value = serde_json::from_slice(req.body()).unwrap();
    assert_eq!(body["deleteOptions"]["preconditions"]["uid"], "uid-old");
    assert_eq!(body["metadata"]["name"], "web-0");
    assert_eq!(Outcome::from_status(Some(409)), Outcome::Gone);
}

/// Eviction API > should succeed with an evicted event when there are no PDBs
/// Eviction API > should succeed with no event when there are PDBs that allow an eviction
#[test]
fn an_accepted_eviction_is_evicted() {
    assert_eq!(Outcome::from_status(None), Outcome::Evicted);
}

/// Eviction API > should return a NodeDrainError event when a PDB is blocking
/// Eviction API > should emit a FailedEviction event when a PDB is blocking
#[test]
fn a_pdb_refusal_is_blocked_and_retried() {
    assert_eq!(Outcome::from_status(Some(429)), Outcome::Blocked);
    // never deleted instead while no deadline is near
    let pods = drain(&[pod("guarded", json!({}))]);
    let step = plan(&pods, None, NOW);
    assert_eq!(keys(&step.evict), ["default/guarded"]);
    assert!(step.delete.is_empty());
}

/// Eviction API > should return a NodeDrainError event when two PDBs refer to the same pod
/// Eviction API > should fail when two PDBs refer to the same pod
#[test]
fn a_server_error_is_a_failure_retried() {
    // the apiserver answers 500 when two PDBs select the pod
    assert_eq!(Outcome::from_status(Some(500)), Outcome::Failed);
    assert_ne!(Outcome::from_status(Some(500)), Outcome::Gone);
}

// ---- terminator/suite_test.go: Pod Deletion API ----

/// Pod Deletion API > should not delete a pod with no nodeTerminationTime
#[test]
fn without_a_deadline_nothing_is_deleted() {
    let pods = drain(&[pod(
        "p",
        json!({"spec": {"terminationGracePeriodSeconds": 60}}),
    )]);
    let step = plan(&pods, None, NOW);
    assert!(step.delete.is_empty());
    assert_eq!(keys(&step.evict), ["default/p"]);
}

/// Pod Deletion API > should not delete a pod with terminationGracePeriodSeconds still remaining before nodeTerminationTime
#[test]
fn a_pod_whose_grace_fits_before_the_deadline_is_not_deleted() {
    let pods = drain(&[pod(
        "p",
        json!({"spec": {"terminationGracePeriodSeconds": 60}}),
    )]);
    let step = plan(&pods, Some(300), NOW);
    assert!(step.delete.is_empty(), "{step:?}");
}

/// Pod Deletion API > should delete a pod with less than terminationGracePeriodSeconds remaining before nodeTerminationTime
#[test]
fn a_pod_whose_grace_runs_past_the_deadline_is_deleted_with_what_remains() {
    let pods = drain(&[pod(
        "p",
        json!({"spec": {"terminationGracePeriodSeconds": 120}}),
    )]);
    let step = plan(&pods, Some(60), NOW);
    assert_eq!(step.delete.len(), 1, "{step:?}");
    assert_eq!(
        (step.delete[0].0.key.as_str(), step.delete[0].1),
        ("default/p", 60)
    );
}
