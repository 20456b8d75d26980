//! The cluster as disruption sees it: watched objects, PodDisruptionBudgets, drift and pod
//! activity → the pure decision's [`Input`]. Pure: no clocks (the caller passes `now`), no
//! I/O, so the mapping is unit-tested.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use adze_api::nodepool::DisruptionReason;
use adze_api::{NodeClaim, NodePool, conditions};
use adze_scheduling::disruption::{
    self as pure, Budget, ConsolidationPolicy, Input, NodeFacts, PodFacts, PoolPolicy, Reason,
    UnixSeconds,
};
use adze_scheduling::{InstanceType, labels};
use k8s_openapi::api::core::v1::{Node, Pod};

use super::{drift, pdb};
use crate::provisioning::snapshot::{self, Objects, claim_conditions, is_initialized};

/// Nodes whose pods are being evicted or that are going away carry one of these.
const GOING_AWAY_TAINTS: [&str; 2] = [labels::TAINT_DISRUPTED, labels::TAINT_INTERRUPTED];

fn reason(r: DisruptionReason) -> Reason {
    match r {
        DisruptionReason::Underutilized => Reason::Underutilized,
        DisruptionReason::Empty => Reason::Empty,
        DisruptionReason::Drifted => Reason::Drifted,
        DisruptionReason::Expired => Reason::Expired,
        DisruptionReason::Unhealthy => Reason::Unhealthy,
    }
}

/// A NodePool's disruption settings; errors name the field.
pub fn policy(pool: &NodePool) -> Result<PoolPolicy, String> {
    let name = pool.metadata.name.clone().unwrap_or_default();
    let d = &pool.spec.disruption;
    let budgets = d
        .budgets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            Budget::parse(
                &b.nodes,
                b.schedule.as_deref(),
                b.duration.as_ref().map(|d| d.as_std()),
                b.reasons.iter().copied().map(reason).collect(),
            )
            .map_err(|e| format!("NodePool {name}: spec.disruption.budgets[{i}]: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let min_savings = d.min_savings_per_disruption_cost().map_err(|e| {
        format!("NodePool {name}: spec.disruption.minSavingsPerDisruptionCost: {e}")
    })?;
    Ok(PoolPolicy {
        nodepool: name,
        consolidation: match d.consolidation_policy {
            adze_api::nodepool::ConsolidationPolicy::WhenEmpty => ConsolidationPolicy::WhenEmpty,
            adze_api::nodepool::ConsolidationPolicy::WhenEmptyOrUnderutilized => {
                ConsolidationPolicy::WhenEmptyOrUnderutilized
            }
            adze_api::nodepool::ConsolidationPolicy::Balanced => ConsolidationPolicy::Balanced,
        },
        consolidate_after: d.consolidate_after.as_std(),
        budgets,
        min_savings_per_disruption_cost: min_savings,
        // A pool whose spec.replicas was added or removed is refused, not converted: while
        // either kind is in play, its nodes are not consolidated.
        fixed_size: pool.spec.is_static()
            || pool.status.as_ref().and_then(|s| s.kind) == Some(adze_api::PoolKind::Static),
        // Counted from the pool's NodeClaims by `build` ([`static_size`]).
        static_size: None,
    })
}

/// A static pool's size as its scaler counts it ([`crate::rules::static_members`]), or
/// `None` when the scaler leaves the pool alone ([`crate::rules::static_replicas`]).
pub fn static_size(pool: &NodePool, objects: &Objects) -> Option<pure::StaticSize> {
    let replicas = crate::rules::static_replicas(pool)?;
    let members = crate::rules::static_members(pool.metadata.name.as_deref()?, objects);
    let active = members
        .iter()
        .filter(|m| !m.deleting && !m.disrupting)
        .count() as u64;
    Some(pure::StaticSize {
        replicas,
        node_limit: crate::rules::node_limit(pool),
        active,
        leaving: members.len() as u64 - active,
    })
}

fn unix(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> UnixSeconds {
    t.0.as_second()
}

/// Adze's key or Karpenter's, so workloads annotated for Karpenter keep their protection.
/// On a node or NodeClaim only "true" counts (Karpenter gives the duration form to pods only).
fn do_not_disrupt(a: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    a.is_some_and(|a| {
        labels::DO_NOT_DISRUPT_KEYS
            .iter()
            .any(|k| a.get(*k).is_some_and(|v| v == "true"))
    })
}

/// How long a pod's do-not-disrupt annotation keeps its node, ordered from weakest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodProtection {
    None,
    Until(UnixSeconds),
    Indefinite,
}

/// A pod's do-not-disrupt (either key), read as Karpenter v1.x reads it: "true" protects
/// indefinitely; a positive Go duration ("30m", "4h") protects until that long after the pod
/// started (`status.startTime`; indefinitely while there is none: not knowing is not
/// permission); "false" protects nothing. Any other value protects nothing, as in Karpenter,
/// and comes back as a problem naming the annotation so it is not dropped silently.
pub fn pod_protection(pod: &Pod) -> (PodProtection, Vec<String>) {
    let mut out = PodProtection::None;
    let mut problems = Vec::new();
    let Some(annotations) = pod.metadata.annotations.as_ref() else {
        return (out, problems);
    };
    let started = pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map(unix);
    for key in labels::DO_NOT_DISRUPT_KEYS {
        let Some(value) = annotations.get(key) else {
            continue;
        };
        let this = match value.as_str() {
            "true" => PodProtection::Indefinite,
            "false" => PodProtection::None,
            v => match adze_api::duration::parse_go_duration(v) {
                Ok(d) if !d.is_zero() => {
                    let until = started.and_then(|s| {
                        i64::try_from(d.as_secs())
                            .ok()
                            .and_then(|secs| s.checked_add(secs))
                    });
                    until.map_or(PodProtection::Indefinite, PodProtection::Until)
                }
                _ => {
                    problems.push(format!(
                        "pod {}/{}: metadata.annotations[{key}]: {v:?} is neither \"true\" nor a positive duration (e.g. \"30m\"); it protects nothing",
                        pod.metadata.namespace.as_deref().unwrap_or("default"),
                        pod.metadata.name.as_deref().unwrap_or_default()
                    ));
                    PodProtection::None
                }
            },
        };
        out = out.max(this);
    }
    (out, problems)
}

fn going_away(node: &Node) -> bool {
    node.metadata.deletion_timestamp.is_some()
        || node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .any(|t| GOING_AWAY_TAINTS.contains(&t.key.as_str()))
}

/// Whether the disruption controller (or an interruption) has started on `claim`.
pub fn is_disrupting(claim: &NodeClaim) -> bool {
    claim.metadata.deletion_timestamp.is_some()
        || conditions::is_true(claim_conditions(claim), conditions::nodeclaim::DISRUPTING)
        || conditions::is_true(claim_conditions(claim), conditions::nodeclaim::INTERRUPTED)
}

/// When each node's set of pods last changed. A node seen for the first time starts at the
/// latest of its own and its pods' creation and the time its NodeClaim recorded
/// (`status.lastPodEventTime`, written back by the controller), so a restarted provisioner
/// does not forget a pod that left a moment ago; afterwards any change in the set restarts it.
#[derive(Debug, Default)]
pub struct PodActivity {
    nodes: HashMap<String, (BTreeSet<String>, UnixSeconds)>,
}

impl PodActivity {
    /// Records what `node` holds now; returns when that last changed. `recorded` is the
    /// NodeClaim's `status.lastPodEventTime`, if any.
    pub fn observe(
        &mut self,
        node: &str,
        pods: BTreeSet<String>,
        first_seen: UnixSeconds,
        recorded: Option<UnixSeconds>,
        now: UnixSeconds,
    ) -> UnixSeconds {
        match self.nodes.get_mut(node) {
            Some((set, since)) => {
                if *set != pods {
                    *set = pods;
                    *since = now;
                }
                *since
            }
            None => {
                let since = first_seen.max(recorded.unwrap_or(first_seen)).min(now);
                self.nodes.insert(node.to_string(), (pods, since));
                since
            }
        }
    }

    /// Forgets nodes no longer in the cluster.
    pub fn retain(&mut self, live: &BTreeSet<String>) {
        self.nodes.retain(|n, _| live.contains(n));
    }
}

/// What besides the watched objects goes into a decision.
pub struct Extra<'a> {
    pub pdbs: &'a [pdb::Budget],
    /// policy/v1 semantics for an empty PDB selector (selects all).
    pub pdb_empty_selects_all: bool,
    /// NodeClaim names the cloud provider reports drifted: the instance's image, subnet or
    /// security groups are no longer among those its EC2NodeClass resolves to.
    pub cloud_drifted: &'a BTreeSet<String>,
    pub now: UnixSeconds,
    /// `simulate --disruption --vpa-predictions`: the VerticalPodAutoscalers whose
    /// recommendations size moved pods ([`adze_scheduling::vpa`]); `None` when the flag is
    /// off (`run` passes its latest list with `--vpa-predictions`).
    pub vpas: Option<&'a [adze_scheduling::vpa::Vpa]>,
}

/// The conditions (and drift hash annotations) one NodeClaim should carry, as judged now.
#[derive(Debug, Clone)]
pub struct ClaimStatus {
    pub claim: Arc<NodeClaim>,
    /// `Drifted`: True with the first reason while `drift.reasons` is not empty, else absent;
    /// and the hash annotations to re-stamp.
    pub drift: drift::ClaimDrift,
    /// `Consolidatable`: True with this message, or absent.
    pub consolidatable: Option<String>,
}

/// The built input, and what could not be used.
pub struct Built {
    pub input: Input,
    /// Existing NodeClaim and Node names, which replacements must not take.
    pub reserved_names: Vec<String>,
    /// Pending pods waiting for capacity: the provisioner's turn, not disruption's.
    pub pending: usize,
    /// NodeClaims still launching, registering or initializing (not being deleted).
    pub in_flight: Vec<String>,
    /// Node name → its NodeClaim.
    pub claim_of_node: HashMap<String, Arc<NodeClaim>>,
    /// NodeClaims whose `status.lastPodEventTime` is behind what was observed: the controller
    /// writes these so the time survives a restart.
    pub activity_writes: Vec<(String, UnixSeconds)>,
    /// Per registered NodeClaim not being deleted: the `Drifted` and `Consolidatable`
    /// conditions it should carry. `NodeFacts::drifted` is exactly `Drifted` here.
    pub statuses: Vec<ClaimStatus>,
    pub problems: Vec<String>,
}

/// How many of the pending pods placement could put somewhere (an existing or in-flight node,
/// or new capacity from a NodePool): those the provisioner is about to act on. Pods no node
/// and no NodePool could take are left out: waiting for them would wait forever.
pub fn placeable_pending(built: &Built, options: &adze_scheduling::Options) -> usize {
    let pending = built.input.snapshot.pending.len();
    if pending == 0 {
        return 0;
    }
    let plan = adze_scheduling::scheduler::schedule(&built.input.snapshot, options);
    pending.saturating_sub(plan.unschedulable.len())
}

/// The options a decision is taken with: placement as provisioning plans it (at most
/// `max_instance_types` options per replacement, `policies`), never reusing a name the
/// cluster holds, with replacement names from `name_seed`.
pub fn decision_options(
    built: &Built,
    max_instance_types: usize,
    policies: &crate::rules::Policies,
    name_seed: u64,
) -> pure::Options {
    let mut scheduling = adze_scheduling::Options {
        max_instance_types,
        reserved_names: built.reserved_names.clone(),
        name_seed,
        ..adze_scheduling::Options::default()
    };
    policies.apply(&mut scheduling);
    pure::Options {
        scheduling,
        ..pure::Options::default()
    }
}

/// The expired nodes the controller deletes now: every expired node ([`pure::expiry`]) whose
/// NodeClaim is not already being deleted.
pub fn expiring(built: &Built) -> Vec<pure::expiry::Expired> {
    pure::expiry::expired(&built.input)
        .into_iter()
        .filter(|e| {
            built
                .claim_of_node
                .get(&e.node)
                .is_some_and(|c| c.metadata.deletion_timestamp.is_none())
        })
        .collect()
}

/// How many pending pods the provisioner can place when voluntary disruption would wait
/// for them (0: it does not wait). Pods no node and no NodePool could take do not count.
pub fn waiting_for(built: &Built, options: &pure::Options) -> usize {
    if built.pending == 0 {
        return 0;
    }
    placeable_pending(built, &options.scheduling)
}

pub fn build(
    objects: &Objects,
    catalog: &[Arc<InstanceType>],
    extra: &Extra<'_>,
    activity: &mut PodActivity,
) -> Built {
    let mut built = snapshot::build(objects, catalog);
    // CapacityBuffer placeholders are not pods waiting for the provisioner (disruption does
    // not wait for them); they are demand disruption must keep room for.
    let at = built
        .snapshot
        .pending
        .len()
        .saturating_sub(built.buffer_pods);
    let buffer = built.snapshot.pending.split_off(at);
    let mut problems = built.problems;
    // Nodes a DaemonSet created since they were planned no longer fits on: drifted
    // (`DaemonSetsDrifted`), so drift replaces them with nodes sized for today's DaemonSets.
    let daemon_misfits: HashMap<String, String> =
        adze_scheduling::late_daemons::misfits(&built.snapshot, &built.charged_daemons)
            .into_iter()
            .map(|m| {
                let why = format!(
                    "DaemonSet pods not running on it ({}) and its pods ask {} more than it has",
                    m.daemons.join(", "),
                    m.over
                );
                (m.node, why)
            })
            .collect();
    let node_by_provider: HashMap<&str, &Arc<Node>> = objects
        .nodes
        .iter()
        .filter_map(|n| Some((n.spec.as_ref()?.provider_id.as_deref()?, n)))
        .collect();
    let pools: HashMap<&str, &Arc<NodePool>> = objects
        .nodepools
        .iter()
        .filter_map(|p| Some((p.metadata.name.as_deref()?, p)))
        .collect();
    let mut pods_by_node: HashMap<&str, Vec<&Arc<Pod>>> = HashMap::new();
    for p in &objects.pods {
        if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            pods_by_node.entry(n).or_default().push(p);
        }
    }

    let mut policies = Vec::new();
    let mut static_pools = Vec::new();
    for p in &objects.nodepools {
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        match policy(p) {
            Ok(mut pol) => {
                if pol.fixed_size {
                    pol.static_size = static_size(p, objects);
                    // What its drifted nodes' replacements are planned from, as its scaler
                    // plans its claims.
                    if pol.static_size.is_some() {
                        let planning = crate::rules::static_planning_objects(p, objects);
                        static_pools.extend(snapshot::build(&planning, catalog).snapshot.nodepools);
                    }
                }
                policies.push(pol)
            }
            Err(e) => problems.push(e),
        }
    }
    let scheduling_pools: HashMap<&str, &adze_scheduling::NodePool> = built
        .snapshot
        .nodepools
        .iter()
        .map(|p| (p.name.as_str(), p))
        .collect();
    let mut statuses = Vec::new();
    let mut facts = Vec::new();
    let mut claim_of_node = HashMap::new();
    let mut in_flight = Vec::new();
    let mut live = BTreeSet::new();
    let mut activity_writes = Vec::new();
    for c in &objects.claims {
        let name = c.metadata.name.clone().unwrap_or_default();
        let node = c
            .status
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(|p| node_by_provider.get(p));
        let Some(node) = node else {
            if c.metadata.deletion_timestamp.is_none() {
                in_flight.push(name);
            }
            continue;
        };
        let node_name = node.metadata.name.clone().unwrap_or_default();
        if !is_initialized(c) && c.metadata.deletion_timestamp.is_none() {
            in_flight.push(name.clone());
        }
        live.insert(node_name.clone());
        claim_of_node.insert(node_name.clone(), c.clone());
        let pool = c
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NODEPOOL))
            .and_then(|p| pools.get(p.as_str()));
        let created = c
            .metadata
            .creation_timestamp
            .as_ref()
            .map(unix)
            .unwrap_or(extra.now);
        let node_pods = pods_by_node
            .get(node_name.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let workload: BTreeSet<String> = node_pods
            .iter()
            .filter(|p| !snapshot::owned_by_daemonset(p))
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        let newest = node_pods
            .iter()
            .filter_map(|p| p.metadata.creation_timestamp.as_ref().map(unix))
            .chain([created])
            .max()
            .unwrap_or(created);
        let recorded = c
            .status
            .as_ref()
            .and_then(|s| s.last_pod_event_time.as_ref())
            .map(unix);
        let last_pod_event = activity.observe(&node_name, workload, newest, recorded, extra.now);
        if recorded != Some(last_pod_event) && c.metadata.deletion_timestamp.is_none() {
            activity_writes.push((name.clone(), last_pod_event));
        }
        let pool_name = c
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NODEPOOL));
        let no_labels = std::collections::BTreeMap::new();
        let judged = drift::evaluate(&drift::Subject {
            claim: c,
            pool: pool.map(|p| p.as_ref()),
            class: drift::class_named(&c.spec.node_class_ref, objects.nodeclasses.as_deref()),
            requirements: pool_name
                .and_then(|p| scheduling_pools.get(p.as_str()))
                .map(|p| &p.requirements),
            node_labels: node.metadata.labels.as_ref().unwrap_or(&no_labels),
            cloud_drifted: extra.cloud_drifted.contains(&name),
            daemon_misfit: daemon_misfits.get(node_name.as_str()).map(String::as_str),
        });
        let capacity_block_end = capacity_block_end(
            drift::class_named(&c.spec.node_class_ref, objects.nodeclasses.as_deref()),
            node.metadata.labels.as_ref().unwrap_or(&no_labels),
        );
        let f = NodeFacts {
            name: node_name,
            initialized: is_initialized(c),
            created,
            expire_after: c.spec.expire_after.as_std(),
            drifted: judged.drifted(),
            // The Drifted condition's lastTransitionTime, or now when it is about to be set.
            drifted_since: judged.drifted().then(|| {
                claim_conditions(c)
                    .iter()
                    .find(|k| k.type_ == "Drifted" && k.status == "True")
                    .map_or(extra.now, |k| unix(&k.last_transition_time))
            }),
            do_not_disrupt: do_not_disrupt(node.metadata.annotations.as_ref())
                || do_not_disrupt(c.metadata.annotations.as_ref()),
            disrupting: is_disrupting(c) || going_away(node) || !snapshot::node_ready(node),
            disrupting_as_not_ready: !snapshot::node_ready(node)
                && !is_disrupting(c)
                && !going_away(node),
            last_pod_event,
            capacity_block_end,
        };
        if c.metadata.deletion_timestamp.is_none() {
            let consolidatable = pool_name
                .and_then(|p| policies.iter().find(|pol| &pol.nodepool == p))
                .filter(|pol| !pol.fixed_size && pure::consolidatable(pol, &f, extra.now))
                .map(|pol| {
                    format!(
                        "no pod scheduled to or removed from the node for consolidateAfter ({}s)",
                        pol.consolidate_after.unwrap_or_default().as_secs()
                    )
                });
            statuses.push(ClaimStatus {
                claim: c.clone(),
                drift: judged,
                consolidatable,
            });
        }
        facts.push(f);
    }
    activity.retain(&live);

    let mut pod_facts = Vec::new();
    for p in &objects.pods {
        // A pod already terminating is on its way out: neither its do-not-disrupt nor a
        // PodDisruptionBudget (which evicts nothing that is already leaving) holds its node
        // (Karpenter reads only active pods for both).
        if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none()
            || crate::rules::is_terminating(&p.metadata)
        {
            continue;
        }
        let ns = p
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let pod_labels = p.metadata.labels.clone().unwrap_or_default();
        // A mirror pod cannot be evicted, so no PDB is asked about it; its do-not-disrupt
        // still holds the node, as Karpenter reads it.
        let pdbs: Vec<String> = extra
            .pdbs
            .iter()
            .filter(|b| {
                !crate::rules::is_mirror(p)
                    && b.guards(p)
                    && b.selects(&ns, &pod_labels, extra.pdb_empty_selects_all)
            })
            .map(pdb::Budget::key)
            .collect();
        let (protection, invalid) = pod_protection(p);
        problems.extend(invalid);
        let (dnd, until) = match protection {
            PodProtection::None => (false, None),
            PodProtection::Until(t) => (false, Some(t)),
            PodProtection::Indefinite => (true, None),
        };
        if dnd || until.is_some() || !pdbs.is_empty() {
            pod_facts.push(PodFacts {
                pod: format!("{ns}/{}", p.metadata.name.as_deref().unwrap_or_default()),
                do_not_disrupt: dnd,
                do_not_disrupt_until: until,
                pdbs,
            });
        }
    }

    let moved_requests = match extra.vpas {
        Some(vpas) => super::vpa::moved_requests(&objects.pods, vpas),
        None => BTreeMap::new(),
    };
    let pending = built.snapshot.pending.len();
    Built {
        input: Input {
            snapshot: built.snapshot,
            nodes: facts,
            pods: pod_facts,
            pdbs: extra
                .pdbs
                .iter()
                .map(|b| pure::Pdb {
                    name: b.key(),
                    disruptions_allowed: b.disruptions_allowed,
                })
                .collect(),
            policies,
            now: extra.now,
            buffer,
            // The zonal-shift reading is the controller's (UnavailableOfferings::zones_away).
            zones_away: BTreeSet::new(),
            static_pools,
            // Node health, with the cloud's status checks, is read by whoever repairs:
            // the controller ([`super::repair::StatusChecks`]) or `simulate --node-repair`.
            health: Vec::new(),
            // The drift backoff is the controller's (recorded as replacements fail).
            drift_holds: Vec::new(),
            moved_requests,
        },
        reserved_names: built.reserved_names,
        pending,
        in_flight,
        claim_of_node,
        activity_writes,
        statuses,
        problems,
    }
}

/// When the Capacity Block a node runs in ends, from its reservation-ID label and the end
/// time its class's status lists for that reservation; None for any other node (an ODCR
/// that ends leaves its instances running as on-demand).
fn capacity_block_end(
    class: Option<&adze_api::EC2NodeClass>,
    node_labels: &std::collections::BTreeMap<String, String>,
) -> Option<UnixSeconds> {
    use adze_api::ec2nodeclass::ReservationType;
    let id = node_labels.get(labels::CAPACITY_RESERVATION_ID)?;
    let r = class?
        .status
        .as_ref()?
        .capacity_reservations
        .iter()
        .find(|r| &r.id == id && r.reservation_type == ReservationType::CapacityBlock)?;
    let end: k8s_openapi::jiff::Timestamp = r.end_time.as_deref()?.parse().ok()?;
    Some(end.as_second())
}

#[cfg(test)]
mod tests {
    #[test]
    fn karpenters_do_not_disrupt_key_protects_like_adzes() {
        let ann = |k: &str, v: &str| Some([(k.to_string(), v.to_string())].into());
        assert!(do_not_disrupt(ann(labels::DO_NOT_DISRUPT, "true").as_ref()));
        assert!(do_not_disrupt(
            ann("karpenter.sh/do-not-disrupt", "true").as_ref()
        ));
        assert!(!do_not_disrupt(
            ann("karpenter.sh/do-not-disrupt", "false").as_ref()
        ));
        assert!(!do_not_disrupt(
            ann("example.com/do-not-disrupt", "true").as_ref()
        ));
        assert!(!do_not_disrupt(None));
        // The duration form is a pod's only (Karpenter): on a node it protects nothing.
        assert!(!do_not_disrupt(
            ann("karpenter.sh/do-not-disrupt", "1h").as_ref()
        ));
    }

    fn annotated(value: &str, started: Option<&str>) -> Pod {
        let mut v = json!({"metadata": {"name": "job", "namespace": "ci",
            "annotations": {"karpenter.sh/do-not-disrupt": value}}});
        if let Some(t) = started {
            v["status"] = json!({"startTime": t});
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pod_do_not_disrupt_duration_runs_from_the_pods_start() {
        // 2026-01-01T00:00:00Z
        let start = 1_767_225_600;
        let p = annotated("1h30m", Some("2026-01-01T00:00:00Z"));
        assert_eq!(
            pod_protection(&p),
            (PodProtection::Until(start + 5400), vec![])
        );
        assert_eq!(
            pod_protection(&annotated("true", None)),
            (PodProtection::Indefinite, vec![])
        );
        // No start time yet: kept, as Karpenter does, rather than guessed.
        assert_eq!(
            pod_protection(&annotated("4h", None)),
            (PodProtection::Indefinite, vec![])
        );
        assert_eq!(
            pod_protection(&annotated("false", None)),
            (PodProtection::None, vec![])
        );
    }

    #[test]
    fn invalid_do_not_disrupt_values_protect_nothing_and_are_reported() {
        for bad in ["yes", "0s", "-5m", "1d", ""] {
            let (protection, problems) =
                pod_protection(&annotated(bad, Some("2026-01-01T00:00:00Z")));
            assert_eq!(protection, PodProtection::None, "{bad:?}");
            assert_eq!(problems.len(), 1, "{bad:?}");
            assert!(
                problems[0]
                    .contains("pod ci/job: metadata.annotations[karpenter.sh/do-not-disrupt]"),
                "{}",
                problems[0]
            );
        }
        // Go's largest duration does not overflow the deadline.
        let (protection, _) = pod_protection(&annotated("2562047h", Some("2026-01-01T00:00:00Z")));
        assert!(matches!(protection, PodProtection::Until(t) if t > 1_767_225_600));
    }

    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn pool(v: serde_json::Value) -> NodePool {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pool_policy_maps_budgets_timers_and_policy() {
        let p = pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {
                "template": {"spec": {"expireAfter": "1h", "nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}},
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                    "budgets": [{"nodes": "1"}, {"nodes": "0", "schedule": "0 9 * * *",
                                 "duration": "8h", "reasons": ["Drifted"]}]},
            },
        }));
        let pol = policy(&p).unwrap();
        assert_eq!(pol.nodepool, "p");
        assert_eq!(pol.consolidation, ConsolidationPolicy::WhenEmpty);
        assert_eq!(pol.consolidate_after, Some(Duration::from_secs(30)));
        assert_eq!(pol.budgets.len(), 2);
        assert!(pol.budgets[1].window.is_some());
        assert_eq!(pol.budgets[1].reasons, vec![Reason::Drifted]);
    }

    #[test]
    fn bad_budget_names_the_field() {
        let p = pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}},
                "disruption": {"budgets": [{"nodes": "1", "schedule": "not a cron", "duration": "1h"}]}},
        }));
        let e = policy(&p).unwrap_err();
        assert!(e.contains("spec.disruption.budgets[0]"), "{e}");
    }

    #[test]
    fn min_savings_per_disruption_cost_is_carried_or_refused_naming_the_field() {
        let with = |v: &str| {
            pool(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
                "spec": {"template": {"spec": {"nodeClassRef":
                        {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}},
                    "disruption": {"minSavingsPerDisruptionCost": v}},
            }))
        };
        assert_eq!(
            policy(&with("0.05"))
                .unwrap()
                .min_savings_per_disruption_cost,
            0.05
        );
        let unset = pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        }));
        assert_eq!(policy(&unset).unwrap().min_savings_per_disruption_cost, 0.0);
        let e = policy(&with("NaN")).unwrap_err();
        assert!(
            e.contains("spec.disruption.minSavingsPerDisruptionCost"),
            "{e}"
        );
    }

    #[test]
    fn pod_activity_restarts_when_the_pod_set_changes() {
        let mut a = PodActivity::default();
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(a.observe("n", set(&["a"]), 100, None, 500), 100);
        assert_eq!(a.observe("n", set(&["a"]), 100, None, 600), 100);
        assert_eq!(a.observe("n", set(&[]), 100, None, 700), 700);
        assert_eq!(a.observe("n", set(&[]), 100, None, 800), 700);
        a.retain(&BTreeSet::new());
        assert_eq!(a.observe("n", set(&[]), 900, None, 1000), 900);
    }

    /// Consolidation plans replacements from the pool's types; they must be the ones its
    /// class can launch, or it would replace nodes with types the launch then refuses.
    #[test]
    fn replacements_are_chosen_from_what_the_pools_class_can_launch() {
        let pool = Arc::new(pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        })));
        let class: Arc<adze_api::EC2NodeClass> = Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                "spec": {"subnetSelectorTerms": [{"id": "subnet-1"}],
                    "securityGroupSelectorTerms": [{"id": "sg-1"}],
                    "amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "node",
                    "kubelet": {"maxPods": 17}},
                "status": {"subnets": [{"id": "subnet-1", "zone": "us-east-1c"}],
                    "amis": [{"id": "ami-1", "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]},
            }))
            .unwrap(),
        );
        let objects = Objects {
            nodepools: vec![pool],
            nodeclasses: Some(vec![class]),
            ..Objects::default()
        };
        let cloud_drifted = BTreeSet::new();
        let extra = Extra {
            pdbs: &[],
            pdb_empty_selects_all: false,
            cloud_drifted: &cloud_drifted,
            now: 1_767_225_600,
            vpas: None,
        };
        let built = build(
            &objects,
            &adze_scheduling::catalog::embedded(),
            &extra,
            &mut PodActivity::default(),
        );
        let types = &built.input.snapshot.nodepools[0].instance_types;
        assert!(!types.is_empty());
        for t in types {
            assert_eq!(t.label(labels::ARCH), Some("arm64"), "{}", t.name);
            assert_eq!(t.capacity.pods, 17, "{}", t.name);
            assert!(
                t.offerings.iter().all(|o| o.zone == "us-east-1c"),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn only_pending_pods_placement_can_place_hold_disruption_back() {
        let pool = Arc::new(pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        })));
        let pending = |name: &str, cpu: &str| -> Arc<Pod> {
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": "shop", "uid": name,
                        "creationTimestamp": "2026-01-01T00:02:00Z"},
                    "spec": {"containers": [{"name": "c",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
                    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                        "status": "False", "reason": "Unschedulable"}]},
                }))
                .unwrap(),
            )
        };
        let cloud_drifted = BTreeSet::new();
        let extra = Extra {
            pdbs: &[],
            pdb_empty_selects_all: false,
            cloud_drifted: &cloud_drifted,
            now: 1_767_225_600 + 3600,
            vpas: None,
        };
        let catalog = adze_scheduling::catalog::embedded();
        let built_with = |pods: Vec<Arc<Pod>>| {
            let objects = Objects {
                nodes: vec![],
                pods,
                claims: vec![],
                nodepools: vec![pool.clone()],
                daemonsets: vec![],
                ..Objects::default()
            };
            build(&objects, &catalog, &extra, &mut PodActivity::default())
        };
        let options = adze_scheduling::Options::default();
        // No instance type has 5,000 cpus: that pod stays pending whatever happens.
        let stuck = built_with(vec![pending("huge", "5000")]);
        assert_eq!(stuck.pending, 1);
        assert_eq!(placeable_pending(&stuck, &options), 0);
        let both = built_with(vec![pending("huge", "5000"), pending("web", "1")]);
        assert_eq!(both.pending, 2);
        assert_eq!(
            placeable_pending(&both, &options),
            1,
            "the provisioner will launch for web"
        );
    }

    #[test]
    fn a_restarted_provisioner_starts_from_the_time_the_nodeclaim_recorded() {
        // Pod "b" left at 700 and the claim recorded it; a fresh process (no memory) sees only
        // "a", created at 100: without the record it would think nothing changed since 100.
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        let mut fresh = PodActivity::default();
        assert_eq!(fresh.observe("n", set(&["a"]), 100, Some(700), 800), 700);
        // A record older than what the objects show does not pull the time back.
        let mut other = PodActivity::default();
        assert_eq!(other.observe("n", set(&["a"]), 300, Some(200), 800), 300);
        // Nor does a clock-skewed record from the future push it past now.
        let mut skew = PodActivity::default();
        assert_eq!(skew.observe("n", set(&["a"]), 100, Some(5_000), 800), 800);
    }

    #[test]
    fn cluster_objects_become_node_and_pod_facts() {
        let pool = Arc::new(pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        })));
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "p-1", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"adze.sh/nodepool": "p", "node.kubernetes.io/instance-type": "m5.large"},
                "annotations": {"adze.sh/nodepool-hash": "from-an-older-template",
                                "adze.sh/nodepool-hash-version": "v2"}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                     "expireAfter": "24h"},
            "status": {"providerID": "adze-sim://p-1", "conditions": [
                {"type": "Initialized", "status": "True", "reason": "Initialized", "message": "ok",
                 "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
        }))
        .unwrap();
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "p-1", "labels": {"adze.sh/nodepool": "p"}},
            "spec": {"providerID": "adze-sim://p-1"},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                "conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap();
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1",
                "creationTimestamp": "2026-01-01T00:02:00Z",
                "labels": {"app": "web"}, "annotations": {"adze.sh/do-not-disrupt": "true"}},
            "spec": {"nodeName": "p-1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        let objects = Objects {
            nodes: vec![Arc::new(node)],
            pods: vec![Arc::new(pod)],
            claims: vec![Arc::new(claim)],
            nodepools: vec![pool],
            daemonsets: vec![],
            ..Objects::default()
        };
        let pdbs = vec![
            pdb::Budget::from_json(&json!({"metadata": {"name": "web", "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
                "status": {"disruptionsAllowed": 1}}))
            .unwrap(),
        ];
        let cloud_drifted = BTreeSet::new();
        let extra = Extra {
            pdbs: &pdbs,
            pdb_empty_selects_all: false,
            cloud_drifted: &cloud_drifted,
            now: 1_767_225_600 + 3600,
            vpas: None,
        };
        let mut activity = PodActivity::default();
        let built = build(
            &objects,
            &adze_scheduling::catalog::embedded(),
            &extra,
            &mut activity,
        );
        assert_eq!(built.pending, 0);
        assert!(built.in_flight.is_empty());
        let f = &built.input.nodes[0];
        assert_eq!(f.name, "p-1");
        assert!(f.initialized && f.drifted && !f.disrupting && !f.do_not_disrupt);
        assert_eq!(f.created, 1_767_225_600);
        // The claim's own expireAfter, not the pool's (720h by default).
        assert_eq!(f.expire_after, Some(Duration::from_secs(24 * 3600)));
        // Drifted is exactly what the claim's condition is set to, with its reason.
        assert_eq!(built.statuses.len(), 1);
        assert_eq!(
            built.statuses[0].drift.reasons,
            vec![pure::drift::DriftReason::NodePool]
        );
        // consolidateAfter defaults to 0s: quiet long enough.
        assert!(built.statuses[0].consolidatable.is_some());
        // The newest pod's creation: two minutes after the claim.
        assert_eq!(f.last_pod_event, 1_767_225_600 + 120);
        // Not yet recorded on the claim: the controller is asked to write it.
        assert_eq!(
            built.activity_writes,
            vec![("p-1".to_string(), 1_767_225_600 + 120)]
        );
        // Once written (seen on the next pass), nothing more to write; and the record is what a
        // fresh process starts from.
        let mut recorded = (*objects.claims[0]).clone();
        recorded.status.as_mut().unwrap().last_pod_event_time =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + 900).unwrap(),
            ));
        let objects = Objects {
            claims: vec![Arc::new(recorded)],
            ..objects
        };
        let again = build(
            &objects,
            &adze_scheduling::catalog::embedded(),
            &extra,
            &mut PodActivity::default(),
        );
        assert_eq!(again.input.nodes[0].last_pod_event, 1_767_225_600 + 900);
        assert!(again.activity_writes.is_empty());
        assert_eq!(
            built.input.pods,
            vec![PodFacts {
                pod: "shop/web-1".into(),
                do_not_disrupt: true,
                do_not_disrupt_until: None,
                pdbs: vec!["shop/web".into()],
            }]
        );
        assert_eq!(built.input.pdbs[0].disruptions_allowed, 1);
        assert_eq!(built.input.policies[0].nodepool, "p");
    }

    /// `karpenter.sh/do-not-disrupt: "true"` alone keeps a node exactly as Adze's key does:
    /// on a pod it stops consolidation of the pod's node, on an empty node (or its NodeClaim)
    /// it stops emptiness; the blocker names the pod or the node. `"false"` protects nothing.
    #[test]
    fn karpenters_do_not_disrupt_key_blocks_consolidation_and_emptiness_like_adzes() {
        let pool = Arc::new(pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}},
                "disruption": {"consolidateAfter": "0s"}},
        })));
        let meta = |name: &str, extra_labels: serde_json::Value, ann: &serde_json::Value| {
            let mut labels = json!({"adze.sh/nodepool": "p", labels::INSTANCE_TYPE: "m5.large",
                labels::ZONE: "us-east-1a", labels::CAPACITY_TYPE: "on-demand"});
            labels
                .as_object_mut()
                .unwrap()
                .extend(extra_labels.as_object().unwrap().clone());
            json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z", "labels": labels,
                "annotations": ann})
        };
        let claim = |name: &str, ann: &serde_json::Value| -> Arc<NodeClaim> {
            let mut ann = ann.clone();
            ann[drift::NODEPOOL_HASH] = json!(drift::template_hash(&pool));
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                    "metadata": meta(name, json!({}), &ann),
                    "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
                    "status": {"providerID": format!("adze-sim://{name}"), "conditions": [
                        {"type": "Initialized", "status": "True", "reason": "Initialized",
                         "message": "ok", "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
                }))
                .unwrap(),
            )
        };
        let node = |name: &str, ann: &serde_json::Value| -> Arc<Node> {
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": meta(name, json!({labels::HOSTNAME: name}), ann),
                    "spec": {"providerID": format!("adze-sim://{name}")},
                    "status": {"allocatable": {"cpu": "2", "memory": "7Gi", "pods": "29"},
                        "conditions": [{"type": "Ready", "status": "True"}]},
                }))
                .unwrap(),
            )
        };
        let pod = |name: &str, node: &str, ann: serde_json::Value| -> Arc<Pod> {
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": "shop", "uid": name,
                        "creationTimestamp": "2026-01-01T00:02:00Z", "annotations": ann},
                    "spec": {"nodeName": node, "containers": [{"name": "c",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
                    "status": {"phase": "Running"},
                }))
                .unwrap(),
            )
        };
        let adze = || json!({labels::DO_NOT_DISRUPT: "true"});
        let karpenter = |v: &str| json!({labels::KARPENTER_DO_NOT_DISRUPT: v});
        let none = json!({});
        let cloud_drifted = BTreeSet::new();
        let extra = Extra {
            pdbs: &[],
            pdb_empty_selects_all: false,
            cloud_drifted: &cloud_drifted,
            now: 1_767_225_600 + 3600,
            vpas: None,
        };
        let catalog = adze_scheduling::catalog::embedded();
        // "keep" holds a pod protected by Adze's key throughout, so the only node that can go
        // is "other": with pod "db" on it (consolidation: db fits on keep), or empty.
        let decide = |db: Option<serde_json::Value>,
                      other_node: &serde_json::Value,
                      other_claim: &serde_json::Value| {
            let mut pods = vec![pod("web", "keep", adze())];
            pods.extend(db.map(|ann| pod("db", "other", ann)));
            let objects = Objects {
                nodes: vec![node("keep", &none), node("other", other_node)],
                claims: vec![claim("keep", &none), claim("other", other_claim)],
                pods,
                nodepools: vec![pool.clone()],
                ..Objects::default()
            };
            let built = build(&objects, &catalog, &extra, &mut PodActivity::default());
            assert!(built.problems.is_empty(), "{:?}", built.problems);
            let (_, blocked) = pure::candidates::candidates(&built.input);
            let other_blocker = blocked
                .into_iter()
                .find(|(n, _)| n == "other")
                .map(|(_, b)| b);
            let removed = pure::decide(&built.input, &pure::Options::default())
                .map(|d| (d.reason, d.node_names().join(",")));
            (removed, other_blocker)
        };

        // Consolidation: unprotected, db moves to keep and "other" goes.
        for unprotected in [none.clone(), karpenter("false")] {
            let (removed, blocker) = decide(Some(unprotected.clone()), &none, &none);
            assert_eq!(
                removed,
                Some((Reason::Underutilized, "other".into())),
                "{unprotected}"
            );
            assert_eq!(blocker, None);
        }
        for key in [adze(), karpenter("true")] {
            let (removed, blocker) = decide(Some(key.clone()), &none, &none);
            assert_eq!(removed, None, "{key}");
            assert_eq!(
                blocker,
                Some(pure::Blocker::DoNotDisruptPod("shop/db".into())),
                "{key}"
            );
        }

        // Emptiness: an empty node goes unless it or its NodeClaim carries either key.
        let (removed, _) = decide(None, &none, &none);
        assert_eq!(removed, Some((Reason::Empty, "other".into())));
        for key in [adze(), karpenter("true")] {
            for (on_node, on_claim) in [(&key, &none), (&none, &key)] {
                let (removed, blocker) = decide(None, on_node, on_claim);
                assert_eq!(removed, None, "{key} on node {on_node}, claim {on_claim}");
                assert_eq!(blocker, Some(pure::Blocker::DoNotDisruptNode));
            }
        }
    }

    /// A node's pods are re-placed on the cluster without it: a pod whose disk is in
    /// us-east-1c must not be "consolidated" onto the roomy node in us-east-1a.
    #[test]
    fn consolidation_keeps_a_pod_in_its_volumes_zone() {
        let pool = Arc::new(pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}},
                "disruption": {"consolidateAfter": "0s"}},
        })));
        let claim = |name: &str, it: &str, zone: &str| -> Arc<NodeClaim> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z",
                        "labels": {"adze.sh/nodepool": "p", labels::INSTANCE_TYPE: it,
                            labels::ZONE: zone, labels::CAPACITY_TYPE: "on-demand"},
                        "annotations": {drift::NODEPOOL_HASH: drift::template_hash(&pool)}},
                    "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
                    "status": {"providerID": format!("adze-sim://{name}"), "conditions": [
                        {"type": "Initialized", "status": "True", "reason": "Initialized",
                         "message": "ok", "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
                }))
                .unwrap(),
            )
        };
        let node = |name: &str, it: &str, zone: &str, cpu: &str| -> Arc<Node> {
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {"adze.sh/nodepool": "p",
                        labels::INSTANCE_TYPE: it, labels::ZONE: zone,
                        labels::CAPACITY_TYPE: "on-demand", labels::HOSTNAME: name}},
                    "spec": {"providerID": format!("adze-sim://{name}")},
                    "status": {"allocatable": {"cpu": cpu, "memory": "15Gi", "pods": "58"},
                        "conditions": [{"type": "Ready", "status": "True"}]},
                }))
                .unwrap(),
            )
        };
        let pod = |name: &str, node: &str, volumes: serde_json::Value| -> Arc<Pod> {
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": "shop", "uid": name,
                        "creationTimestamp": "2026-01-01T00:02:00Z"},
                    "spec": {"nodeName": node, "volumes": volumes, "containers": [{"name": "c",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
                    "status": {"phase": "Running"},
                }))
                .unwrap(),
            )
        };
        // big-a stays (its pod may not be disrupted); small-c is the candidate.
        let mut web = (*pod("web", "big-a", json!(null))).clone();
        web.metadata.annotations =
            Some([(labels::DO_NOT_DISRUPT.to_string(), "true".to_string())].into());
        let pinned_web = Arc::new(web);
        let objects = |db_volumes: serde_json::Value| {
            Objects {
            nodes: vec![
                node("big-a", "m5.xlarge", "us-east-1a", "4"),
                node("small-c", "m5.large", "us-east-1c", "2"),
            ],
            claims: vec![
                claim("big-a", "m5.xlarge", "us-east-1a"),
                claim("small-c", "m5.large", "us-east-1c"),
            ],
            pods: vec![pinned_web.clone(), pod("db", "small-c", db_volumes)],
            nodepools: vec![pool.clone()],
            pvcs: vec![Arc::new(
                serde_json::from_value(json!({"metadata": {"name": "data", "namespace": "shop"},
                    "spec": {"volumeName": "pv-c"}}))
                .unwrap(),
            )],
            pvs: vec![Arc::new(
                serde_json::from_value(json!({"metadata": {"name": "pv-c"},
                    "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": labels::ZONE, "operator": "In", "values": ["us-east-1c"]}]}]}}}}))
                .unwrap(),
            )],
            ..Objects::default()
        }
        };
        let cloud_drifted = BTreeSet::new();
        let extra = Extra {
            pdbs: &[],
            pdb_empty_selects_all: false,
            cloud_drifted: &cloud_drifted,
            now: 1_767_225_600 + 3600,
            vpas: None,
        };
        let catalog = adze_scheduling::catalog::embedded();
        let decide = |o: &Objects| {
            let built = build(o, &catalog, &extra, &mut PodActivity::default());
            assert!(built.problems.is_empty(), "{:?}", built.problems);
            pure::decide(&built.input, &pure::Options::default())
        };
        // Without the volume, db simply moves to the roomy node.
        let free = decide(&objects(json!(null))).expect("small-c consolidates");
        assert_eq!(
            free.plan.placements().get("shop/db"),
            Some(&"big-a"),
            "{} {:?}",
            free.message,
            free.plan
        );

        let zonal =
            objects(json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]));
        let d = decide(&zonal).expect("a cheaper node in us-east-1c still pays");
        let to = d.plan.placements().get("shop/db").copied();
        assert_ne!(to, Some("big-a"), "{}", d.message);
        let replacement = d
            .plan
            .new_claims
            .iter()
            .find(|c| c.pods.contains(&"shop/db".to_string()))
            .expect("db goes to a replacement");
        assert_eq!(replacement.zone, "us-east-1c", "{}", d.message);
    }

    #[test]
    fn a_capacity_block_nodes_end_comes_from_its_class_status() {
        let class: adze_api::EC2NodeClass = serde_json::from_value(serde_json::json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "gpu"},
            "spec": {"subnetSelectorTerms": [{"id": "subnet-1"}], "securityGroupSelectorTerms": [{"id": "sg-1"}],
                     "amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"},
            "status": {"capacityReservations": [
                {"id": "cr-block", "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a",
                 "availableInstanceCount": 0, "reservationType": "capacity-block", "endTime": "2026-01-01T00:00:00Z"},
                {"id": "cr-odcr", "instanceType": "m5.large", "availabilityZone": "us-east-1a",
                 "availableInstanceCount": 1, "reservationType": "default", "endTime": "2026-01-01T00:00:00Z"}
            ]}
        }))
        .unwrap();
        let on = |id: &str| {
            std::collections::BTreeMap::from([(
                labels::CAPACITY_RESERVATION_ID.to_string(),
                id.to_string(),
            )])
        };
        assert_eq!(
            capacity_block_end(Some(&class), &on("cr-block")),
            Some(1_767_225_600)
        );
        assert_eq!(
            capacity_block_end(Some(&class), &on("cr-odcr")),
            None,
            "an ODCR's end drains nothing"
        );
        assert_eq!(capacity_block_end(Some(&class), &on("cr-gone")), None);
        assert_eq!(capacity_block_end(None, &on("cr-block")), None);
    }
}
