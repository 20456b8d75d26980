//! The provisioner's metrics (names prefixed `adze_`), in one process-wide `prometheus-client`
//! registry that `/metrics` ([`server`]) renders. Controllers record through
//! [`provisioner()`] and need no plumbing; every family is listed from the start, and series
//! whose label values are known up front (cloud methods, disruption reasons) exist at 0.

pub mod server;
pub mod startup;

use adze_cloud::sync::MutexExt;
use std::collections::HashSet;
use std::hash::Hash;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use adze_metrics::add;
use adze_scheduling::Resources;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A gauge with a fractional value (prices, cores).
pub type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodePoolLabel {
    pub nodepool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: String,
}

/// `adze_repair_reboots_total`'s labels: the node's pool and [`REBOOT_RESULTS`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RebootLabels {
    pub nodepool: String,
    pub result: String,
}

/// What became of a reboot for repair: `accepted` by the cloud, or `refused` (the node is
/// then replaced at once).
pub const REBOOT_RESULTS: [&str; 2] = ["accepted", "refused"];

/// `adze_cloudprovider_errors_total`'s labels (`op` as before the duration histogram existed).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudErrorLabels {
    pub op: String,
    pub error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudCallLabels {
    pub method: String,
    pub provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OfferingLabels {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolResourceLabels {
    pub nodepool: String,
    pub resource_type: String,
}

/// `adze_disruption_decisions_total`'s labels. `decision` and `reason` come first, as before
/// the other two were added, so a selector on them alone still matches.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    pub decision: String,
    pub reason: String,
    /// The NodePool's `consolidationPolicy` for an Empty or Underutilized decision
    /// ([`consolidation_policy`]); `none` for the other methods.
    pub consolidation_policy: String,
    /// How the node's pods are drained ([`termination_mode`]).
    pub termination_mode: String,
}

/// `adze_pods_disrupted_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodsDisruptedLabels {
    pub reason: String,
    pub nodepool: String,
    pub consolidation_policy: String,
    pub termination_mode: String,
}

/// `adze_disruption_commands_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommandLabels {
    /// [`COMMANDED`] or [`APPROVED`].
    pub stage: String,
    pub decision: String,
    pub reason: String,
}

/// A disruption method proposed the command.
pub const COMMANDED: &str = "commanded";
/// The command still held after the validation period (pending pods, budgets, the cluster
/// as the commands before it leave it) and was started.
pub const APPROVED: &str = "approved";

/// `consolidation_policy` of a disruption that is not consolidation (drift, expiry, repair).
pub const NO_POLICY: &str = "none";

/// The `consolidation_policy` label of a disruption for `reason` (a method's name, as
/// [`adze_scheduling::disruption::Reason::as_str`] spells it) of a node whose NodePool has
/// `policy`: the policy as the NodePool spells it for emptiness and consolidation, `none` for
/// the other methods (their nodes go whatever the policy says).
pub fn consolidation_policy(
    reason: &str,
    policy: Option<adze_scheduling::disruption::ConsolidationPolicy>,
) -> &'static str {
    use adze_scheduling::disruption::{ConsolidationPolicy as P, Reason as R};
    let consolidating = reason == R::Empty.as_str() || reason == R::Underutilized.as_str();
    match policy {
        Some(p) if consolidating => match p {
            P::WhenEmpty => "WhenEmpty",
            P::WhenEmptyOrUnderutilized => "WhenEmptyOrUnderutilized",
            P::Balanced => "Balanced",
        },
        _ => NO_POLICY,
    }
}

/// The termination modes, as `termination_mode` spells them.
pub const GRACEFUL: &str = "graceful";
pub const EVENTUAL: &str = "eventual";
pub const FORCEFUL: &str = "forceful";

/// The `termination_mode` label of a NodeClaim's disruption: `graceful` when the claim has no
/// `terminationGracePeriod` (the drain waits for every PodDisruptionBudget), `eventual` when it
/// has one (budgets are honoured until it runs out), `forceful` when it is zero or the node is
/// repaired (drained without waiting).
pub fn termination_mode(grace: Option<std::time::Duration>, repair: bool) -> &'static str {
    match grace {
        _ if repair => FORCEFUL,
        None => GRACEFUL,
        Some(d) if d.is_zero() => FORCEFUL,
        Some(_) => EVENTUAL,
    }
}

pub fn nodepool(name: &str) -> NodePoolLabel {
    NodePoolLabel {
        nodepool: name.into(),
    }
}

pub fn reason(reason: &str) -> ReasonLabel {
    ReasonLabel {
        reason: reason.into(),
    }
}

/// A gauge family whose series are replaced together: a series whose object is gone (an
/// offering no longer sold, a deleted NodePool) disappears instead of keeping its last value.
#[derive(Clone, Debug)]
pub struct GaugeSet<L> {
    family: Family<L, FloatGauge>,
    current: Arc<Mutex<HashSet<L>>>,
}

impl<L: Clone + Hash + Eq + EncodeLabelSet + std::fmt::Debug + Send + Sync + 'static> GaugeSet<L> {
    /// A new set, registered as `name`.
    fn add(r: &mut Registry, name: &str, help: &str) -> Self {
        let set = GaugeSet {
            family: Family::default(),
            current: Arc::default(),
        };
        add(r, name, help, set.family.clone());
        set
    }

    pub fn replace(&self, values: impl IntoIterator<Item = (L, f64)>) {
        // The caller's iterator runs before the lock is taken: a panic in it leaves the set
        // as it was, never half replaced.
        let values: Vec<(L, f64)> = values.into_iter().collect();
        let mut current = self.current.lock_or_recover();
        let mut fresh = HashSet::new();
        for (labels, v) in values {
            self.family.get_or_create(&labels).set(v);
            fresh.insert(labels);
        }
        for gone in current.difference(&fresh) {
            self.family.remove(gone);
        }
        *current = fresh;
    }

    pub fn get(&self, labels: &L) -> Option<f64> {
        self.family.get(labels).map(|g| g.get())
    }
}

/// Cloud provider calls take from milliseconds (a cached read) to a minute (a fleet launch).
const CLOUD_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Pod creation to Ready: seconds on an existing node, minutes when a node is launched.
pub const STARTUP_BUCKETS: [f64; 14] = [
    1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 1200.0,
];

/// The provisioner's metrics (names prefixed `adze_`).
#[derive(Debug)]
pub struct Provisioner {
    /// Pending pods that no node or in-flight NodeClaim holds, as of the last pass.
    pub pods_pending: Gauge,
    /// One provisioning pass: snapshot + scheduling core, seconds.
    pub scheduling_duration: Histogram,
    pub nodeclaims_created: Family<NodePoolLabel, Counter>,
    pub nodeclaims_launched: Family<NodePoolLabel, Counter>,
    pub nodeclaims_registered: Family<NodePoolLabel, Counter>,
    pub nodeclaims_initialized: Family<NodePoolLabel, Counter>,
    /// Deleted by Adze, by reason (registration_timeout, insufficient_capacity, instance_gone, ...).
    pub nodeclaims_terminated: Family<ReasonLabel, Counter>,
    /// Failed cloud calls by operation and error kind; recorded by [`crate::cloud::metered`].
    pub cloud_errors: Family<CloudErrorLabels, Counter>,
    /// Every cloud call's duration by method and provider; recorded by [`crate::cloud::metered`].
    pub cloud_duration: Family<CloudCallLabels, Histogram>,
    /// 1 while this replica holds the leader lease.
    pub leader: Gauge,
    /// USD per hour of each offering the cloud provider reports (type × zone × capacity type).
    pub offering_price: GaugeSet<OfferingLabels>,
    /// Interruption queue messages by what became of them (malformed, acted, ...).
    pub interruption_messages: Family<ResultLabel, Counter>,
    /// What each NodePool's launched NodeClaims hold, per resource (cores, bytes, nodes, ...).
    pub nodepool_usage: GaugeSet<PoolResourceLabels>,
    /// Each NodePool's `spec.limits`, per resource, in the same units.
    pub nodepool_limit: GaugeSet<PoolResourceLabels>,
    /// Disruptions carried out (not dry runs), by action, method, consolidation policy and
    /// termination mode.
    pub disruption_decisions: Family<DecisionLabels, Counter>,
    /// Commands the methods proposed and those approved after validation, so the ones
    /// dropped in between show.
    pub disruption_commands: Family<CommandLabels, Counter>,
    /// Non-DaemonSet pods on nodes a disruption deleted, by method and NodePool.
    pub pods_disrupted: Family<PodsDisruptedLabels, Counter>,
    /// Nodes a disruption method would consider but for a blocker a user set or a zonal
    /// shift, by blocker,
    /// as of the last disruption pass.
    pub disruption_blocked: Family<ReasonLabel, Gauge>,
    /// Creation to Ready of pods created while this replica leads.
    pub pod_startup: Histogram,
    /// `--pod-deletion-cost`: annotation writes by outcome ([`POD_DELETION_COST_RESULTS`]).
    pub pod_deletion_cost_writes: Family<ResultLabel, Counter>,
    /// `--pod-deletion-cost`: nodes whose pods had a change left for a later pass (over the
    /// per-pass node cap), as of the last pass that ran.
    pub pod_deletion_cost_deferred: Gauge,
    /// `--reboot-for-repair`: reboots of unhealthy nodes' instances, by pool and result.
    pub repair_reboots: Family<RebootLabels, Counter>,
}

/// The outcomes of a pod deletion cost write: `updated` (set or removed), `skipped_unchanged`
/// (already right), `skipped_notfound` (the pod went away), `skipped_conflict` (the pod
/// changed since it was read: the next pass decides again), `error`.
pub const POD_DELETION_COST_RESULTS: [&str; 5] = [
    "updated",
    "skipped_unchanged",
    "skipped_notfound",
    "skipped_conflict",
    "error",
];

/// `adze_disruption_blocked_nodes`' reason for drifted nodes whose NodePool is in drift
/// backoff after failed drift replacements.
pub const DRIFT_BACKOFF: &str = "DriftBackoff";

/// The blockers announced on nodes (`Blocker::reason` of the ones `announced`: those a user
/// sets, and a zonal shift), and [`DRIFT_BACKOFF`], listed at 0.
pub const ANNOUNCED_BLOCKERS: [&str; 5] = [
    "DoNotDisruptNode",
    "DoNotDisruptPod",
    "PdbForbids",
    "ZonalShift",
    DRIFT_BACKOFF,
];

impl Provisioner {
    fn new(r: &mut Registry) -> Self {
        let claims = |r: &mut Registry, what: &str| {
            add(
                r,
                &format!("adze_nodeclaims_{what}_total"),
                &format!("NodeClaims {what}, by NodePool."),
                Family::default(),
            )
        };
        let m = Provisioner {
            pods_pending: add(
                r,
                "adze_pods_pending",
                "Pending pods no node or in-flight NodeClaim holds, at the last provisioning pass.",
                Gauge::default(),
            ),
            scheduling_duration: add(
                r,
                "adze_scheduling_duration_seconds",
                "Time to snapshot the cluster and run the scheduling core for one batch.",
                Histogram::new([
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ]),
            ),
            nodeclaims_created: claims(r, "created"),
            nodeclaims_launched: claims(r, "launched"),
            nodeclaims_registered: claims(r, "registered"),
            nodeclaims_initialized: claims(r, "initialized"),
            nodeclaims_terminated: add(
                r,
                "adze_nodeclaims_terminated_total",
                "NodeClaims Adze deleted, by reason.",
                Family::default(),
            ),
            cloud_errors: add(
                r,
                "adze_cloudprovider_errors_total",
                "Failed cloud provider calls, by operation and error.",
                Family::default(),
            ),
            leader: add(
                r,
                "adze_leader",
                "1 while this replica holds the leader lease, else 0.",
                Gauge::default(),
            ),
            offering_price: GaugeSet::add(
                r,
                "adze_cloudprovider_offering_price_dollars",
                "Hourly price of each offering (instance type, zone, capacity type) as the cloud provider prices it for scheduling.",
            ),
            interruption_messages: add(
                r,
                "adze_interruption_messages_total",
                "Interruption queue (SQS) messages by result: acted, no_action, malformed (logged and deleted), foreign (another account or region; logged and deleted), failed (left for a retry).",
                Family::default(),
            ),
            cloud_duration: add(
                r,
                "adze_cloudprovider_duration_seconds",
                "Duration of cloud provider calls, by method and provider.",
                Family::new_with_constructor(|| Histogram::new(CLOUD_BUCKETS)),
            ),
            nodepool_usage: GaugeSet::add(
                r,
                "adze_nodepool_usage",
                "Resources of each NodePool's launched NodeClaims, by resource type (cpu in cores, memory and storage in bytes, nodes, pods, extended resources).",
            ),
            nodepool_limit: GaugeSet::add(
                r,
                "adze_nodepool_limit",
                "Each NodePool's spec.limits, by resource type, in the units of its usage gauge.",
            ),
            disruption_decisions: add(
                r,
                "adze_disruption_decisions_total",
                "Disruptions carried out, by decision (delete, replace), reason (Drifted, Expired, Empty, Underutilized, Unhealthy: node repair), consolidation_policy (the NodePool's, for Empty and Underutilized; none for the others; mixed when the nodes' pools differ) and termination_mode (graceful: no terminationGracePeriod; eventual: one; forceful: zero, or node repair).",
                Family::default(),
            ),
            disruption_commands: add(
                r,
                "adze_disruption_commands_total",
                "Disruption commands by stage: commanded (a method proposed it) and approved (it still held after the validation period and was started), by decision and reason; commanded minus approved were dropped at validation.",
                Family::default(),
            ),
            pods_disrupted: add(
                r,
                "adze_pods_disrupted_total",
                "Pods (DaemonSet pods aside) on nodes a disruption deleted, so drained elsewhere, by reason, nodepool, consolidation_policy and termination_mode (as on adze_disruption_decisions_total).",
                Family::default(),
            ),
            disruption_blocked: add(
                r,
                "adze_disruption_blocked_nodes",
                "Nodes a disruption method would consider but for a blocker a user set (do-not-disrupt, a PodDisruptionBudget), an ARC zonal shift, or their NodePool's drift backoff after failed drift replacements (DriftBackoff: drifted nodes), by blocker, at the last disruption pass.",
                Family::default(),
            ),
            pod_startup: add(
                r,
                "adze_pods_startup_duration_seconds",
                "Time from a pod's creation to its Ready condition, for pods created while this replica leads.",
                Histogram::new(STARTUP_BUCKETS),
            ),
            pod_deletion_cost_writes: add(
                r,
                "adze_pod_deletion_cost_writes_total",
                "--pod-deletion-cost: writes of controller.kubernetes.io/pod-deletion-cost on pods, by result (updated, skipped_unchanged, skipped_notfound, skipped_conflict: retried at the next pass, error).",
                Family::default(),
            ),
            pod_deletion_cost_deferred: add(
                r,
                "adze_pod_deletion_cost_deferred_nodes",
                "--pod-deletion-cost: nodes whose pods' pod-deletion-cost change was left for a later pass (at most 50 nodes are written a pass besides those being disrupted), at the last pass that ran.",
                Gauge::default(),
            ),
            repair_reboots: add(
                r,
                "adze_repair_reboots_total",
                "--reboot-for-repair: reboots of an unhealthy node's instance as node repair's first action, by nodepool and result (accepted by the cloud; refused: the node is replaced at once).",
                Family::default(),
            ),
        };
        adze_metrics::build_info(r);
        // The series every cluster can have, at 0: each method with the policies that let
        // it act, nodes drained without a grace period limit; repair, forcefully.
        for decision in ["delete", "replace"] {
            for reason in adze_scheduling::disruption::Reason::ALL {
                for policy in policies_for(reason.as_str()) {
                    for stage in [COMMANDED, APPROVED] {
                        let _ = m.disruption_commands.get_or_create(&CommandLabels {
                            stage: stage.into(),
                            decision: decision.into(),
                            reason: reason.as_str().into(),
                        });
                    }
                    let _ = m.disruption_decisions.get_or_create(&DecisionLabels {
                        decision: decision.into(),
                        reason: reason.as_str().into(),
                        consolidation_policy: policy.into(),
                        termination_mode: GRACEFUL.into(),
                    });
                }
            }
        }
        let _ = m.disruption_decisions.get_or_create(&DecisionLabels {
            decision: "delete".into(),
            reason: adze_scheduling::disruption::repair::REASON.into(),
            consolidation_policy: NO_POLICY.into(),
            termination_mode: FORCEFUL.into(),
        });
        for b in ANNOUNCED_BLOCKERS {
            let _ = m.disruption_blocked.get_or_create(&self::reason(b));
        }
        for result in POD_DELETION_COST_RESULTS {
            let _ = m.pod_deletion_cost_writes.get_or_create(&ResultLabel {
                result: result.into(),
            });
        }
        m
    }
}

/// The `consolidation_policy` values a method's disruptions can have.
fn policies_for(reason: &str) -> Vec<&'static str> {
    use adze_scheduling::disruption::ConsolidationPolicy as P;
    let mut out: Vec<&'static str> = [P::WhenEmpty, P::WhenEmptyOrUnderutilized, P::Balanced]
        .into_iter()
        .map(|p| consolidation_policy(reason, Some(p)))
        .filter(|p| *p != NO_POLICY)
        .collect();
    // WhenEmpty never consolidates an underutilized node.
    if reason == adze_scheduling::disruption::Reason::Underutilized.as_str() {
        out.retain(|p| *p != "WhenEmpty");
    }
    if out.is_empty() {
        out.push(NO_POLICY);
    }
    out
}

fn global() -> &'static (Registry, Provisioner) {
    static METRICS: OnceLock<(Registry, Provisioner)> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut r = Registry::default();
        let m = Provisioner::new(&mut r);
        (r, m)
    })
}

/// The process-wide metrics.
pub fn provisioner() -> &'static Provisioner {
    &global().1
}

/// The OpenMetrics text `/metrics` serves.
pub fn render() -> String {
    adze_metrics::render(&global().0)
}

/// Brings `counter` up to the absolute counts a loop keeps elsewhere (the AWS crate counts with
/// atomics and knows nothing of this registry).
pub fn catch_up(counter: &Family<ResultLabel, Counter>, totals: &[(&str, u64)]) {
    for (result, total) in totals {
        let c = counter.get_or_create(&ResultLabel {
            result: result.to_string(),
        });
        let behind = total.saturating_sub(c.get());
        if behind > 0 {
            c.inc_by(behind);
        }
    }
}

/// Publishes the price of every offering of `types` (the cloud provider's current catalog).
pub fn record_offering_prices(
    gauge: &GaugeSet<OfferingLabels>,
    types: &[Arc<adze_scheduling::InstanceType>],
) {
    gauge.replace(types.iter().flat_map(|t| {
        t.offerings.iter().map(|o| {
            (
                OfferingLabels {
                    instance_type: t.name.clone(),
                    zone: o.zone.clone(),
                    capacity_type: o.capacity_type.clone(),
                },
                o.price,
            )
        })
    }));
}

/// A resource amount in the unit people read it in: cores for cpu (the model counts
/// millicores), the amount itself for everything else (bytes, pods, nodes, devices).
fn base_units(resource: &str, amount: i64) -> f64 {
    if resource == adze_scheduling::resources::CPU {
        amount as f64 / 1000.0
    } else {
        amount as f64
    }
}

/// One NodePool's usage and limits, as [`record_nodepools`] takes them.
pub struct PoolFigures<'a> {
    pub name: &'a str,
    /// What its launched claims hold.
    pub usage: &'a Resources,
    pub nodes: i64,
    /// Its `spec.limits`, parsed; `None` when it sets none.
    pub limits: Option<&'a Resources>,
}

/// Publishes `adze_nodepool_usage` and `adze_nodepool_limit` for every pool there is. Usage
/// has cpu, memory and nodes always, plus any resource the claims hold or a limit names (at
/// 0 when none is used), so usage ÷ limit exists wherever a limit does.
pub fn record_nodepools(pools: &[PoolFigures]) {
    let m = provisioner();
    let labels = |pool: &str, resource: &str| PoolResourceLabels {
        nodepool: pool.into(),
        resource_type: resource.into(),
    };
    let mut usage = Vec::new();
    let mut limits = Vec::new();
    for p in pools {
        let mut names: Vec<&str> = vec!["cpu", "memory"];
        names.extend(p.usage.names());
        if let Some(l) = p.limits {
            names.extend(l.names());
            for n in l.names() {
                limits.push((labels(p.name, n), base_units(n, l.get(n))));
            }
        }
        names.sort_unstable();
        names.dedup();
        names.retain(|n| *n != "nodes");
        for n in names {
            usage.push((labels(p.name, n), base_units(n, p.usage.get(n))));
        }
        usage.push((labels(p.name, "nodes"), p.nodes as f64));
    }
    m.nodepool_usage.replace(usage);
    m.nodepool_limit.replace(limits);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_replacing_gauges_does_not_break_later_replacements() {
        let mut r = Registry::default();
        let set: GaugeSet<NodePoolLabel> = GaugeSet::add(&mut r, "poison_test", "test");
        set.replace([(nodepool("a"), 1.0)]);
        // A bug in the caller's iterator: nothing published, nothing poisoned.
        let holder = set.clone();
        let panicked = std::thread::spawn(move || {
            holder.replace((0..2).map(|i| {
                assert!(i == 0, "a bug in the caller's iterator");
                (nodepool("b"), 2.0)
            }))
        })
        .join();
        assert!(panicked.is_err());
        assert!(!set.current.is_poisoned());
        assert_eq!(set.get(&nodepool("b")), None);
        // A panic while holding the lock poisons it; the next call still works.
        let holder = set.clone();
        let panicked = std::thread::spawn(move || {
            let _held = holder.current.lock();
            panic!("a bug while holding the lock");
        })
        .join();
        assert!(panicked.is_err());
        assert!(set.current.is_poisoned());
        set.replace([(nodepool("c"), 3.0)]);
        assert_eq!(set.get(&nodepool("c")), Some(3.0));
        assert_eq!(set.get(&nodepool("a")), None, "the old series is dropped");
        assert!(!set.current.is_poisoned());
    }

    #[test]
    fn catch_up_adds_only_what_is_new_and_never_goes_down() {
        let c: Family<ResultLabel, Counter> = Family::default();
        let get = |r: &str| {
            c.get(&ResultLabel { result: r.into() })
                .map_or(0, |c| c.get())
        };
        catch_up(&c, &[("malformed", 2), ("acted", 0)]);
        catch_up(&c, &[("malformed", 3), ("acted", 1)]);
        assert_eq!(get("malformed"), 3);
        assert_eq!(get("acted"), 1);
        catch_up(&c, &[("malformed", 1)]);
        assert_eq!(get("malformed"), 3, "a counter never goes down");
    }

    #[test]
    fn offering_prices_are_published_per_type_zone_and_capacity_type_and_replaced() {
        let mut r = Registry::default();
        let g = GaugeSet::add(&mut r, "price", "Price.");
        let catalog = adze_scheduling::catalog::embedded();
        let m5: Vec<_> = catalog
            .iter()
            .filter(|t| t.name == "m5.large")
            .cloned()
            .collect();
        assert_eq!(m5.len(), 1);
        record_offering_prices(&g, &m5);
        let od = m5[0]
            .offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .unwrap();
        let key = OfferingLabels {
            instance_type: "m5.large".into(),
            zone: od.zone.clone(),
            capacity_type: "on-demand".into(),
        };
        assert_eq!(g.get(&key), Some(od.price));
        let text = adze_metrics::render(&r);
        let series = text.lines().filter(|l| l.starts_with("price{")).count();
        assert_eq!(series, m5[0].offerings.len(), "{text}");
        // The label order the e2e checks grep for.
        let line = format!(
            "price{{instance_type=\"m5.large\",zone=\"{}\",capacity_type=\"on-demand\"}} {}\n",
            od.zone, od.price
        );
        assert!(text.contains(&line), "{line} in {text}");
        record_offering_prices(&g, &[]);
        assert!(
            !adze_metrics::render(&r).contains("price{"),
            "stale prices are dropped"
        );
    }

    #[test]
    fn nodepool_usage_and_limits_are_published_in_cores_and_bytes_and_dropped_with_the_pool() {
        let usage = Resources::new(6_500, 24 << 30);
        let limits = Resources::from_quantities([("cpu", "100"), ("nvidia.com/gpu", "4")]).unwrap();
        record_nodepools(&[
            PoolFigures {
                name: "np-usage-web",
                usage: &usage,
                nodes: 2,
                limits: Some(&limits),
            },
            PoolFigures {
                name: "np-usage-batch",
                usage: &Resources::default(),
                nodes: 0,
                limits: None,
            },
        ]);
        let text = render();
        for line in [
            "adze_nodepool_usage{nodepool=\"np-usage-web\",resource_type=\"cpu\"} 6.5",
            "adze_nodepool_usage{nodepool=\"np-usage-web\",resource_type=\"memory\"} 25769803776.0",
            "adze_nodepool_usage{nodepool=\"np-usage-web\",resource_type=\"nodes\"} 2.0",
            "adze_nodepool_usage{nodepool=\"np-usage-web\",resource_type=\"nvidia.com/gpu\"} 0.0",
            "adze_nodepool_limit{nodepool=\"np-usage-web\",resource_type=\"cpu\"} 100.0",
            "adze_nodepool_limit{nodepool=\"np-usage-web\",resource_type=\"nvidia.com/gpu\"} 4.0",
            "adze_nodepool_usage{nodepool=\"np-usage-batch\",resource_type=\"nodes\"} 0.0",
        ] {
            assert!(text.contains(&format!("\n{line}\n")), "{line} in {text}");
        }
        assert!(!text.contains("adze_nodepool_limit{nodepool=\"np-usage-batch\""));
        record_nodepools(&[]);
        assert!(
            !render().contains("np-usage-"),
            "a deleted pool's series go"
        );
    }

    #[test]
    fn known_disruption_series_are_listed_at_zero() {
        let text = render();
        for line in [
            "adze_disruption_decisions_total{decision=\"delete\",reason=\"Empty\",consolidation_policy=\"WhenEmpty\",termination_mode=\"graceful\"}",
            "adze_disruption_decisions_total{decision=\"replace\",reason=\"Underutilized\",consolidation_policy=\"Balanced\",termination_mode=\"graceful\"}",
            "adze_disruption_decisions_total{decision=\"replace\",reason=\"Drifted\",consolidation_policy=\"none\",termination_mode=\"graceful\"}",
            "adze_disruption_decisions_total{decision=\"delete\",reason=\"Unhealthy\",consolidation_policy=\"none\",termination_mode=\"forceful\"}",
            "adze_disruption_commands_total{stage=\"commanded\",decision=\"delete\",reason=\"Empty\"}",
            "adze_disruption_commands_total{stage=\"approved\",decision=\"replace\",reason=\"Drifted\"}",
            "adze_disruption_blocked_nodes{reason=\"PdbForbids\"}",
        ] {
            assert!(text.contains(&format!("\n{line} ")), "{line} in {text}");
        }
        // WhenEmpty never consolidates an underutilized node; drift has no policy.
        for absent in [
            "reason=\"Underutilized\",consolidation_policy=\"WhenEmpty\"",
            "reason=\"Drifted\",consolidation_policy=\"WhenEmpty",
        ] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
    }

    #[test]
    fn the_policy_label_is_the_pools_for_consolidation_only_and_the_mode_follows_the_grace() {
        use adze_scheduling::disruption::ConsolidationPolicy as P;
        assert_eq!(
            consolidation_policy("Empty", Some(P::WhenEmpty)),
            "WhenEmpty"
        );
        assert_eq!(
            consolidation_policy("Underutilized", Some(P::Balanced)),
            "Balanced"
        );
        assert_eq!(consolidation_policy("Drifted", Some(P::Balanced)), "none");
        assert_eq!(
            consolidation_policy("Unhealthy", Some(P::WhenEmpty)),
            "none"
        );
        assert_eq!(consolidation_policy("Empty", None), "none");
        let s = std::time::Duration::from_secs;
        assert_eq!(termination_mode(None, false), "graceful");
        assert_eq!(termination_mode(Some(s(3600)), false), "eventual");
        assert_eq!(termination_mode(Some(s(0)), false), "forceful");
        assert_eq!(termination_mode(None, true), "forceful");
    }

    #[test]
    fn serves_exactly_the_families_of_the_inventory() {
        let served = adze_metrics::families(&render());
        let inventory = include_str!("../../../charts/ci/metrics/provisioner.prom");
        assert_eq!(served, adze_metrics::families(inventory));
        assert_eq!(
            served.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "adze_build_info",
                "adze_cloudprovider_duration_seconds",
                "adze_cloudprovider_errors_total",
                "adze_cloudprovider_offering_price_dollars",
                "adze_disruption_blocked_nodes",
                "adze_disruption_commands_total",
                "adze_disruption_decisions_total",
                "adze_interruption_messages_total",
                "adze_leader",
                "adze_nodeclaims_created_total",
                "adze_nodeclaims_initialized_total",
                "adze_nodeclaims_launched_total",
                "adze_nodeclaims_registered_total",
                "adze_nodeclaims_terminated_total",
                "adze_nodepool_limit",
                "adze_nodepool_usage",
                "adze_pod_deletion_cost_deferred_nodes",
                "adze_pod_deletion_cost_writes_total",
                "adze_pods_disrupted_total",
                "adze_pods_pending",
                "adze_pods_startup_duration_seconds",
                "adze_repair_reboots_total",
                "adze_scheduling_duration_seconds",
            ]
        );
    }
}
