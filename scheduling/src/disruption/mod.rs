//! Which nodes to take away, and what (if anything) to launch instead: the pure decision of
//! voluntary disruption. Plain data in (the cluster as a [`Snapshot`], per-node and per-pod
//! facts, NodePool policies, `now`), one [`Decision`] out. No clocks, no I/O; the same input
//! always gives the same decision. The controller executes it: it waits a validation period,
//! calls [`revalidate`] on a fresh input, launches replacements, then drains.
//!
//! Methods, in order, first one that finds something wins ([`decide`]):
//! 0. **Repair** ([`Reason::Unhealthy`], with [`Options::node_repair`] set to
//!    [`repair::RepairMode::Budgeted`], Karpenter v1.15's order): one node whose condition
//!    stayed unhealthy past its toleration, within its pool's budget for `Unhealthy`, under
//!    the 20 % guard ([`repair`], [`repair_method`]).
//! 1. **Drift** ([`Reason::Drifted`]): replace one drifted node with pods, earliest drifted
//!    first (see [`drift`] for what drifted means). An empty drifted node is left to
//!    emptiness, so it does not use up the Drifted budget (static pools aside, whose nodes
//!    emptiness never takes). A static pool's node is replaced by one of the pool's own,
//!    launched first within `limits.nodes` and the replicas ([`static_drift`]).
//! 2. **Emptiness** ([`Reason::Empty`]): delete every empty node (no non-DaemonSet pods for
//!    `consolidateAfter`) the budgets allow.
//! 3. **Consolidation** ([`Reason::Underutilized`], policy `WhenEmptyOrUnderutilized` or
//!    `Balanced`): the largest-saving set of nodes whose pods fit on the other nodes plus at
//!    most one cheaper replacement, multi-node first, then single-node (also when multi-node
//!    finds a replacement: the bigger saving wins); under `Balanced` only
//!    moves whose savings justify their disruption, and a replacement only when it saves
//!    at least the pools' `minSavingsPerDisruptionCost` ([`savings`]). See [`consolidation`].
//!
//! Expiration is not one of them: it is forceful ([`expiry`]), outside budgets and
//! do-not-disrupt, and the controller carries it out before asking for a decision. So is
//! node repair in its legacy mode ([`repair::RepairMode::Legacy`], `--legacy-node-repair`).
//!
//! [`decide_all`] repeats this on the cluster as the decisions already taken will leave it
//! ([`commit`]), so a drift rollout keeps as many replacements in flight as the budgets
//! allow instead of going node by node.
//!
//! Every decision is proved by running the real scheduler ([`crate::schedule`]) on the
//! cluster without the removed nodes: each displaced pod has a place in [`Decision::plan`].

pub mod budgets;
pub mod candidates;
mod commit;
pub mod consolidation;
pub mod cron;
pub mod decision;
pub mod deletion_cost;
pub mod drift;
pub mod drift_backoff;
pub mod expiry;
mod methods;
pub mod repair;
mod repair_method;
pub mod reserved_drift;
pub mod savings;
mod simulate;
pub mod static_drift;
mod terminate_first;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::scheduler::Snapshot;

pub use budgets::{Allowance, Budget, BudgetError, BudgetNodes, Window};
pub use candidates::{
    BlockedNode, Blocker, Candidate, blocked, candidates, consolidatable, node_price,
};
pub use commit::{commit, decide_all, hold};
pub use cron::{CronError, Schedule};
pub use decision::{Action, Decision, Method, RemovedNode};
pub use methods::{Invalidated, decide, displaced_plan, revalidate, try_consolidating};
pub use repair_method::{RebootPlan, RepairHold, reboots, repair_held};

/// Seconds since the Unix epoch, UTC. The caller reads the clock; this module never does.
pub type UnixSeconds = i64;

/// Why a node is disrupted; budgets can be scoped to the voluntary reasons. `Expired` is
/// forceful ([`expiry`]): no budget limits it, and a budget naming it has no effect.
/// `Unhealthy` is node repair: voluntary (budgeted) unless in its legacy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    Drifted,
    Expired,
    Empty,
    Underutilized,
    Unhealthy,
}

impl Reason {
    pub const ALL: [Reason; 5] = [
        Reason::Drifted,
        Reason::Expired,
        Reason::Empty,
        Reason::Underutilized,
        Reason::Unhealthy,
    ];

    /// The name used in NodePool budgets, events and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Drifted => "Drifted",
            Reason::Expired => "Expired",
            Reason::Empty => "Empty",
            Reason::Underutilized => "Underutilized",
            Reason::Unhealthy => "Unhealthy",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsolidationPolicy {
    /// Only nodes with no workload pods are removed.
    WhenEmpty,
    /// Also nodes whose pods fit elsewhere, or on one cheaper replacement.
    #[default]
    WhenEmptyOrUnderutilized,
    /// As `WhenEmptyOrUnderutilized`, but a move is taken only when what it saves justifies
    /// the pods it disrupts (Karpenter v1.x; see [`consolidation::balanced_score`]).
    Balanced,
}

/// A NodePool's disruption settings (`spec.disruption`). `expireAfter` is each NodeClaim's
/// own ([`NodeFacts::expire_after`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolPolicy {
    pub nodepool: String,
    pub consolidation: ConsolidationPolicy,
    /// How long a node's pods must have been unchanged before it is consolidated (empty or
    /// underutilized); `None` is "Never" and turns both methods off.
    pub consolidate_after: Option<Duration>,
    /// Empty means no limit.
    pub budgets: Vec<Budget>,
    /// `minSavingsPerDisruptionCost`: the least a consolidation that launches a replacement
    /// must save per hour for each unit of disruption cost it causes ([`savings`]); 0 is no
    /// minimum.
    pub min_savings_per_disruption_cost: f64,
    /// A static pool (`spec.replicas`): its node count is fixed, so neither emptiness nor
    /// consolidation takes its nodes; drift does, within [`Self::static_size`].
    pub fixed_size: bool,
    /// A static pool's size as its scaler counts it, which its drift must respect
    /// ([`static_drift`]); `None` when the scaler leaves the pool alone (being deleted,
    /// invalid, or refused for gaining or losing `spec.replicas`): nothing would refill a
    /// node taken from it, so drift takes none.
    pub static_size: Option<StaticSize>,
}

/// How many NodeClaims a static pool has, against its replicas and `limits.nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticSize {
    /// `spec.replicas`.
    pub replicas: u64,
    /// `limits.nodes`; `None` is no limit.
    pub node_limit: Option<u64>,
    /// Claims that count towards the replicas: neither being deleted nor marked for
    /// disruption (claims still launching included).
    pub active: u64,
    /// Claims being deleted or marked for disruption: no longer towards the replicas, still
    /// against `limits.nodes` (their instances still run).
    pub leaving: u64,
}

impl StaticSize {
    /// More claims than replicas: the scaler is about to remove some.
    pub fn overscaled(&self) -> bool {
        self.active > self.replicas
    }

    /// How many more claims `limits.nodes` allows now; `None` when unlimited.
    pub fn headroom(&self) -> Option<u64> {
        self.node_limit
            .map(|l| l.saturating_sub(self.active.saturating_add(self.leaving)))
    }
}

impl PoolPolicy {
    /// Karpenter's defaults: consolidate underutilized nodes at once, one budget of 10%.
    pub fn new(nodepool: &str) -> PoolPolicy {
        PoolPolicy {
            nodepool: nodepool.to_string(),
            consolidation: ConsolidationPolicy::WhenEmptyOrUnderutilized,
            consolidate_after: Some(Duration::ZERO),
            budgets: vec![Budget::nodes(BudgetNodes::Percent(10))],
            min_savings_per_disruption_cost: 0.0,
            fixed_size: false,
            static_size: None,
        }
    }
}

/// What disruption needs to know about a node beyond what placement does.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    /// The node's name, as in [`crate::ExistingNode::name`].
    pub name: String,
    /// Registered and initialized; only such nodes are candidates and count towards budgets.
    pub initialized: bool,
    /// When the NodeClaim was created.
    pub created: UnixSeconds,
    /// The NodeClaim's own `spec.expireAfter` (copied from its NodePool at launch); `None`
    /// is "Never".
    pub expire_after: Option<Duration>,
    /// The NodeClaim's `Drifted` condition is True (see [`drift`]).
    pub drifted: bool,
    /// When the `Drifted` condition turned True (its `lastTransitionTime`), if known: drift
    /// replaces the earliest-drifted node first, so a rollout follows the order changes were
    /// made. Unknown sorts after every known time.
    pub drifted_since: Option<UnixSeconds>,
    /// The node (or its NodeClaim) carries `adze.sh/do-not-disrupt: "true"` (or Karpenter's
    /// `karpenter.sh/do-not-disrupt`).
    pub do_not_disrupt: bool,
    /// Already going away (being deleted, tainted `adze.sh/disrupted`) or not Ready: counts
    /// against budgets and is never a candidate.
    pub disrupting: bool,
    /// `disrupting` is set only because the Node is not Ready. Such a node counts against
    /// every reason's budget but `Unhealthy`'s: a repair budget that the unhealthy nodes
    /// themselves used up would hold back the very repairs they need.
    pub disrupting_as_not_ready: bool,
    /// Last time a pod was bound to or removed from the node (its creation if never): the
    /// node is consolidatable once this is `consolidateAfter` in the past.
    pub last_pod_event: UnixSeconds,
    /// End of the Capacity Block the node runs in, if it does: EC2 reclaims such instances
    /// before the block ends, so the node is drained ahead of it ([`expiry`]).
    pub capacity_block_end: Option<UnixSeconds>,
}

impl NodeFacts {
    /// An initialized, undisturbed node created at `created`, expiring after Karpenter's
    /// default 30 days.
    pub fn new(name: &str, created: UnixSeconds) -> NodeFacts {
        NodeFacts {
            name: name.to_string(),
            initialized: true,
            created,
            expire_after: Some(Duration::from_secs(720 * 3600)),
            drifted: false,
            drifted_since: None,
            do_not_disrupt: false,
            disrupting: false,
            disrupting_as_not_ready: false,
            last_pod_event: created,
            capacity_block_end: None,
        }
    }
}

/// What disruption needs to know about a bound pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFacts {
    /// "namespace/name", as [`crate::Pod::key`].
    pub pod: String,
    /// The pod carries `adze.sh/do-not-disrupt: "true"` (or `karpenter.sh/do-not-disrupt`):
    /// its node is not disrupted.
    pub do_not_disrupt: bool,
    /// The annotation's duration form ("4h", Karpenter v1.x): the node is kept only until
    /// this time (the pod's start plus the duration), so a stuck workload cannot pin a node
    /// for ever. Ignored when `do_not_disrupt` is set.
    pub do_not_disrupt_until: Option<UnixSeconds>,
    /// Names of the PodDisruptionBudgets selecting the pod (keys into [`Input::pdbs`]).
    pub pdbs: Vec<String>,
}

impl PodFacts {
    /// Whether do-not-disrupt keeps the pod's node at `now`: indefinitely, or until its
    /// duration has run out since the pod started.
    pub fn protected(&self, now: UnixSeconds) -> bool {
        self.do_not_disrupt || self.do_not_disrupt_until.is_some_and(|until| now < until)
    }
}

/// A PodDisruptionBudget as its status reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdb {
    /// "namespace/name".
    pub name: String,
    /// `status.disruptionsAllowed`: how many selected pods may be evicted now.
    pub disruptions_allowed: u32,
}

/// Everything a disruption decision reads.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// Nodes, bound pods, NodePools (with their instance types: the catalog) and DaemonSets,
    /// exactly as placement sees them. `pending` is ignored: the provisioner owns pending
    /// pods (the controller should not disrupt while some wait for capacity).
    pub snapshot: Snapshot,
    /// Per node; a node without facts is never a candidate (it is still a destination).
    pub nodes: Vec<NodeFacts>,
    /// Per bound pod that has a do-not-disrupt annotation or a PDB; others need no entry.
    pub pods: Vec<PodFacts>,
    pub pdbs: Vec<Pdb>,
    /// Per NodePool; a pool without a policy is never disrupted.
    pub policies: Vec<PoolPolicy>,
    pub now: UnixSeconds,
    /// CapacityBuffers' placeholder pods (never bound, never created). Those the cluster
    /// holds room for now (they fit on its nodes) are demand every method must still place:
    /// emptiness keeps a node whose room they need, and drift and consolidation find them a
    /// place as they do displaced pods, so disruption never undoes what provisioning
    /// launched for a buffer. Those the cluster has no room for are provisioning's to launch.
    pub buffer: Vec<crate::pod::Pod>,
    /// Zones (IDs or names) an ARC zonal shift moves the cluster away from now
    /// ([`crate::zonal_shift::zones_away`]): the nodes there are not voluntarily disrupted
    /// ([`Blocker::ZonalShift`]). The catalog's offerings there are already unavailable, so
    /// no replacement is planned there either.
    pub zones_away: std::collections::BTreeSet<String>,
    /// Static pools (policies with [`PoolPolicy::fixed_size`]) as launchable pools, limits
    /// cleared: what a drifted static node's replacement is planned from. Placement never
    /// launches for them, so they are not in [`Snapshot::nodepools`].
    pub static_pools: Vec<crate::nodepool::NodePool>,
    /// What node repair reads of each node with a NodeClaim (its conditions and status
    /// checks); read only with [`Options::node_repair`] set to
    /// [`repair::RepairMode::Budgeted`]. Empty: nothing is repaired.
    pub health: Vec<repair::NodeHealth>,
    /// NodePools whose drift is held back after failed drift replacements
    /// ([`drift_backoff`]): drift starts no command in them before their `until`. Read by
    /// the budgets (a held pool's `Drifted` allowance is 0) and [`revalidate`].
    pub drift_holds: Vec<drift_backoff::DriftHold>,
    /// Requests a bound pod is planned with when disruption moves it, by pod key
    /// ("namespace/name"): what it will ask for once recreated ([`crate::vpa`], VPA
    /// predictions). Pods without an entry move as they are; pods that stay keep theirs.
    pub moved_requests: BTreeMap<String, crate::resources::Resources>,
}

impl Input {
    pub(crate) fn facts_by_node(&self) -> HashMap<&str, &NodeFacts> {
        self.nodes.iter().map(|f| (f.name.as_str(), f)).collect()
    }

    pub(crate) fn policy(&self, pool: &str) -> Option<&PoolPolicy> {
        self.policies.iter().find(|p| p.nodepool == pool)
    }

    /// The hold on `pool`'s drift at `now`, if any ([`drift_backoff`]).
    pub fn drift_hold(&self, pool: &str) -> Option<&drift_backoff::DriftHold> {
        (self.drift_holds.iter()).find(|h| h.nodepool == pool && self.now < h.until)
    }

    pub(crate) fn pdb_allowance(&self) -> BTreeMap<&str, u32> {
        self.pdbs
            .iter()
            .map(|p| (p.name.as_str(), p.disruptions_allowed))
            .collect()
    }
}

/// Tuning that is not part of a NodePool.
#[derive(Debug, Clone)]
pub struct Options {
    /// A spot node is replaced by a spot node only when at least this many instance types
    /// cheaper than what is removed can hold the pods; the replacement may launch as any of
    /// them, so one type's capacity running out does not interrupt the new node at once.
    pub spot_to_spot_min_types: usize,
    /// Passed to the scheduler for replacement claims.
    pub scheduling: crate::scheduler::Options,
    /// At most this many consolidations per [`decide_all`] call, each decided on the
    /// cluster as the ones before leave it: a wide scale-down is then consolidated in a few
    /// waves instead of one command per wave. Each costs one full consolidation search, so
    /// this bounds the time of a pass (budgets usually bound it first).
    pub consolidations_per_pass: usize,
    /// Karpenter's `TerminateFirstDrift`: a capacity-constrained pool, which cannot launch
    /// a drifted or repaired node's replacement first, deletes the node first and lets the
    /// freed room be refilled: a static pool at its `limits.nodes` (its scaler refills it),
    /// a reserved node whose pool may only use its full reservations ([`reserved_drift`]),
    /// a dynamic pool's node whose pods fit only once it no longer counts against `limits`
    /// ([`terminate_first`]). Off: drift waits until there is room, and repair replaces
    /// only what fits beside the node (a static pool's repair waits at the limit).
    pub terminate_first_drift: bool,
    /// Node repair: `None` is off (Karpenter's `NodeRepair` gate off). `Budgeted` makes it
    /// the first method of [`decide`], under the pools' budgets for `Unhealthy`; `Legacy` is
    /// forceful and carried out by the controller outside the decision, as expiry is, so the
    /// decision leaves it alone.
    pub node_repair: Option<repair::RepairMode>,
    /// `--reboot-for-repair` (Karpenter's `RebootForRepair` gate), with budgeted repair: a
    /// node due for repair has its instance rebooted first ([`reboots`]) and is replaced only
    /// if still unhealthy [`repair::REBOOT_WAIT`] later ([`repair::reboot_step`]).
    pub reboot_for_repair: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            spot_to_spot_min_types: 15,
            scheduling: crate::scheduler::Options::default(),
            consolidations_per_pass: 20,
            terminate_first_drift: false,
            node_repair: None,
            reboot_for_repair: false,
        }
    }
}
