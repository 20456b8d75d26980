//! What node repair ([`adze_scheduling::disruption::repair`]) is given: each NodeClaim's
//! Node with its conditions as the Node reports them, and the instance's status checks as
//! the cloud reports them (`StatusChecks`, with the `controller` feature). Reading only; the
//! disruption controller carries the verdicts out, and `simulate --disruption --node-repair`
//! plans them from the Node conditions alone.

use std::collections::HashMap;
#[cfg(feature = "controller")]
use std::collections::{BTreeMap, BTreeSet};
#[cfg(feature = "controller")]
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
#[cfg(feature = "controller")]
use adze_scheduling::disruption::UnixSeconds;
use adze_scheduling::disruption::repair::{
    EC2_STATUS_CONDITION, NodeCondition, NodeHealth, PublishedCondition, REBOOT_FAILED_ANNOTATION,
    REBOOTED_AT_ANNOTATION, RebootRecord, RepairMode,
};
#[cfg(feature = "controller")]
use adze_scheduling::disruption::repair::{StatusCheck, remember_first_failures};
use adze_scheduling::labels;
use k8s_openapi::api::core::v1::Node;

#[cfg(feature = "controller")]
use crate::cloud::CloudProvider;
use crate::provisioning::snapshot::Objects;

/// The repair mode `--node-repair` and `--legacy-node-repair` ask for: off, budgeted (the
/// default once on, Karpenter v1.15) or legacy (forceful, outside budgets). The legacy flag
/// alone is refused, naming both flags, rather than silently doing nothing.
pub fn mode(node_repair: bool, legacy: bool) -> Result<Option<RepairMode>, String> {
    match (node_repair, legacy) {
        (false, false) => Ok(None),
        (true, false) => Ok(Some(RepairMode::Budgeted)),
        (true, true) => Ok(Some(RepairMode::Legacy)),
        (false, true) => Err(
            "--legacy-node-repair (ADZE_LEGACY_NODE_REPAIR) chooses how node repair runs, and node repair is off: add --node-repair (ADZE_NODE_REPAIR), or drop --legacy-node-repair".into(),
        ),
    }
}

/// Whether `--reboot-for-repair` is on: refused, naming the flags, without `--node-repair`
/// (nothing to reboot for) and with `--legacy-node-repair` (forceful repair replaces at once,
/// outside budgets; reboots are budgeted repair's first step).
pub fn reboot_first(reboot: bool, node_repair: bool, legacy: bool) -> Result<bool, String> {
    match (reboot, node_repair, legacy) {
        (false, _, _) => Ok(false),
        (true, false, _) => Err(
            "--reboot-for-repair (ADZE_REBOOT_FOR_REPAIR) is a node repair action, and node repair is off: add --node-repair (ADZE_NODE_REPAIR), or drop --reboot-for-repair".into(),
        ),
        (true, true, true) => Err(
            "--reboot-for-repair (ADZE_REBOOT_FOR_REPAIR) is budgeted repair's first step and --legacy-node-repair (ADZE_LEGACY_NODE_REPAIR) replaces at once: drop one of them".into(),
        ),
        (true, true, false) => Ok(true),
    }
}

#[cfg(feature = "controller")]
/// How often the cloud's status checks are read: EC2 runs them every minute, and Karpenter
/// polls DescribeInstanceStatus as often. Between readings the last one is used.
pub const STATUS_CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// The cloud's status checks, read at most every [`STATUS_CHECK_INTERVAL`], and when each
/// failing check was first seen (for checks the cloud gives no `impairedSince`).
#[cfg(feature = "controller")]
#[derive(Default)]
pub struct StatusChecks {
    /// When the last reading was taken and what it said; None after a failed call: nothing
    /// known until the next one.
    last: Option<(Instant, Option<Reading>)>,
    first_seen: BTreeMap<String, UnixSeconds>,
}

#[cfg(feature = "controller")]
impl StatusChecks {
    /// Gives each of `health` its instance's status checks: from the cloud when the last
    /// reading is older than the interval (asking only for these instances), else from that
    /// reading. A failed read is logged and known as nothing — never as impaired — and asked
    /// again after the interval.
    pub async fn attach(
        &mut self,
        cloud: &dyn CloudProvider,
        health: &mut [NodeHealth],
        now: UnixSeconds,
        at: Instant,
    ) {
        let fresh = self
            .last
            .as_ref()
            .is_some_and(|(t, _)| at.saturating_duration_since(*t) < STATUS_CHECK_INTERVAL);
        if !fresh {
            let ids: Vec<String> = health
                .iter()
                .filter_map(|h| h.provider_id.clone())
                .collect();
            let reading = match cloud.instance_health(&ids).await {
                Ok(mut reports) => {
                    remember_first_failures(&mut self.first_seen, &mut reports, now);
                    let failing = reports
                        .values()
                        .filter(|c| c.iter().any(StatusCheck::is_failing))
                        .count();
                    tracing::debug!(
                        instances = ids.len(),
                        reported = reports.len(),
                        failing,
                        "read the instances' status checks"
                    );
                    Some(Reading {
                        asked: ids.iter().cloned().collect(),
                        reports,
                    })
                }
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "status checks could not be read; node repair goes by node conditions alone (EC2StatusImpaired left as the Nodes hold it) until the next reading"
                    );
                    None
                }
            };
            self.last = Some((at, reading));
        }
        let reading = self.last.as_ref().and_then(|(_, r)| r.as_ref());
        for h in health.iter_mut() {
            let id = h.provider_id.as_ref();
            h.status_checks = id
                .and_then(|id| reading?.reports.get(id).cloned())
                .unwrap_or_default();
            h.checks_read = id.is_some_and(|id| reading.is_some_and(|r| r.asked.contains(id)));
        }
    }
}

/// One successful reading: the providerIDs asked about, and the checks the cloud reported
/// (providerID → checks; an instance asked about and left out has none failing).
#[cfg(feature = "controller")]
struct Reading {
    asked: BTreeSet<String>,
    reports: BTreeMap<String, Vec<StatusCheck>>,
}

/// The strategic-merge patch of a Node's status that writes `c` as its
/// [`EC2_STATUS_CONDITION`]: Node conditions merge by `type`, so the kubelet's own
/// conditions (and anyone else's) are left as they are.
pub fn condition_patch(c: &PublishedCondition) -> serde_json::Value {
    let since = k8s_openapi::jiff::Timestamp::from_second(c.since)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
        .to_string();
    serde_json::json!({"status": {"conditions": [{
        "type": EC2_STATUS_CONDITION,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "lastTransitionTime": since,
    }]}})
}

/// Every NodeClaim whose Node exists, with the Node's conditions; claims not registered yet
/// have no Node to judge and are left out.
pub fn health(objects: &Objects) -> Vec<NodeHealth> {
    let nodes: HashMap<&str, &Node> = objects
        .nodes
        .iter()
        .filter_map(|n| Some((n.metadata.name.as_deref()?, n.as_ref())))
        .collect();
    objects
        .claims
        .iter()
        .filter_map(|c| {
            let name = c.status.as_ref()?.node_name.as_deref()?;
            let node = nodes.get(name)?;
            Some(of(c, node))
        })
        .collect()
}

fn of(claim: &NodeClaim, node: &Node) -> NodeHealth {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| NodeCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    since: c.last_transition_time.as_ref().map(|t| t.0.as_second()),
                    message: c.message.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let provider_id = claim
        .status
        .as_ref()
        .and_then(|s| s.provider_id.clone())
        .or_else(|| node.spec.as_ref()?.provider_id.clone());
    NodeHealth {
        node: node.metadata.name.clone().unwrap_or_default(),
        nodeclaim: claim.metadata.name.clone().unwrap_or_default(),
        nodepool: claim
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NODEPOOL).cloned()),
        provider_id,
        conditions,
        status_checks: Vec::new(),
        checks_read: false,
        deleting: claim.metadata.deletion_timestamp.is_some()
            || node.metadata.deletion_timestamp.is_some(),
        do_not_repair: node.metadata.annotations.as_ref().is_some_and(|a| {
            labels::DO_NOT_REPAIR_KEYS
                .iter()
                .any(|k| a.get(*k).is_some_and(|v| v == "true"))
        }),
        reboot: reboot_record(claim),
    }
}

/// The NodeClaim's record of a reboot for repair ([`REBOOTED_AT_ANNOTATION`], and
/// [`REBOOT_FAILED_ANNOTATION`] when the cloud refused it). A time that cannot be read counts
/// as a refused reboot at the epoch: the node is replaced rather than rebooted again and
/// again on a record nobody can read.
pub fn reboot_record(claim: &NodeClaim) -> Option<RebootRecord> {
    let a = claim.metadata.annotations.as_ref()?;
    let at = a.get(REBOOTED_AT_ANNOTATION)?;
    match at.parse::<k8s_openapi::jiff::Timestamp>() {
        Ok(t) => Some(RebootRecord {
            at: t.as_second(),
            failed: a.contains_key(REBOOT_FAILED_ANNOTATION),
        }),
        Err(_e) => {
            // The lean (simulate-only) build has no tracing.
            #[cfg(feature = "controller")]
            tracing::warn!(
                nodeclaim = claim.metadata.name.as_deref().unwrap_or_default(),
                value = %at,
                error = %_e,
                "{REBOOTED_AT_ANNOTATION} is not an RFC 3339 time; repair replaces the node instead of rebooting it again"
            );
            Some(RebootRecord {
                at: 0,
                failed: true,
            })
        }
    }
}

/// The merge patch of a NodeClaim's annotations that records a reboot for repair at `now`
/// (before it is asked for), or — with `refused` — that the cloud refused it.
pub fn reboot_patch(now: i64, refused: Option<&str>) -> serde_json::Value {
    let at = k8s_openapi::jiff::Timestamp::from_second(now)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
        .to_string();
    serde_json::json!({"metadata": {"annotations": {
        REBOOTED_AT_ANNOTATION: at,
        REBOOT_FAILED_ANNOTATION: refused,
    }}})
}

#[cfg(all(test, feature = "controller"))]
mod tests {
    use super::*;
    use adze_scheduling::disruption::repair::{Verdict, decide, default_policies};
    use serde_json::json;
    use std::sync::Arc;

    fn claim(name: &str, node: Option<&str>, deleting: bool) -> Arc<NodeClaim> {
        let mut v = json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {labels::NODEPOOL: "web"}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        });
        if let Some(n) = node {
            v["status"] = json!({"nodeName": n});
        }
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn node(name: &str, kernel: &str, since: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "KernelReady", "status": kernel, "lastTransitionTime": since},
                ]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn the_legacy_flag_keeps_repair_forceful_and_the_default_is_budgeted() {
        assert_eq!(mode(false, false), Ok(None));
        assert_eq!(mode(true, false), Ok(Some(RepairMode::Budgeted)));
        assert_eq!(mode(true, true), Ok(Some(RepairMode::Legacy)));
        let e = mode(false, true).unwrap_err();
        assert!(
            e.contains("--legacy-node-repair") && e.contains("--node-repair"),
            "{e}"
        );
        // What each mode does with a repair due in a pool whose budget allows none: the
        // decision (budgeted) holds it; the legacy mode leaves the decision alone and the
        // forceful verdict stands, budgets unread.
        let now = 1_767_225_600;
        let mut b = adze_scheduling::fixtures::ClusterBuilder::new(
            adze_scheduling::fixtures::pool("web", adze_scheduling::fixtures::small_catalog()),
        )
        .node("n1", "m.4x", adze_scheduling::fixtures::ZONES[0], false)
        .facts("n1", |f| {
            f.disrupting = true;
            f.disrupting_as_not_ready = true;
        })
        .policy(|p| {
            p.budgets = vec![adze_scheduling::disruption::Budget::nodes(
                adze_scheduling::disruption::BudgetNodes::Count(0),
            )]
        })
        .now(now)
        .build();
        b.health = vec![NodeHealth::new("n1", "n1-claim", "web").with(
            "Ready",
            "Unknown",
            Some(now - 31 * 60),
        )];
        let run = |m: Option<RepairMode>| {
            let options = adze_scheduling::disruption::Options {
                node_repair: m,
                ..Default::default()
            };
            let d = adze_scheduling::disruption::decide_all(&b, &options, true, 10);
            let held = adze_scheduling::disruption::repair_held(&b, &options, &d);
            (d.len(), held.len())
        };
        assert_eq!(run(mode(true, false).unwrap()), (0, 1), "budgeted: held");
        assert_eq!(
            run(mode(true, true).unwrap()),
            (0, 0),
            "legacy: not the decision's"
        );
        let forceful = decide(&b.health, &default_policies(), now);
        assert_eq!(forceful[0].verdict, Verdict::Repair);
        // With room in the budget, budgeted repair decides it.
        b.policies[0].budgets.clear();
        let options = adze_scheduling::disruption::Options {
            node_repair: mode(true, false).unwrap(),
            ..Default::default()
        };
        let d = adze_scheduling::disruption::decide_all(&b, &options, true, 10);
        assert_eq!(
            d[0].reason.as_str(),
            adze_scheduling::disruption::repair::REASON
        );
        assert_eq!(d[0].node_names(), ["n1"]);
    }

    #[test]
    fn node_conditions_reach_the_decision_with_their_transition_times_and_pool() {
        let objects = Objects {
            claims: vec![
                claim("c1", Some("n1"), false),
                claim("c2", Some("n2"), true),
                claim("c3", None, false),
                claim("c4", Some("gone"), false),
            ],
            nodes: vec![
                node("n1", "False", "2026-01-01T00:00:00Z"),
                node("n2", "False", "2026-01-01T00:00:00Z"),
            ],
            ..Objects::default()
        };
        let h = health(&objects);
        assert_eq!(
            h.iter().map(|h| h.nodeclaim.as_str()).collect::<Vec<_>>(),
            ["c1", "c2"],
            "claims with no node are left out"
        );
        assert_eq!(h[0].nodepool.as_deref(), Some("web"));
        assert!(!h[0].deleting && h[1].deleting);
        let t0 = 1_767_225_600; // 2026-01-01T00:00:00Z
        assert_eq!(h[0].conditions[1].since, Some(t0));
        // 31 minutes later: c1 is repaired; c2 is already going; both count for the guard,
        // and 2 of 2 is over 20 %: the guard holds c1.
        let out = decide(&h, &default_policies(), t0 + 31 * 60);
        assert_eq!(out[1].verdict, Verdict::Deleting);
        assert!(matches!(out[0].verdict, Verdict::Guarded { .. }), "{out:?}");
        let alone = decide(&h[..1], &default_policies(), t0 + 31 * 60);
        assert_eq!(alone[0].verdict, Verdict::Repair);
        assert_eq!(alone[0].finding.condition, "KernelReady");
    }
    /// Reports `checks` for every instance asked about, or fails; counts its calls.
    struct Checks {
        checks: Vec<StatusCheck>,
        fail: bool,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl CloudProvider for Checks {
        fn name(&self) -> &'static str {
            "checks"
        }
        fn create<'a>(
            &'a self,
            _: &'a NodeClaim,
        ) -> futures::future::BoxFuture<'a, Result<crate::cloud::Instance, crate::cloud::CloudError>>
        {
            Box::pin(async { Err(crate::cloud::CloudError::Other("no".into())) })
        }
        fn delete<'a>(
            &'a self,
            _: &'a NodeClaim,
        ) -> futures::future::BoxFuture<'a, Result<(), crate::cloud::CloudError>> {
            Box::pin(async { Ok(()) })
        }
        fn get<'a>(
            &'a self,
            _: &'a str,
        ) -> futures::future::BoxFuture<
            'a,
            Result<Option<crate::cloud::Instance>, crate::cloud::CloudError>,
        > {
            Box::pin(async { Ok(None) })
        }
        fn list(
            &self,
        ) -> futures::future::BoxFuture<
            '_,
            Result<Vec<crate::cloud::Instance>, crate::cloud::CloudError>,
        > {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn instance_types(&self) -> Vec<Arc<adze_scheduling::InstanceType>> {
            Vec::new()
        }
        fn is_drifted<'a>(
            &'a self,
            _: &'a NodeClaim,
        ) -> futures::future::BoxFuture<'a, Result<bool, crate::cloud::CloudError>> {
            Box::pin(async { Ok(false) })
        }
        fn instance_health<'a>(
            &'a self,
            ids: &'a [String],
        ) -> futures::future::BoxFuture<
            'a,
            Result<BTreeMap<String, Vec<StatusCheck>>, crate::cloud::CloudError>,
        > {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if self.fail {
                    return Err(crate::cloud::CloudError::Other(
                        "DescribeInstanceStatus: UnauthorizedOperation".into(),
                    ));
                }
                Ok(ids
                    .iter()
                    .map(|id| (id.clone(), self.checks.clone()))
                    .collect())
            })
        }
    }

    fn with_instance(name: &str) -> NodeHealth {
        let mut h = NodeHealth::new(name, &format!("{name}-claim"), "web");
        h.provider_id = Some(format!("aws:///us-east-1a/i-{name}"));
        h
    }

    #[tokio::test]
    async fn status_checks_are_read_once_a_minute_and_an_unreadable_cloud_is_no_signal() {
        use adze_scheduling::disruption::repair::{CheckKind, CheckStatus};
        let failing = StatusCheck {
            kind: CheckKind::System,
            name: "reachability".into(),
            status: CheckStatus::Failed,
            impaired_since: None,
        };
        let cloud = Checks {
            checks: vec![failing],
            fail: false,
            calls: Default::default(),
        };
        let (t0, at) = (1_000_000, Instant::now());
        let mut reader = StatusChecks::default();
        let mut health = vec![with_instance("a"), NodeHealth::new("b", "b-claim", "web")];
        reader.attach(&cloud, &mut health, t0, at).await;
        // No impairedSince from the cloud: counted from when it was first seen failing.
        assert_eq!(health[0].status_checks[0].impaired_since, Some(t0));
        assert!(
            health[1].status_checks.is_empty() && !health[1].checks_read,
            "no providerID, nothing asked"
        );
        assert!(health[0].checks_read);
        let out = decide(&health, &default_policies(), t0 + 119);
        assert_eq!(out[0].verdict, Verdict::Tolerated);
        // Within the interval the last reading is used; after it the cloud is asked again,
        // and the first-seen time holds.
        reader
            .attach(&cloud, &mut health, t0 + 30, at + Duration::from_secs(30))
            .await;
        assert_eq!(cloud.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        reader
            .attach(&cloud, &mut health, t0 + 120, at + STATUS_CHECK_INTERVAL)
            .await;
        assert_eq!(cloud.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(health[0].status_checks[0].impaired_since, Some(t0));
        let out = decide(&health, &default_policies(), t0 + 120);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert!(
            out[0]
                .message()
                .contains("EC2 status check system status reachability has been failing for 2m"),
            "{}",
            out[0].message()
        );

        // A cloud that cannot be read: nothing known, not impaired.
        let broken = Checks {
            checks: Vec::new(),
            fail: true,
            calls: Default::default(),
        };
        let mut reader = StatusChecks::default();
        let mut health = vec![with_instance("a")];
        reader.attach(&broken, &mut health, t0, at).await;
        assert!(health[0].status_checks.is_empty());
        assert!(
            !health[0].checks_read,
            "a failed reading is not news of health"
        );
        assert_eq!(health[0].publish_status_condition(t0), None);
        assert!(decide(&health, &default_policies(), t0 + 3600).is_empty());
    }

    #[tokio::test]
    async fn the_simulated_cloud_plays_an_impaired_instance_through_to_a_repair() {
        use crate::cloud::simulated::Simulated;
        let dir = std::env::temp_dir().join(format!(
            "adze-repair-status-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        // Instance-directory mode: no apiserver is asked for anything.
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap();
        let cloud = Simulated::new(
            client,
            adze_scheduling::catalog::embedded().to_vec(),
            Duration::ZERO,
        )
        .with_instance_dir(dir.clone());
        let mut objects = Objects::default();
        for name in ["c1", "c2", "c3", "c4", "c5"] {
            let mut c: NodeClaim = serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": {
                    labels::NODEPOOL: "web",
                    labels::INSTANCE_TYPE: "m5.large",
                    labels::ZONE: "us-east-1a",
                    labels::CAPACITY_TYPE: "on-demand",
                }},
                "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
            }))
            .unwrap();
            let instance = cloud.create(&c).await.unwrap();
            c.status = Some(
                serde_json::from_value(
                    json!({"nodeName": name, "providerID": instance.provider_id}),
                )
                .unwrap(),
            );
            objects.claims.push(Arc::new(c));
            objects
                .nodes
                .push(node(name, "True", "2026-01-01T00:00:00Z"));
        }
        let t0 = 1_767_225_600; // 2026-01-01T00:00:00Z
        let mut reader = StatusChecks::default();
        let mut health = super::health(&objects);
        reader
            .attach(&cloud, &mut health, t0 + 600, Instant::now())
            .await;
        assert!(
            decide(&health, &default_policies(), t0 + 600).is_empty(),
            "every simulated instance passes its checks until told otherwise"
        );
        // Asked and reported nothing failing: each Node gets EC2StatusImpaired False.
        let published: Vec<_> = health
            .iter_mut()
            .map(|h| h.publish_status_condition(t0 + 600).map(|c| c.status))
            .collect();
        assert_eq!(published, vec![Some("False".to_string()); 5]);

        // c3's host fails its system check from t0.
        let path = dir.join("c3.json");
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        record["statusChecks"] = json!([
            {"kind": "instance", "status": "passed"},
            {"kind": "system", "status": "failed", "impairedSince": "2026-01-01T00:00:00Z"},
        ]);
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        let mut reader = StatusChecks::default();
        let mut health = super::health(&objects);
        reader
            .attach(&cloud, &mut health, t0 + 600, Instant::now())
            .await;
        let out = decide(&health, &default_policies(), t0 + 600);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].nodeclaim, "c3");
        assert_eq!(out[0].verdict, Verdict::Repair);
        let c3 = health[2].publish_status_condition(t0 + 600).unwrap();
        assert_eq!((c3.status.as_str(), c3.since), ("True", t0));
        assert_eq!(
            condition_patch(&c3),
            json!({"status": {"conditions": [{
                "type": "EC2StatusImpaired", "status": "True", "reason": "ReachabilityFailed",
                "message": "EC2 reports system status reachability failing",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]}})
        );
        assert!(
            out[0].message().starts_with(
                "unhealthy: EC2 status check system status reachability has been failing for 10m (tolerated for 2m)"
            ),
            "{}",
            out[0].message()
        );

        // A record the cloud cannot read fails the reading: no signal, not a repair.
        record["statusChecks"] = json!([{"kind": "disk", "status": "failed"}]);
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        let err = cloud
            .instance_health(&[health[2].provider_id.clone().unwrap()])
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("statusChecks[].kind: \"disk\""),
            "{err}"
        );
        // Nodes that hold no EC2StatusImpaired: nothing to go by.
        let mut reader = StatusChecks::default();
        let mut fresh = super::health(&objects);
        reader
            .attach(&cloud, &mut fresh, t0 + 600, Instant::now())
            .await;
        assert!(fresh.iter().all(|h| !h.checks_read));
        assert!(decide(&fresh, &default_policies(), t0 + 600).is_empty());
        // c3's Node holding the True written before: left as it is (Karpenter: a failed poll
        // changes no condition), and it still counts as any condition the Node holds.
        reader
            .attach(&cloud, &mut health, t0 + 600, Instant::now())
            .await;
        assert_eq!(health[2].publish_status_condition(t0 + 600), None);
        let out = decide(&health, &default_policies(), t0 + 600);
        assert_eq!(out[0].nodeclaim, "c3");
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert!(
            out[0]
                .message()
                .contains("node condition EC2StatusImpaired has been True for 10m"),
            "{}",
            out[0].message()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn the_simulated_cloud_accepts_a_reboot_that_mends_nothing_so_replacement_follows() {
        use crate::cloud::simulated::Simulated;
        use adze_scheduling::disruption::repair::{REBOOT_WAIT, RebootStep, reboot_step};
        let dir = std::env::temp_dir().join(format!(
            "adze-repair-reboot-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap();
        let cloud = Simulated::new(
            client,
            adze_scheduling::catalog::embedded().to_vec(),
            Duration::ZERO,
        )
        .with_instance_dir(dir.clone());
        let mut c: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "r1", "labels": {
                labels::NODEPOOL: "web",
                labels::INSTANCE_TYPE: "m5.large",
                labels::ZONE: "us-east-1a",
                labels::CAPACITY_TYPE: "on-demand",
            }},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        }))
        .unwrap();
        let instance = cloud.create(&c).await.unwrap();
        let pid = instance.provider_id.clone();
        // Its host fails the system check.
        let path = dir.join("r1.json");
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        record["statusChecks"] = json!([
            {"kind": "system", "status": "failed", "impairedSince": "2026-01-01T00:00:00Z"},
        ]);
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        let t0 = 1_767_225_600; // 2026-01-01T00:00:00Z

        // The reboot is accepted and counted; it is recorded on the claim as the controller
        // writes it, and read back from there.
        cloud.reboot(&pid).await.unwrap();
        assert_eq!(cloud.reboots(&pid), 1);
        let at = t0 + 180;
        let patch = reboot_patch(at, None);
        assert_eq!(
            patch,
            json!({"metadata": {"annotations": {
                "adze.sh/repair-rebooted-at": "2026-01-01T00:03:00Z",
                "adze.sh/repair-reboot-failed": null,
            }}})
        );
        c.metadata.annotations = Some(
            [(
                REBOOTED_AT_ANNOTATION.to_string(),
                "2026-01-01T00:03:00Z".to_string(),
            )]
            .into(),
        );
        c.status =
            Some(serde_json::from_value(json!({"nodeName": "r1", "providerID": pid})).unwrap());
        let objects = Objects {
            claims: vec![Arc::new(c.clone())],
            nodes: vec![node("r1", "True", "2026-01-01T00:00:00Z")],
            ..Objects::default()
        };
        let mut health = super::health(&objects);
        assert_eq!(health[0].reboot, Some(RebootRecord { at, failed: false }));

        // Still impaired after the reboot (it mended nothing): waiting within the 20
        // minutes, then replaced.
        let wait = REBOOT_WAIT.as_secs() as i64;
        let mut reader = StatusChecks::default();
        reader
            .attach(&cloud, &mut health, at + wait, Instant::now())
            .await;
        let out = decide(&health, &default_policies(), at + wait - 1);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert!(matches!(
            reboot_step(&out[0].finding, health[0].reboot, at + wait - 1),
            RebootStep::Waiting { .. }
        ));
        let out = decide(&health, &default_policies(), at + wait);
        assert_eq!(
            reboot_step(&out[0].finding, health[0].reboot, at + wait),
            RebootStep::Replace
        );

        // An instance that does not exist cannot be rebooted (the node is then replaced).
        let err = cloud
            .reboot("adze-sim:///us-east-1a/i-0000")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        // A record nobody can read counts as a refused reboot, not as none.
        c.metadata.annotations =
            Some([(REBOOTED_AT_ANNOTATION.to_string(), "yesterday".to_string())].into());
        assert_eq!(
            reboot_record(&c),
            Some(RebootRecord {
                at: 0,
                failed: true
            })
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reboot_for_repair_is_refused_without_budgeted_node_repair_naming_the_flags() {
        assert_eq!(reboot_first(false, false, false), Ok(false));
        assert_eq!(reboot_first(true, true, false), Ok(true));
        let e = reboot_first(true, false, false).unwrap_err();
        assert!(
            e.contains("--reboot-for-repair (ADZE_REBOOT_FOR_REPAIR)")
                && e.contains("--node-repair"),
            "{e}"
        );
        let e = reboot_first(true, true, true).unwrap_err();
        assert!(e.contains("--legacy-node-repair"), "{e}");
    }
}
