//! The solver's working state: nodes, NodePools, claims under construction, pod groups and
//! topology counts, and the placement loop over them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::fast_hash::{FastMap, FastSet};
use std::sync::Arc;

use super::claim::{Claim, ClaimUpdate, TypeInfo};
use super::explain::{Refusal, Why};
use super::variant::{self, Variant};
use super::{Options, Snapshot, group_pods, name_suffix, placement_order};
use crate::instance_type::InstanceType;
use crate::labels;
use crate::lower_bound;
use crate::nodepool::NodePool;
use crate::pod::{HostPort, Pod};
use crate::requirements::{Requirement, Requirements, Undefined};
use crate::resources::Resources;
use crate::taints::first_untolerated;
use crate::topology::{DomainId, PodTerms, Topology};
use crate::volumes::{Attached, EBS_CSI_DRIVER, VolumeLimits};

/// A NodePool prepared for placement.
pub(super) struct PoolState<'a> {
    pub pool: &'a NodePool,
    /// The pool's node requirements (requirements, template labels, nodepool label).
    pub reqs: Requirements,
    /// Instance types compatible with the pool, cheapest first.
    pub types: Vec<TypeInfo>,
    /// Label keys outside the well-known set that some of the pool's types carry (an
    /// InstanceCatalog's own labels): open on a new node until its type is chosen.
    pub type_keys: BTreeSet<String>,
    /// Whether a DaemonSet holds a host port on a node of some type of the pool (see
    /// [`TypeInfo::daemon_ports`]): only then do a pod's host ports filter types.
    pub daemon_ports: bool,
    /// Capacity of the pool's existing nodes and in-flight claims.
    pub in_use: Resources,
    /// Capacity held back for this run's new claims (largest option of each).
    pub reserved: Resources,
    /// Zones at least one compatible type is offered in.
    pub zones: BTreeSet<String>,
    pub has_min_values: bool,
    pub seq: u64,
    /// The room of the type an ideal fractional plan spends most on for the pending demand:
    /// packing steers pods toward claims whose content approaches this shape, so a claim's
    /// pods end up in proportions an efficient type matches.
    pub ideal_room: Resources,
    /// Per resource, the most room of any type the ideal fractional plan spends a material
    /// share on ([`HULL_SHARE`]): claims grow within types that fit it. When the optimum mixes shapes (a CPU-heavy type for the
    /// CPU, a memory-heavy one for the memory), whole pods of the average shape need a type
    /// between them, which the single most-spent type would rule out.
    pub ideal_hull: Resources,
}

impl PoolState<'_> {
    /// Room under the limits for one claim, given everything else already held.
    pub fn room_for(&self, own_reserved: &Resources) -> Option<BTreeMap<String, i64>> {
        if self.pool.limits.is_empty() {
            return None;
        }
        let held = self.in_use.plus(&self.reserved).minus(own_reserved);
        Some(
            self.pool
                .limits
                .iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(held.get(k))))
                .collect(),
        )
    }
}

pub(super) struct NodeState {
    pub remaining: Resources,
    pub host_ports: Vec<HostPort>,
    /// The node's CSI limits and the volumes attached, kept only for nodes with limits.
    pub attached: Option<Box<(VolumeLimits, Attached)>>,
    pub hostname: DomainId,
    pub placed: Vec<usize>,
}

/// Per (pod group, variant, pool): what does not change while placement runs.
#[derive(Clone)]
pub(super) struct PoolFit {
    /// Pool requirements ∩ the variant's requirements.
    pub reqs: Requirements,
    /// Indices into the pool's types compatible with `reqs`.
    pub types: Vec<u32>,
    /// Zones those types are offered in under `reqs`: where a new claim could go.
    pub zones: Vec<String>,
}

/// Hashes a pool index or a `(pod, pool)` pair packed in a `u64` with one multiply: the keys are small
/// distinct integers, and SipHash on the hot path of candidate checks costs more than it
/// guards against here (the keys are indices, not input strings).
#[derive(Default, Clone, Copy)]
pub(super) struct PairHash;

impl std::hash::BuildHasher for PairHash {
    type Hasher = PairHasher;
    fn build_hasher(&self) -> PairHasher {
        PairHasher(0)
    }
}

pub(super) struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        // The multiply mixes into the high bits; the table indexes by the low ones.
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// The key of a sparse [`AlonePrices`].
fn pair(a: usize, b: usize) -> u64 {
    ((a as u64) << 32) | b as u64
}

/// A variant's pool fits: a table indexed by pool when there are few pools (read for every
/// candidate claim, so an index beats a hash), a map of the pools tried when there are many
/// (groups × pools in full would be a product of two input sizes).
pub(super) enum PoolFits {
    Dense(Vec<Option<Result<PoolFit, Refusal>>>),
    Sparse(HashMap<usize, Result<PoolFit, Refusal>, PairHash>),
}

/// [`Solver::alone_price`]: a flat `pod * pools + pool` table when there are few pools (it
/// is read for most candidate claims), a map of the pairs tried when there are many.
pub(super) enum AlonePrices {
    Dense(Vec<Option<Option<f64>>>),
    Sparse(HashMap<u64, Option<f64>, PairHash>),
}

impl AlonePrices {
    fn new(pods: usize, pools: usize) -> AlonePrices {
        if pools <= DENSE_POOL_FITS {
            AlonePrices::Dense(vec![None; pods * pools])
        } else {
            AlonePrices::Sparse(HashMap::default())
        }
    }

    pub(super) fn get(&self, p: usize, pool: usize, pools: usize) -> Option<Option<f64>> {
        match self {
            AlonePrices::Dense(v) => v[p * pools + pool],
            AlonePrices::Sparse(m) => m.get(&pair(p, pool)).copied(),
        }
    }

    pub(super) fn insert(&mut self, p: usize, pool: usize, pools: usize, price: Option<f64>) {
        match self {
            AlonePrices::Dense(v) => v[p * pools + pool] = Some(price),
            AlonePrices::Sparse(m) => {
                m.insert(pair(p, pool), price);
            }
        }
    }
}

/// Up to this many pools, [`PoolFits`] and [`AlonePrices`] are tables.
const DENSE_POOL_FITS: usize = 32;

impl PoolFits {
    fn new(pools: usize) -> PoolFits {
        if pools <= DENSE_POOL_FITS {
            PoolFits::Dense(Vec::new())
        } else {
            PoolFits::Sparse(HashMap::default())
        }
    }

    fn get(&self, pi: usize) -> Option<&Result<PoolFit, Refusal>> {
        match self {
            PoolFits::Dense(v) => v.get(pi).and_then(Option::as_ref),
            PoolFits::Sparse(m) => m.get(&pi),
        }
    }

    fn insert(&mut self, pi: usize, pools: usize, fit: Result<PoolFit, Refusal>) {
        match self {
            PoolFits::Dense(v) => {
                if v.is_empty() {
                    v.resize_with(pools, || None);
                }
                v[pi] = Some(fit);
            }
            PoolFits::Sparse(m) => {
                m.insert(pi, fit);
            }
        }
    }
}

pub(super) struct VariantState {
    pub variant: Variant,
    /// Per node: 0 unknown, 1 fits statically (labels, taints), 2 does not.
    pub node_ok: Vec<u8>,
    /// Pool → [`Solver::pool_fit`], for the pools tried.
    pub pool_fit: PoolFits,
    /// Spread group → the domains that count for this pod (nodeAffinityPolicy etc.).
    pub eligible: FastMap<usize, Vec<DomainId>>,
    /// [`Solver::candidate_pools`], once asked.
    pub candidates: Option<Option<std::rc::Rc<Vec<usize>>>>,
    /// The claims this variant's hostname terms and the group's host ports have not ruled
    /// out yet.
    pub host_live: HostLive,
}

/// The claims a variant's hostname terms ([`HostTerm`]) have not ruled out, kept across the
/// pods of its group: counts only grow while pods are placed, so a claim ruled out stays
/// ruled out, and each pod looks at the claims still open instead of at every claim. With
/// required hostname anti-affinity among a Deployment's pods every claim holds one of them,
/// and a scan of every claim per pod would make planning quadratic in pods.
///
/// A claim holding one of the group's host ports is ruled out the same way (a claim's ports
/// only grow, and [`Solver::claim_takes`] refuses it): pods that all ask for one host port
/// each need a node of their own, and would otherwise each scan every claim.
pub(super) enum HostLive {
    /// Claims `0..seen` were sorted out; `live` holds those still open, in order.
    List { seen: usize, live: Vec<u32> },
    /// Over [`HOST_LIVE_BUDGET`]: every claim is scanned, as without the list.
    Off,
}

impl Default for HostLive {
    fn default() -> Self {
        HostLive::List {
            seen: 0,
            live: Vec::new(),
        }
    }
}

/// Most claim indices all [`HostLive`] lists hold together (16 MiB): groups × claims is a
/// product of two input sizes, so past it a variant scans every claim.
const HOST_LIVE_BUDGET: usize = 1 << 22;

/// Pools by the one value their requirements pin a label key to (see
/// [`Solver::candidate_pools`]).
#[derive(Default)]
pub(super) struct PoolIndex {
    pub by_value: FastMap<String, Vec<usize>>,
    pub other: Vec<usize>,
}

pub(super) struct PodGroup {
    /// The first pod of the group, whose shared fields static checks read.
    pub rep: usize,
    pub terms: PodTerms,
    /// Topology groups whose selector matches these pods.
    pub matches: Vec<usize>,
    /// Anti-affinity groups these pods match: they may not join those groups' owners.
    pub inverse_anti: Vec<usize>,
    /// Topology keys these pods take part in (own terms or matched groups), sorted.
    pub keys: Vec<String>,
    pub variants: Vec<VariantState>,
    pub any_topology: bool,
}

pub struct Solver<'a> {
    pub(super) snap: &'a Snapshot,
    pub(super) opts: &'a Options,
    pub(super) topo: Topology,
    pub(super) pools: Vec<PoolState<'a>>,
    pub(super) nodes: Vec<NodeState>,
    pub(super) claims: Vec<Claim>,
    /// Per claim, what choosing among claims reads, packed: every pod scores every claim.
    briefs: Vec<Brief>,
    /// Claims by [`Brief::zone`], so a pod whose zone terms refuse a zone skips its claims
    /// without looking at each (see [`ZoneBuckets`]).
    by_zone: ZoneBuckets,
    /// Claim by its hostname domain: a pod with required hostname affinity past its group's
    /// first pod can only join a claim already holding a matching pod, found from the
    /// term's counts instead of by looking at every claim.
    by_host: FastMap<DomainId, u32>,
    pub(super) groups: Vec<PodGroup>,
    pub(super) group_of: Vec<usize>,
    pub(super) taken_names: FastSet<String>,
    /// Where each placed pod went, for recording.
    pub(super) placed_on: Vec<Option<Placement>>,
    /// While the first pod of a hostname self-affinity group is being placed: the whole
    /// group's requests, so its node has room for all of them.
    pub(super) gang: Option<Resources>,
    /// Pending pods per group, in placement order.
    members: Vec<Vec<usize>>,
    /// At `(pod, pool)`: price of the cheapest type that holds the pod alone, for the
    /// marginal-cost rule, once known. Sparse: a table of every pod × every pool would ask
    /// for gigabytes with thousands of pools, while only the pairs tried are ever read.
    pub(super) alone_price: std::cell::RefCell<AlonePrices>,
    /// (pool, topology keys) → the fit of a variant without node requirements: the same
    /// for every group with those keys, and there are many groups (one per Deployment).
    open_fits: std::cell::RefCell<FastMap<(usize, Vec<String>), PoolFit>>,
    /// See [`Solver::compatible_types`].
    pub(super) compatible: std::cell::RefCell<CompatibleTypes>,
    /// Label key → [`PoolIndex`], built when a variant first narrows pools by that key.
    pub(super) pool_index: FastMap<String, std::rc::Rc<PoolIndex>>,
    /// The pending pod [`super::explain::explain`] asks about: each attempt to place it is
    /// checked against every option first, into `considered`.
    pub(super) explain_for: Option<usize>,
    /// Pods placed so far: nothing placement reads changes between two placements.
    placements: u64,
    /// Per group, the last pod that could not be placed: its requests, [`Self::placements`]
    /// then, and why. A pod of the same group and requests (and no volumes, which groups
    /// leave out) fails the same way while nothing has been placed since, so once a pool is
    /// at its limits the many pods left over are not each tried against every claim.
    last_failure: Vec<Option<(Resources, u64, String)>>,
    pub(super) considered: Option<super::explain::Considered>,
    /// Set by [`Solver::claim_accepts`] when the marginal-cost rule refused, to the price it
    /// compared with (see [`super::claim::RefusedPod::alone`]).
    pub(super) marginal_refusal: std::cell::Cell<Option<f64>>,
    /// Entries of all [`HostLive`] lists.
    host_live_entries: usize,
    /// Claims in the order they changed (one entry per pod a claim took): see [`MemoLive`].
    changes: Vec<u32>,
    /// Per pool, its claims in creation order.
    by_pool: Vec<Vec<u32>>,
    /// Per (group, rung, requests) of a group whose refusals are remembered: see [`MemoLive`].
    memo_live: FastMap<(usize, usize, Resources), MemoLive>,
    /// Entries of all [`MemoLive`] lists.
    memo_live_entries: usize,
    /// Scratch marks per claim for [`Solver::memo_claims`] (a mark equal to `memo_stamp` means
    /// listed), so re-listing a changed claim needs no per-list set.
    memo_marks: Vec<u32>,
    memo_stamp: u32,
    /// What every NodePool-managed node (leaving ones included) counts against the
    /// cluster-wide limits, whether or not its pool is in the snapshot.
    pub(super) cluster_in_use: Resources,
    /// What this run's new claims hold against the cluster-wide limits (the sum of the
    /// pools' `reserved`).
    pub(super) cluster_reserved: Resources,
    /// The buffer [`Solver::topology_fit`] narrows a candidate's domains in.
    pub(super) scratch_domains: Vec<DomainId>,
}

/// The claims a kind of pod (group, rung, requests) whose answers [`Solver::memo_ok`] lets
/// be remembered may still be offered. A claim it does not fit, of a pool it cannot use, or
/// that refused it (outright, see [`super::claim::RefusedPod`]) gives the same answer until
/// the claim changes: it leaves the list, and comes back when it changes. Without it every
/// pod scans every claim, and most claims are ones that already refused its kind, so a plan
/// costs pods × claims.
#[derive(Default)]
pub(super) struct MemoLive {
    /// Claims `0..seen` were sorted out.
    seen: usize,
    /// `changes[..cursor]` were taken into account.
    cursor: usize,
    /// The claims below `seen` that may answer, in no particular order (candidates are
    /// ranked by score and index, so the order does not matter).
    live: Vec<u32>,
    /// Over [`HOST_LIVE_BUDGET`]: every claim is scanned.
    off: bool,
}

/// What [`Solver::try_claims`] made of one claim.
#[derive(PartialEq, Eq)]
enum Verdict {
    Candidate,
    /// Refused for a reason that holds until the claim changes.
    Static,
    /// Refused for now.
    Dynamic,
}

/// (pool, the requirements a narrowing changed) → per type: compatible with them.
pub(super) type CompatibleTypes =
    FastMap<(usize, Vec<(String, Option<Requirement>)>), std::rc::Rc<Vec<bool>>>;

/// A claim's requests, the room of its largest growth types and its pool's ideal shape, as
/// [`Solver::try_claims`] reads them for every claim and every pod.
#[derive(Clone, Copy)]
struct Brief {
    requests: [i64; 4],
    max_usable: [i64; 4],
    ideal_cpu: i64,
    ideal_memory: i64,
    /// Extended resources on either side: the plain arrays do not tell whether a pod fits.
    extended: bool,
    /// The one zone the claim's requirements allow, or [`NO_ZONE`].
    zone: DomainId,
}

/// [`Brief::zone`] of a claim not pinned to one zone.
const NO_ZONE: DomainId = DomainId::MAX;

impl Brief {
    fn of(claim: &Claim, ideal: &Resources, topo: &mut Topology) -> Brief {
        let plain = |r: &Resources| [r.cpu, r.memory, r.ephemeral_storage, r.pods];
        let zone = claim
            .reqs
            .get(labels::ZONE)
            .and_then(|r| r.single_value())
            .map_or(NO_ZONE, |z| topo.intern(z));
        Brief {
            zone,
            requests: plain(&claim.requests),
            max_usable: plain(&claim.max_usable),
            ideal_cpu: ideal.cpu,
            ideal_memory: ideal.memory,
            extended: !claim.requests.extended.is_empty() || !claim.max_usable.extended.is_empty(),
        }
    }

    /// [`Resources::fits_with`] of `need` beside the requests in the largest growth room,
    /// for a claim and a need without extended resources.
    fn fits(&self, need: &[i64; 4]) -> bool {
        (0..4).all(|i| self.requests[i].saturating_add(need[i]) <= self.max_usable[i])
    }
}

/// Claim indices by the one zone each is pinned to ([`Brief::zone`]), each list sorted.
#[derive(Default)]
struct ZoneBuckets {
    zones: Vec<(DomainId, Vec<u32>)>,
    /// Claims not pinned to one zone.
    unzoned: Vec<u32>,
}

impl ZoneBuckets {
    fn list(&mut self, zone: DomainId) -> &mut Vec<u32> {
        if zone == NO_ZONE {
            return &mut self.unzoned;
        }
        let at = match self.zones.iter().position(|(z, _)| *z == zone) {
            Some(at) => at,
            None => {
                self.zones.push((zone, Vec::new()));
                self.zones.len() - 1
            }
        };
        &mut self.zones[at].1
    }

    fn insert(&mut self, zone: DomainId, c: u32) {
        let list = self.list(zone);
        if let Err(at) = list.binary_search(&c) {
            list.insert(at, c);
        }
    }

    fn remove(&mut self, zone: DomainId, c: u32) {
        let list = self.list(zone);
        if let Ok(at) = list.binary_search(&c) {
            list.remove(at);
        }
    }
}

/// [`Solver::skip`]'s answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Skip {
    No,
    /// Until the claim changes.
    Always,
    /// For this pod.
    Now,
}

/// A hostname term of a pod that a node or claim already holding matching pods fails:
/// checked on every candidate before the full topology check, which most of them fail.
#[derive(Clone, Copy)]
pub(super) enum HostTerm {
    /// Anti-affinity: no matching pod on the node.
    Anti(usize),
    /// A placed pod's anti-affinity selects this one: none of its owners on the node.
    InverseAnti(usize),
    /// Spread: at most this many matching pods on the node (a new node is always a domain
    /// with none, so the minimum is 0).
    Spread(usize, u32),
}

/// Why an existing node (or in-flight claim) refuses a pod, as data: most nodes refuse most
/// pods, and only `explain` needs the words.
#[derive(Debug, Clone)]
pub(super) enum NodeMiss<'a> {
    /// Cordoned, or on its way out.
    Cordoned,
    Label(crate::requirements::Conflict),
    Taint(&'a crate::taints::Taint),
    /// [`Self::Cordoned`], [`Self::Label`] or [`Self::Taint`], from the cache.
    Static,
    /// Not enough room left for the pod's requests.
    Room,
    /// A hostname topology term rules it out (the full check, [`Self::Topology`], agrees).
    HostTerm,
    /// The pod's host port is taken there.
    HostPort(&'a HostPort),
    Volumes(crate::volumes::LimitExceeded),
    Topology(super::topology_fit::Miss),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    Node(usize),
    Claim(usize),
}

/// What a candidate looks like to the topology checks.
#[derive(Clone, Copy)]
pub(super) enum Target<'r> {
    Node(usize),
    /// A claim already created in this run.
    Claim(usize),
    /// A claim about to be created, with these requirements and a fresh hostname.
    NewClaim(&'r Requirements),
}

impl<'a> Solver<'a> {
    pub fn new(snap: &'a Snapshot, opts: &'a Options) -> Solver<'a> {
        let mut topo = Topology::default();
        let (group_of, reps) = group_pods(&snap.pending);
        let terms: Vec<PodTerms> = reps
            .iter()
            .map(|&i| topo.register(&snap.pending[i]))
            .collect();
        // Bound pods' anti-affinity binds newcomers too (the inverse direction).
        let bound_terms: Vec<PodTerms> = snap
            .bound
            .iter()
            .map(|b| {
                if b.pod.anti_affinity.is_empty() {
                    // Nothing to register (most bound pods): no copy of the pod.
                    return PodTerms::default();
                }
                let mut p = b.pod.clone();
                p.spread.clear();
                p.affinity.clear();
                p.preferred_affinity.clear();
                p.preferred_anti_affinity.clear();
                topo.register(&p)
            })
            .collect();

        let any_pns = super::any_prefer_no_schedule(snap);
        let demand = snap
            .pending
            .iter()
            .fold(Resources::default(), |acc, p| acc.plus(&p.requests));
        let daemons = super::daemons::Daemons::new(&snap.daemonsets);
        let mut pools: Vec<PoolState> = snap
            .nodepools
            .iter()
            .map(|p| prepare_pool(p, &daemons, &demand))
            .collect();
        pools.sort_by(|a, b| {
            b.pool
                .weight
                .cmp(&a.pool.weight)
                .then_with(|| a.pool.name.cmp(&b.pool.name))
        });

        let groups: Vec<PodGroup> = reps
            .iter()
            .zip(terms)
            .map(|(&i, t)| {
                let pod = &snap.pending[i];
                let matches = topo.matching_groups(pod);
                let inverse_anti: Vec<usize> = matches
                    .iter()
                    .copied()
                    .filter(|g| matches!(topo.group(*g).kind, crate::topology::Kind::AntiAffinity))
                    .collect();
                let possible = |term: &Requirements| {
                    pools.iter().any(|ps| {
                        ps.reqs.compatible(term, Undefined::WellKnownOpen) && {
                            let mut r = ps.reqs.clone();
                            r.add_all(term);
                            ps.types.iter().any(|t| type_compatible(&t.it, &r, None))
                        }
                    }) || snap
                        .nodes
                        .iter()
                        .any(|n| n.requirements.compatible(term, Undefined::Absent))
                };
                let ignore = opts.preference_policy == super::PreferencePolicy::Ignore;
                let variants = variant::ladder(pod, &t, any_pns, ignore, &possible)
                    .into_iter()
                    .map(|v| VariantState {
                        variant: v,
                        // Sized on first use: groups × nodes up front is a product
                        // of two input sizes, and most groups never look at nodes.
                        node_ok: Vec::new(),
                        pool_fit: PoolFits::new(pools.len()),
                        eligible: FastMap::default(),
                        candidates: None,
                        host_live: HostLive::default(),
                    })
                    .collect();
                let own = t
                    .spread_hard
                    .iter()
                    .chain(&t.spread_soft)
                    .chain(&t.affinity)
                    .chain(&t.anti_affinity)
                    .chain(t.preferred_affinity.iter().map(|(_, g)| g))
                    .chain(t.preferred_anti_affinity.iter().map(|(_, g)| g));
                let keys: BTreeSet<String> = own
                    .chain(&matches)
                    .map(|g| topo.group(*g).key.clone())
                    .collect();
                PodGroup {
                    rep: i,
                    any_topology: !keys.is_empty(),
                    keys: keys.into_iter().collect(),
                    terms: t,
                    matches,
                    inverse_anti,
                    variants,
                }
            })
            .collect();

        let node_index: FastMap<&str, usize> = snap
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let ebs_by_type = ebs_limits_by_type(&snap.nodes, &pools);
        let mut nodes: Vec<NodeState> = snap
            .nodes
            .iter()
            .map(|n| NodeState {
                remaining: n.allocatable.clone(),
                host_ports: Vec::new(),
                attached: node_volume_limits(n, &ebs_by_type)
                    .map(|l| Box::new((l, Attached::default()))),
                hostname: topo.intern(&n.name),
                placed: Vec::new(),
            })
            .collect();
        // Bound pods: charge their nodes and count them in every group they match.
        let mut match_cache: FastMap<(&str, &BTreeMap<String, String>), Vec<usize>> =
            FastMap::default();
        // Per node, its single-valued labels as domains: the same for all its pods.
        let mut node_ids: Vec<Option<Vec<(String, DomainId)>>> = vec![None; snap.nodes.len()];
        for (b, bt) in snap.bound.iter().zip(&bound_terms) {
            let Some(&ni) = node_index.get(b.node.as_str()) else {
                continue;
            };
            nodes[ni].remaining.sub(&b.pod.requests);
            nodes[ni]
                .host_ports
                .extend(b.pod.host_ports.iter().cloned());
            if let Some(a) = nodes[ni].attached.as_mut() {
                a.1.add(&a.0, &b.pod.volumes);
            }
            let matches = match_cache
                .entry((b.pod.namespace.as_str(), &b.pod.labels))
                .or_insert_with(|| topo.matching_groups(&b.pod))
                .clone();
            if matches.is_empty() && bt.anti_affinity.is_empty() {
                continue; // counts nowhere
            }
            let node = &snap.nodes[ni];
            let ids = node_ids[ni].get_or_insert_with(|| {
                node.requirements
                    .iter()
                    .filter_map(|r| r.single_value().map(|v| (r.key.clone(), v.to_string())))
                    .map(|(k, v)| {
                        let id = topo.intern(&v);
                        (k, id)
                    })
                    .collect()
            });
            let hostname = nodes[ni].hostname;
            topo.record(&matches, &bt.anti_affinity, |key| {
                if key == labels::HOSTNAME {
                    return Some(hostname);
                }
                ids.iter().find(|(k, _)| k == key).map(|(_, id)| *id)
            });
        }
        // Every node of a pool counts against its limits, leaving ones included: until they
        // are gone, a replacement comes on top of them.
        for p in pools.iter_mut() {
            for n in snap.nodes.iter().chain(&snap.leaving) {
                if n.nodepool.as_deref() == Some(p.pool.name.as_str()) {
                    p.in_use.add(&crate::nodepool::limit_usage(&n.capacity));
                }
            }
        }
        let mut cluster_in_use = Resources::default();
        if !opts.cluster_limits.is_empty() {
            for n in snap.nodes.iter().chain(&snap.leaving) {
                if n.nodepool.is_some() {
                    cluster_in_use.add(&crate::nodepool::limit_usage(&n.capacity));
                }
            }
        }
        let mut taken_names: FastSet<String> = snap.nodes.iter().map(|n| n.name.clone()).collect();
        taken_names.extend(opts.reserved_names.iter().cloned());

        Solver {
            snap,
            opts,
            topo,
            pools,
            nodes,
            claims: Vec::new(),
            briefs: Vec::new(),
            by_zone: ZoneBuckets::default(),
            by_host: FastMap::default(),
            groups,
            group_of,
            taken_names,
            placed_on: vec![None; snap.pending.len()],
            gang: None,
            members: Vec::new(),
            alone_price: std::cell::RefCell::new(AlonePrices::new(
                snap.pending.len(),
                snap.nodepools.len(),
            )),
            open_fits: Default::default(),
            compatible: Default::default(),
            pool_index: FastMap::default(),
            explain_for: None,
            placements: 0,
            last_failure: Vec::new(),
            considered: None,
            marginal_refusal: std::cell::Cell::new(None),
            host_live_entries: 0,
            changes: Vec::new(),
            by_pool: vec![Vec::new(); snap.nodepools.len()],
            memo_live: FastMap::default(),
            memo_live_entries: 0,
            memo_marks: Vec::new(),
            memo_stamp: 0,
            cluster_in_use,
            cluster_reserved: Resources::default(),
            scratch_domains: Vec::new(),
        }
    }

    /// Room for one claim of pool `pi` holding `own_reserved`, given everything else
    /// already held: per key the smaller of what the pool's limits and the cluster-wide
    /// limits leave (None: neither limits anything).
    pub(super) fn room_for(
        &self,
        pi: usize,
        own_reserved: &Resources,
    ) -> Option<BTreeMap<String, i64>> {
        let mut room = self.pools[pi].room_for(own_reserved);
        if let Some(cluster) = self.cluster_room(own_reserved) {
            let r = room.get_or_insert_with(BTreeMap::new);
            for (k, left) in cluster {
                r.entry(k)
                    .and_modify(|v| *v = (*v).min(left))
                    .or_insert(left);
            }
        }
        room
    }

    /// What the cluster-wide limits leave for one claim holding `own_reserved` (None: no
    /// cluster-wide limits).
    pub(super) fn cluster_room(&self, own_reserved: &Resources) -> Option<BTreeMap<String, i64>> {
        if self.opts.cluster_limits.is_empty() {
            return None;
        }
        let held = self
            .cluster_in_use
            .plus(&self.cluster_reserved)
            .minus(own_reserved);
        Some(
            self.opts
                .cluster_limits
                .iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(held.get(k))))
                .collect(),
        )
    }

    /// Places every pending pod it can; returns the others with reasons, in pod order.
    pub fn place_all(&mut self) -> Vec<(String, String)> {
        let mut queue = placement_order(&self.snap.pending);
        self.members = vec![Vec::new(); self.groups.len()];
        for &p in &queue {
            self.members[self.group_of[p]].push(p);
        }
        let mut failed: Vec<(usize, String)> = Vec::new();
        // Pods whose required affinity points at pods placed later in the order need a
        // second pass; stop as soon as a pass places nothing.
        for _pass in 0..4 {
            let mut progress = false;
            for &p in &queue {
                if self.placed_on[p].is_some() {
                    continue;
                }
                let leader = self.gang_leader(p);
                let mut placed = self.place(p);
                if leader && placed.is_err() {
                    placed = self.place_part_of_gang(p);
                }
                match placed {
                    Ok(()) => progress = true,
                    Err(reason) => failed.push((p, reason)),
                }
                self.gang = None;
                if leader && self.placed_on[p].is_some() {
                    // Co-located pods follow their first member at once, before other pods
                    // take the room kept for them.
                    let g = self.group_of[p];
                    for q in self.members[g].clone() {
                        if self.placed_on[q].is_none()
                            && q != p
                            && let Err(reason) = self.place(q)
                        {
                            failed.push((q, reason));
                        }
                    }
                }
            }
            if failed.is_empty() || !progress {
                break;
            }
            queue = failed.drain(..).map(|(p, _)| p).collect();
        }
        failed.retain(|(p, _)| self.placed_on[*p].is_none());
        failed.sort_by_key(|(p, _)| *p);
        failed.dedup_by_key(|(p, _)| *p);
        failed
            .into_iter()
            .map(|(p, r)| (self.snap.pending[p].key(), r))
            .collect()
    }

    /// Whether `p` is the first pod of a group that must share one node (required hostname
    /// affinity matching itself, nothing matched yet). If so, sets [`Self::gang`].
    fn gang_leader(&mut self, p: usize) -> bool {
        let g = self.group_of[p];
        let group = &self.groups[g];
        let co_located = group.terms.affinity.iter().any(|&a| {
            let t = self.topo.group(a);
            t.is_per_node() && t.total() == 0 && group.matches.contains(&a)
        });
        if !co_located || self.members[g].len() < 2 {
            return false;
        }
        let mut total = Resources::default();
        for &q in &self.members[g] {
            if self.placed_on[q].is_none() {
                total.add(&self.snap.pending[q].requests);
            }
        }
        self.gang = Some(total);
        true
    }

    /// The group led by `p` does not fit one node whole. kube-scheduler places such pods one
    /// at a time, so as many as one node holds run and the rest stay pending; here the leader
    /// is retried with room kept for half as many followers each time (down to none), and the
    /// followers then fill its node as far as they fit.
    fn place_part_of_gang(&mut self, p: usize) -> Result<(), String> {
        let g = self.group_of[p];
        let rest: Vec<usize> = self.members[g]
            .iter()
            .copied()
            .filter(|&q| q != p && self.placed_on[q].is_none())
            .collect();
        let mut k = rest.len() / 2;
        loop {
            let mut total = self.snap.pending[p].requests.clone();
            for &q in &rest[..k] {
                total.add(&self.snap.pending[q].requests);
            }
            self.gang = Some(total);
            let placed = self.place(p);
            if placed.is_ok() || k == 0 {
                self.gang = None;
                return placed;
            }
            k /= 2;
        }
    }

    /// The requests capacity checks use for pod `p`: its own, or its group's while it leads.
    pub(super) fn need(&self, p: usize) -> &Resources {
        self.gang.as_ref().unwrap_or(&self.snap.pending[p].requests)
    }

    fn place(&mut self, p: usize) -> Result<(), String> {
        let g = self.group_of[p];
        let repeatable = self.gang.is_none()
            && self.explain_for != Some(p)
            && self.snap.pending[p].volumes.is_empty();
        if repeatable
            && let Some(Some((requests, at, why))) = self.last_failure.get(g)
            && *at == self.placements
            && *requests == self.snap.pending[p].requests
        {
            return Err(why.clone());
        }
        let result = self.place_uncached(p, g);
        if repeatable && let Err(why) = &result {
            if self.last_failure.len() <= g {
                self.last_failure.resize(g + 1, None);
            }
            self.last_failure[g] = Some((
                self.snap.pending[p].requests.clone(),
                self.placements,
                why.clone(),
            ));
        }
        result
    }

    fn place_uncached(&mut self, p: usize, g: usize) -> Result<(), String> {
        let mut last = String::new();
        for vi in 0..self.groups[g].variants.len() {
            if self.explain_for == Some(p) {
                // The last attempt's checks stand: the one that placed the pod, or the
                // loosest rung of its last try.
                self.considered = Some(self.consider(p, g, vi));
            }
            if let Some((n, pin)) = self.try_nodes(p, g, vi) {
                debug_assert!(pin.is_none() || pin.as_ref().is_some_and(|r| r.is_empty()));
                self.commit_node(p, g, n);
                return Ok(());
            }
            if let Some((c, update)) = self.try_claims(p, g, vi) {
                self.commit_claim(p, g, c, update);
                return Ok(());
            }
            match self.new_claim(p, g, vi) {
                Ok(claim) => {
                    let ideal = &self.pools[claim.pool].ideal_room;
                    let brief = Brief::of(&claim, ideal, &mut self.topo);
                    self.claims.push(claim);
                    let c = self.claims.len() - 1;
                    self.by_zone.insert(brief.zone, c as u32);
                    self.by_host.insert(self.claims[c].hostname, c as u32);
                    self.briefs.push(brief);
                    let pool = self.claims[c].pool;
                    self.by_pool[pool].push(c as u32);
                    self.pools[pool].reserved.add(&self.claims[c].reserved);
                    self.cluster_reserved.add(&self.claims[c].reserved);
                    self.record(p, g, Placement::Claim(c));
                    return Ok(());
                }
                Err(reason) => {
                    let relaxed = self.groups[g].variants[vi].variant.relaxed;
                    last = if relaxed > 0 {
                        format!("{reason} (even after relaxing {relaxed} preference(s))")
                    } else {
                        reason
                    };
                }
            }
        }
        Err(last)
    }

    /// Static fit of a variant on a node: cordon, labels, taints.
    fn node_static_ok(&mut self, g: usize, vi: usize, n: usize) -> bool {
        let node_ok = &mut self.groups[g].variants[vi].node_ok;
        if node_ok.is_empty() {
            node_ok.resize(self.snap.nodes.len(), 0);
        }
        let cached = node_ok[n];
        if cached != 0 {
            return cached == 1;
        }
        let ok = self.node_static_miss(g, vi, n).is_none();
        self.groups[g].variants[vi].node_ok[n] = if ok { 1 } else { 2 };
        ok
    }

    /// Why node `n` refuses the variant whatever its room: cordoned (or leaving), a label the
    /// pod requires, a taint it does not tolerate. Uncached; [`Self::node_static_ok`] keeps
    /// the answer.
    pub(super) fn node_static_miss(&self, g: usize, vi: usize, n: usize) -> Option<NodeMiss<'a>> {
        let node = &self.snap.nodes[n];
        let v = &self.groups[g].variants[vi].variant;
        let pod = self.rep_pod(g);
        if node.unschedulable {
            return Some(NodeMiss::Cordoned);
        }
        if let Some(c) = node
            .requirements
            .conflict_with(&v.requirements, Undefined::Absent)
        {
            return Some(NodeMiss::Label(c));
        }
        first_untolerated(&node.taints, &pod.tolerations, v.strict_taints).map(NodeMiss::Taint)
    }

    /// Why node `n` refuses pod `p` under variant `vi` now, or None when it takes the pod:
    /// [`Self::try_nodes`]' test, cheapest checks first.
    pub(super) fn node_miss(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        n: usize,
        host_terms: &[HostTerm],
    ) -> Option<NodeMiss<'a>> {
        let pod: &'a Pod = &self.snap.pending[p];
        if !self.need(p).fits_in(&self.nodes[n].remaining) {
            return Some(NodeMiss::Room);
        }
        if self.host_blocked(host_terms, self.nodes[n].hostname) {
            return Some(NodeMiss::HostTerm);
        }
        if !self.node_static_ok(g, vi, n) {
            return Some(NodeMiss::Static);
        }
        if let Some(hp) = pod
            .host_ports
            .iter()
            .find(|hp| self.nodes[n].host_ports.iter().any(|o| o.conflicts(hp)))
        {
            return Some(NodeMiss::HostPort(hp));
        }
        if !pod.volumes.is_empty()
            && let Some(a) = &self.nodes[n].attached
            && let Err(e) = a.1.fits(&a.0, &pod.volumes)
        {
            return Some(NodeMiss::Volumes(e));
        }
        self.topology_fit(g, vi, Target::Node(n))
            .err()
            .map(NodeMiss::Topology)
    }

    pub(super) fn rep_pod(&self, g: usize) -> &'a Pod {
        &self.snap.pending[self.groups[g].rep]
    }

    /// The variant's hostname terms (see [`HostTerm`]).
    pub(super) fn host_terms(&self, g: usize, vi: usize) -> Vec<HostTerm> {
        let group = &self.groups[g];
        if !group.any_topology {
            return Vec::new();
        }
        let v = &group.variants[vi].variant;
        let on_host = |t: usize| self.topo.group(t).key == labels::HOSTNAME;
        let mut out: Vec<HostTerm> = Vec::new();
        for &s in v.spread.iter().filter(|&&s| on_host(s)) {
            let crate::topology::Kind::Spread { max_skew, .. } = self.topo.group(s).kind else {
                continue;
            };
            let self_match = u32::from(group.matches.contains(&s));
            match max_skew.checked_sub(self_match) {
                Some(limit) => out.push(HostTerm::Spread(s, limit)),
                // Exceeded on every node, new ones included: the full check says so.
                None => return Vec::new(),
            }
        }
        out.extend(
            v.anti_affinity
                .iter()
                .filter(|&&a| on_host(a))
                .map(|&a| HostTerm::Anti(a)),
        );
        out.extend(
            group
                .inverse_anti
                .iter()
                .filter(|&&a| on_host(a))
                .map(|&a| HostTerm::InverseAnti(a)),
        );
        out
    }

    /// Whether a hostname term rules out the node (or claim) with hostname domain `host`:
    /// then [`Self::topology_fit`] fails there too.
    fn host_blocked(&self, terms: &[HostTerm], host: DomainId) -> bool {
        terms.iter().any(|t| match *t {
            HostTerm::Anti(a) => self.topo.group(a).count(host) > 0,
            HostTerm::InverseAnti(a) => self.topo.group(a).owners_in(host) > 0,
            HostTerm::Spread(s, limit) => self.topo.group(s).count(host) > limit,
        })
    }

    fn try_nodes(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
    ) -> Option<(usize, Option<Requirements>)> {
        let host_terms = self.host_terms(g, vi);
        (0..self.nodes.len())
            .find(|&n| self.node_miss(p, g, vi, n, &host_terms).is_none())
            .map(|n| (n, None))
    }

    fn commit_node(&mut self, p: usize, g: usize, n: usize) {
        let pod = &self.snap.pending[p];
        self.nodes[n].remaining.sub(&pod.requests);
        self.nodes[n]
            .host_ports
            .extend(pod.host_ports.iter().cloned());
        if let Some(a) = self.nodes[n].attached.as_mut() {
            a.1.add(&a.0, &pod.volumes);
        }
        self.nodes[n].placed.push(p);
        self.record(p, g, Placement::Node(n));
    }

    /// Among the claims that can take the pod, the one it leaves best balanced: the pod's
    /// requests should push the claim's content toward the shape of its pool's ideal type,
    /// so that memory-heavy and CPU-heavy pods share nodes instead of each filling their own
    /// with the other resource idle. Claims are scored on a cheap capacity test first and
    /// tried in score order; ties go to the older claim.
    fn try_claims(&mut self, p: usize, g: usize, vi: usize) -> Option<(usize, ClaimUpdate)> {
        let need = self.need(p).clone();
        let plain = [need.cpu, need.memory, need.ephemeral_storage, need.pods];
        let host_terms = self.host_terms(g, vi);
        // Claims of pools the label index rules out would be refused by `claim_accepts`.
        let pools = self.candidate_pools(g, vi);
        // A refusal for EBS volumes depends on which claims the pod attaches, not only on its
        // group and requests: such pods neither read nor leave remembered refusals.
        let memo = self.memo_ok(g) && self.snap.pending[p].volumes.is_empty();
        let filtered = pools.is_some() || memo;
        let ports = &self.rep_pod(g).host_ports;
        let live = self.live_claims(g, vi, &host_terms);
        let mut memo_list = if memo && live.is_none() {
            self.memo_claims(g, vi, &need, pools.as_deref().map(Vec::as_slice))
        } else {
            None
        };
        // Most claims considered become candidates: sized for all of them up front, as
        // growing the list one doubling at a time was a few per cent of a large plan.
        let considered = match (&live, &memo_list) {
            (Some(l), _) => l.len(),
            (None, Some(m)) => m.live.len(),
            (None, None) => self.briefs.len(),
        };
        let mut candidates: Vec<(u64, usize)> = Vec::with_capacity(considered);
        let need_extended = !need.extended.is_empty();
        let check_host = live.is_none() && !host_terms.is_empty();
        let check_ports = live.is_none() && !ports.is_empty();
        // Required hostname affinity past a group's first pod: only a claim already holding
        // a matching pod can pass the topology check, so the others are no candidates.
        let host_affinity: Vec<usize> = {
            let group = &self.groups[g];
            group.variants[vi]
                .variant
                .affinity
                .iter()
                .copied()
                .filter(|&a| {
                    let t = self.topo.group(a);
                    t.key == labels::HOSTNAME && !(t.total() == 0 && group.matches.contains(&a))
                })
                .collect()
        };
        // Claims known to sit in one zone (or other domain) where the pod's terms fail:
        // refused by the topology check, so no candidates (most refusals were these).
        let mut zone_check = if self.groups[g].any_topology {
            self.zone_check(g, vi)
        } else {
            None
        };
        // Zones whose claims all fail the zone terms, when every claim is looked at: their
        // claims are passed over whole (`consider` would refuse each, and its verdicts are
        // not kept on this path; candidates are ranked by (score, claim), so the order
        // claims are looked at in does not matter).
        // Required hostname affinity when every claim is looked at: only the claims holding
        // a pod the (first) term matches can be candidates (`consider` refuses the rest).
        let host_affine: Option<Vec<u32>> = match (&live, &memo_list, host_affinity.first()) {
            (None, None, Some(&a)) => Some(
                self.topo
                    .group(a)
                    .counted_domains()
                    .filter_map(|d| self.by_host.get(&d).copied())
                    .collect(),
            ),
            _ => None,
        };
        let refused_zones: Option<Vec<bool>> = match (&live, &memo_list, zone_check.as_mut()) {
            (None, None, Some(zc)) => Some(
                self.by_zone
                    .zones
                    .iter()
                    .map(|(zone, _)| self.zone_refuses(g, vi, *zone, zc))
                    .collect(),
            ),
            _ => None,
        };
        let mut consider = |c: usize| -> Verdict {
            let b = &self.briefs[c];
            let fits = if b.extended || need_extended {
                let claim = &self.claims[c];
                claim.requests.fits_with(&need, &claim.max_usable)
            } else {
                b.fits(&plain)
            };
            if !fits {
                return Verdict::Static;
            }
            if filtered {
                match self.skip(c, p, g, vi, &need, pools.as_deref(), memo) {
                    Skip::No => {}
                    Skip::Always => return Verdict::Static,
                    Skip::Now => return Verdict::Dynamic,
                }
            }
            if host_affinity
                .iter()
                .any(|&a| self.topo.group(a).count(self.claims[c].hostname) == 0)
            {
                return Verdict::Dynamic;
            }
            if (check_host && self.host_blocked(&host_terms, self.claims[c].hostname))
                || (check_ports && ports_clash(ports, &self.claims[c].host_ports))
            {
                return Verdict::Dynamic;
            }
            if let Some(zc) = zone_check.as_mut()
                && b.zone != NO_ZONE
                && self.zone_refuses(g, vi, b.zone, zc)
            {
                return Verdict::Dynamic;
            }
            let score = if b.ideal_cpu > 0 && b.ideal_memory > 0 {
                let fc = (b.requests[0] + need.cpu) as f64 / b.ideal_cpu as f64;
                let fm = (b.requests[1] + need.memory) as f64 / b.ideal_memory as f64;
                ((fc - fm).abs() * 1e6) as u64
            } else {
                0
            };
            candidates.push((score, c));
            Verdict::Candidate
        };
        match (&live, memo_list.as_mut()) {
            (Some(l), _) => l.iter().for_each(|&c| {
                consider(c as usize);
            }),
            (None, Some(m)) => m.live.retain(|&c| consider(c as usize) != Verdict::Static),
            (None, None) if let Some(list) = &host_affine => list.iter().for_each(|&c| {
                consider(c as usize);
            }),
            (None, None) if let Some(refused) = &refused_zones => {
                for ((_, list), _) in self.by_zone.zones.iter().zip(refused).filter(|(_, r)| !**r) {
                    list.iter().for_each(|&c| {
                        consider(c as usize);
                    });
                }
                self.by_zone.unzoned.iter().for_each(|&c| {
                    consider(c as usize);
                });
            }
            (None, None) => (0..self.briefs.len()).for_each(|c| {
                consider(c);
            }),
        }
        if let Some(live) = live {
            self.groups[g].variants[vi].host_live = HostLive::List {
                seen: self.claims.len(),
                live,
            };
        }
        if let Some(m) = memo_list {
            self.memo_live_entries += m.live.len();
            self.memo_live.insert((g, vi, need.clone()), m);
        }
        // Usually the best candidate takes the pod: try it before ordering the rest.
        let best = (0..candidates.len()).min_by_key(|&i| candidates[i])?;
        let (_, c) = candidates.swap_remove(best);
        if let Some(u) = self.claim_accepts(p, g, vi, c) {
            return Some((c, u));
        }
        if memo {
            let alone = self.marginal_refusal.get();
            self.claims[c].refuse(g, vi, &need, alone);
        }
        // The rest in (score, claim) order; a heap, as often only a few are tried.
        let mut rest: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
            candidates.into_iter().map(std::cmp::Reverse).collect();
        while let Some(std::cmp::Reverse((_, c))) = rest.pop() {
            // Asked again: a refusal by the marginal-cost rule is known to apply only once
            // this pod's own price is worked out, which the claims tried so far may have done.
            if memo && self.passed_over(c, p, g, vi, &need, None, memo) {
                continue;
            }
            if let Some(u) = self.claim_accepts(p, g, vi, c) {
                return Some((c, u));
            }
            if memo {
                let alone = self.marginal_refusal.get();
                self.claims[c].refuse(g, vi, &need, alone);
            }
        }
        None
    }

    /// The claims `host_terms` (the variant's) and the group's host ports leave open,
    /// brought up to date (see [`HostLive`]), taken out of the variant for
    /// [`Self::try_claims`] to put back; `None` when there are no such terms or ports, or the
    /// lists are over their budget: then every claim is a candidate.
    fn live_claims(&mut self, g: usize, vi: usize, host_terms: &[HostTerm]) -> Option<Vec<u32>> {
        let ports = &self.rep_pod(g).host_ports;
        if host_terms.is_empty() && ports.is_empty() {
            return None;
        }
        let state = std::mem::replace(&mut self.groups[g].variants[vi].host_live, HostLive::Off);
        let HostLive::List { seen, mut live } = state else {
            return None;
        };
        let blocked = |c: usize| {
            let claim = &self.claims[c];
            ports_clash(ports, &claim.host_ports) || self.host_blocked(host_terms, claim.hostname)
        };
        let before = live.len();
        live.retain(|&c| !blocked(c as usize));
        for c in seen..self.claims.len() {
            if !blocked(c) {
                // Claim indices fit in u32: there are at most as many claims as pods.
                live.push(c as u32);
            }
        }
        self.host_live_entries = self.host_live_entries - before + live.len();
        if self.host_live_entries > HOST_LIVE_BUDGET {
            self.host_live_entries -= live.len();
            return None;
        }
        Some(live)
    }

    /// Whether [`Self::try_claims`] skips claim `c` for pod `p` of group `g` on rung `vi`:
    /// its pool is not among the candidates, or it refused such a pod since it last changed
    /// (see [`super::claim::RefusedPod`]).
    #[allow(clippy::too_many_arguments)]
    fn passed_over(
        &self,
        c: usize,
        p: usize,
        g: usize,
        vi: usize,
        need: &Resources,
        pools: Option<&Vec<usize>>,
        memo: bool,
    ) -> bool {
        self.skip(c, p, g, vi, need, pools, memo) != Skip::No
    }

    /// [`Self::passed_over`], and whether the answer holds until the claim changes
    /// ([`Skip::Always`]) or may differ for another pod of the same requests ([`Skip::Now`]:
    /// a refusal by the marginal-cost rule on a group of several rungs).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn skip(
        &self,
        c: usize,
        p: usize,
        g: usize,
        vi: usize,
        need: &Resources,
        pools: Option<&Vec<usize>>,
        memo: bool,
    ) -> Skip {
        let claim = &self.claims[c];
        if pools.is_some_and(|ps| ps.binary_search(&claim.pool).is_err()) {
            return Skip::Always;
        }
        if !memo || claim.refused.is_empty() {
            return Skip::No;
        }
        let one_rung = self.groups[g].variants.len() == 1;
        let mut out = Skip::No;
        for r in &claim.refused {
            if r.group != g || r.variant != vi || r.need != *need {
                continue;
            }
            match r.alone {
                None => return Skip::Always,
                // One rung: the pod's own price, whenever worked out, is this one.
                Some(_) if one_rung => return Skip::Always,
                // Skipping must not skip working out the pod's price on this rung.
                Some(a) => {
                    let pools = self.pools.len();
                    if self.alone_price.borrow().get(p, claim.pool, pools) == Some(Some(a)) {
                        out = Skip::Now;
                    }
                }
            }
        }
        out
    }

    /// The [`MemoLive`] list of pod kind (`g`, `vi`, `need`), brought up to date with the
    /// claims made and changed since it was last read, taken out of the map for
    /// [`Self::try_claims`] to put back; `None` over the budget (then every claim is scanned).
    fn memo_claims(
        &mut self,
        g: usize,
        vi: usize,
        need: &Resources,
        pools: Option<&[usize]>,
    ) -> Option<MemoLive> {
        let key = (g, vi, need.clone());
        let mut m = match self.memo_live.remove(&key) {
            Some(m) => {
                self.memo_live_entries -= m.live.len();
                m
            }
            None => MemoLive::default(),
        };
        if m.off {
            self.memo_live.insert(key, m);
            return None;
        }
        let n = self.claims.len();
        let in_pools =
            |c: u32| pools.is_none_or(|ps| ps.binary_search(&self.claims[c as usize].pool).is_ok());
        if self.changes.len() - m.cursor > m.seen {
            // More changes than claims: listing every claim again is cheaper.
            m.live.clear();
            match pools {
                Some(ps) => {
                    for &pi in ps {
                        let list = &self.by_pool[pi];
                        let end = list.partition_point(|&c| (c as usize) < m.seen);
                        m.live.extend_from_slice(&list[..end]);
                    }
                }
                None => m.live.extend(0..m.seen as u32),
            }
        } else if m.cursor < self.changes.len() {
            self.memo_marks.resize(n, 0);
            self.memo_stamp = self.memo_stamp.wrapping_add(1);
            if self.memo_stamp == 0 {
                self.memo_marks.iter_mut().for_each(|x| *x = 0);
                self.memo_stamp = 1;
            }
            let stamp = self.memo_stamp;
            for &c in &m.live {
                self.memo_marks[c as usize] = stamp;
            }
            for &c in &self.changes[m.cursor..] {
                if (c as usize) < m.seen && self.memo_marks[c as usize] != stamp && in_pools(c) {
                    self.memo_marks[c as usize] = stamp;
                    m.live.push(c);
                }
            }
        }
        m.cursor = self.changes.len();
        match pools {
            Some(ps) => {
                for &pi in ps {
                    let list = &self.by_pool[pi];
                    let start = list.partition_point(|&c| (c as usize) < m.seen);
                    m.live.extend_from_slice(&list[start..]);
                }
            }
            None => m.live.extend(m.seen as u32..n as u32),
        }
        m.seen = n;
        if self.memo_live_entries + m.live.len() > HOST_LIVE_BUDGET {
            m.live = Vec::new();
            m.off = true;
            self.memo_live.insert(key, m);
            return None;
        }
        Some(m)
    }

    /// Whether a claim's answer to a pod of group `g` depends only on the claim, the group,
    /// the rung and the pod's requests (and, for the marginal-cost rule, the pod's price of
    /// a node of its own: see [`super::claim::RefusedPod`]), so a refusal can be remembered
    /// until the claim changes: no topology terms (their counts change as other pods land),
    /// no co-location leader's room, and no cluster-wide limits (what they leave changes
    /// with every pool's claims). A NodePool's own limits are allowed: the room they leave a
    /// claim only shrinks as the pool's other claims grow, which cannot turn a refusal into
    /// a fit, and when it grows instead (a claim moving to a type with less of a limited
    /// resource) [`Self::commit_claim`] forgets the pool's refusals.
    fn memo_ok(&self, g: usize) -> bool {
        let group = &self.groups[g];
        self.gang.is_none() && !group.any_topology && self.opts.cluster_limits.is_empty()
    }

    fn commit_claim(&mut self, p: usize, g: usize, c: usize, update: ClaimUpdate) {
        let pool = self.claims[c].pool;
        let old_reserved = self.claims[c].reserved.clone();
        self.pools[pool].reserved.sub(&old_reserved);
        self.cluster_reserved.sub(&old_reserved);
        let pod = &self.snap.pending[p];
        self.claims[c].apply(update, pod, p, &self.pools[pool].types);
        let brief = Brief::of(
            &self.claims[c],
            &self.pools[pool].ideal_room,
            &mut self.topo,
        );
        if brief.zone != self.briefs[c].zone {
            self.by_zone.remove(self.briefs[c].zone, c as u32);
            self.by_zone.insert(brief.zone, c as u32);
        }
        self.briefs[c] = brief;
        self.changes.push(c as u32);
        self.pools[pool].reserved.add(&self.claims[c].reserved);
        self.cluster_reserved.add(&self.claims[c].reserved);
        let limits = &self.pools[pool].pool.limits;
        let new_reserved = &self.claims[c].reserved;
        if limits
            .keys()
            .any(|k| new_reserved.get(k) < old_reserved.get(k))
        {
            self.forget_pool_refusals(pool, c);
        }
        self.record(p, g, Placement::Claim(c));
    }

    /// The room pool `pool`'s limits leave its claims grew: a claim that refused a pod for
    /// want of that room might take it now, so every claim of the pool but `except` (just
    /// changed, and listed so already) forgets its refusals and is listed as changed, which
    /// offers it again to every kind of pod.
    fn forget_pool_refusals(&mut self, pool: usize, except: usize) {
        for &c in &self.by_pool[pool] {
            let claim = &mut self.claims[c as usize];
            if c as usize != except && !claim.refused.is_empty() {
                claim.refused.clear();
                self.changes.push(c);
            }
        }
    }

    /// Counts a placed pod in the topology groups it matches or owns.
    fn record(&mut self, p: usize, g: usize, at: Placement) {
        self.placed_on[p] = Some(at);
        self.placements += 1;
        let group = &self.groups[g];
        if !group.any_topology {
            return;
        }
        let (hostname, reqs) = match at {
            Placement::Node(n) => (self.nodes[n].hostname, &self.snap.nodes[n].requirements),
            Placement::Claim(c) => (self.claims[c].hostname, &self.claims[c].reqs),
        };
        // The placement's domain on each key it has one value for, interned in key order;
        // borrowed, not copied (this runs for every pod with topology terms).
        let mut ids: Vec<(&str, DomainId)> = Vec::with_capacity(group.keys.len());
        for k in &group.keys {
            if let Some(v) = reqs.get(k).and_then(|r| r.single_value()) {
                ids.push((k.as_str(), self.topo.intern(v)));
            }
        }
        // A claim's name is its hostname and its NodeClaim label alike.
        let claim = matches!(at, Placement::Claim(_));
        // Only required anti-affinity keeps matching pods away from its owner (the inverse
        // direction kube-scheduler enforces); a preferred term binds its owner alone.
        self.topo
            .record(&group.matches, &group.terms.anti_affinity, |key| {
                if key == labels::HOSTNAME || (claim && key == labels::NODECLAIM) {
                    return Some(hostname);
                }
                ids.iter().find(|(k, _)| *k == key).map(|(_, id)| *id)
            });
    }

    /// The static part of placing a variant on a pool: taints, requirements, and which
    /// instance types can ever match. Computed once per (group, variant, pool); returns
    /// whether the pool can take the variant at all.
    pub(super) fn pool_fit(&mut self, g: usize, vi: usize, pi: usize) -> bool {
        if let Some(cached) = self.groups[g].variants[vi].pool_fit.get(pi) {
            return cached.is_ok();
        }
        let result = self.compute_pool_fit(g, vi, pi);
        let ok = result.is_ok();
        let pools = self.pools.len();
        self.groups[g].variants[vi]
            .pool_fit
            .insert(pi, pools, result);
        ok
    }

    /// The cached outcome of [`Self::pool_fit`]; call that first.
    pub(super) fn pool_fit_result(
        &self,
        g: usize,
        vi: usize,
        pi: usize,
    ) -> &Result<PoolFit, Refusal> {
        self.groups[g].variants[vi]
            .pool_fit
            .get(pi)
            .expect("pool_fit computed before use")
    }

    fn compute_pool_fit(&self, g: usize, vi: usize, pi: usize) -> Result<PoolFit, Refusal> {
        let pod = self.rep_pod(g);
        let v = &self.groups[g].variants[vi].variant;
        let ps = &self.pools[pi];
        if let Some(t) = first_untolerated(&ps.pool.taints, &pod.tolerations, v.strict_taints) {
            return Err(Refusal::new(
                Why::Taint,
                format!("NodePool {}: taint {t} is not tolerated", ps.pool.name),
            ));
        }
        // Keys the pool's instance types label (a catalog's own labels) are the types' to
        // decide, like well-known ones: the type filter below checks them.
        let untyped;
        let checked = if ps.type_keys.is_empty()
            || !v.requirements.keys().any(|k| ps.type_keys.contains(k))
        {
            &v.requirements
        } else {
            let mut r = v.requirements.clone();
            for k in &ps.type_keys {
                r.remove(k);
            }
            untyped = r;
            &untyped
        };
        if let Some(c) = ps.reqs.conflict_with(checked, Undefined::WellKnownOpen) {
            return Err(Refusal::new(
                Why::Requirement,
                format!(
                    "NodePool {}: pod {}",
                    ps.pool.name,
                    c.to_string()
                        .replace("the node offers", "the NodePool allows")
                ),
            ));
        }
        // DaemonSets hold host ports per instance type (as their requests): a pod needing one
        // may only use the types where no DaemonSet holds it.
        let ports = ps.daemon_ports
            && !pod.host_ports.is_empty()
            && ps.types.iter().any(|t| t.ports_taken(&pod.host_ports));
        let port_free = |t: &TypeInfo| !ports || !t.ports_taken(&pod.host_ports);
        let port_refusal = || {
            let hp = pod
                .host_ports
                .iter()
                .find(|hp| {
                    ps.types
                        .iter()
                        .any(|t| t.ports_taken(std::slice::from_ref(*hp)))
                })
                .or(pod.host_ports.first());
            let (port, protocol) = hp
                .map(|h| (h.port, h.protocol.as_str()))
                .unwrap_or_default();
            Refusal::new(
                Why::HostPort,
                format!(
                    "NodePool {}: host port {port}/{protocol} is held by a DaemonSet on every instance type that could take the pod",
                    ps.pool.name
                ),
            )
        };
        if let Some(r) = [labels::HOSTNAME, labels::NODECLAIM]
            .iter()
            .filter_map(|k| v.requirements.get(k))
            .find(|r| r.finite_values().is_some() || r.integer_bounded())
        {
            // A new node's name is made at launch: no pod can name it in advance, and a pod
            // pinned to another node's name must wait for that node, not get a new one. Nor
            // is a made name ever an integer, which Gt/Lt need.
            return Err(Refusal::new(
                Why::Hostname,
                format!(
                    "NodePool {}: pod requires {r}, which no new node can have",
                    ps.pool.name
                ),
            ));
        }
        if v.requirements.is_empty() && !ports {
            // Nothing to narrow: every type the pool offers, where the pool offers it.
            let key = (pi, self.groups[g].keys.clone());
            if let Some(fit) = self.open_fits.borrow().get(&key) {
                return Ok(fit.clone());
            }
            let types: Vec<u32> = (0..ps.types.len() as u32).collect();
            let mut reqs = ps.reqs.clone();
            self.add_topology_domains(g, pi, &types, &mut reqs);
            let fit = PoolFit {
                reqs,
                types,
                zones: ps.zones.iter().cloned().collect(),
            };
            self.open_fits.borrow_mut().insert(key, fit.clone());
            return Ok(fit);
        }
        let mut reqs = ps.reqs.clone();
        reqs.add_all(&v.requirements);
        if let Some(r) = reqs.unsatisfiable_key() {
            return Err(Refusal::new(
                Why::Requirement,
                format!("NodePool {}: no node can satisfy {r}", ps.pool.name),
            ));
        }
        let types: Vec<u32> = ps
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| type_compatible(&t.it, &reqs, None))
            .map(|(i, _)| i as u32)
            .collect();
        let types: Vec<u32> = if ports {
            let free: Vec<u32> = types
                .iter()
                .copied()
                .filter(|&t| port_free(&ps.types[t as usize]))
                .collect();
            if free.is_empty() && !types.is_empty() {
                return Err(port_refusal());
            }
            free
        } else {
            types
        };
        if types.is_empty() {
            let wanted: Vec<String> = v
                .requirements
                .iter()
                .filter(|r| labels::is_well_known(&r.key))
                .map(|r| r.to_string())
                .collect();
            return Err(Refusal::new(
                Why::InstanceTypes,
                format!(
                    "NodePool {}: no instance type matches {}",
                    ps.pool.name,
                    if wanted.is_empty() {
                        "the NodePool's requirements".to_string()
                    } else {
                        wanted.join(", ")
                    }
                ),
            ));
        }
        let zones: BTreeSet<String> = types
            .iter()
            .flat_map(|&t| ps.types[t as usize].it.offerings.iter())
            .filter(|o| o.available && o.allowed_by(&reqs))
            .map(|o| o.zone.clone())
            .collect();
        self.add_topology_domains(g, pi, &types, &mut reqs);
        Ok(PoolFit {
            reqs,
            types,
            zones: zones.into_iter().collect(),
        })
    }

    /// Spells out, for each topology key the group takes part in that `reqs` leave open,
    /// the values a new node of these types can carry there (capacity types and zones from
    /// offerings, arch and the other type labels from the types). A pool that allows both
    /// capacity types without listing them still offers both as domains, and a claim's
    /// domain on such a key can then be chosen like its zone.
    fn add_topology_domains(&self, g: usize, pi: usize, types: &[u32], reqs: &mut Requirements) {
        let ps = &self.pools[pi];
        for key in &self.groups[g].keys {
            if labels::is_per_node(key)
                || reqs.get(key).is_some_and(|r| r.finite_values().is_some())
            {
                continue;
            }
            let values =
                producible_values(types.iter().map(|&t| &*ps.types[t as usize].it), reqs, key);
            if !values.is_empty() {
                reqs.add(Requirement::any_of(key, values));
            }
        }
    }

    pub(super) fn fresh_name(&mut self, pi: usize) -> String {
        loop {
            let ps = &mut self.pools[pi];
            ps.seq += 1;
            let name = format!(
                "{}-{}",
                ps.pool.name,
                name_suffix(&ps.pool.name, self.opts.name_seed, ps.seq)
            );
            if self.taken_names.insert(name.clone()) {
                return name;
            }
        }
    }

    pub fn existing_placements(&self) -> Vec<(String, bool, Vec<String>)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.placed.is_empty())
            .map(|(i, n)| {
                (
                    self.snap.nodes[i].name.clone(),
                    self.snap.nodes[i].in_flight,
                    n.placed
                        .iter()
                        .map(|p| self.snap.pending[*p].key())
                        .collect(),
                )
            })
            .collect()
    }
}

/// Whether one of a pod's host `ports` conflicts with one of those already `held` on a
/// node or claim: [`Solver::claim_takes`]'s host-port refusal.
pub(super) fn ports_clash(ports: &[HostPort], held: &[HostPort]) -> bool {
    ports.iter().any(|hp| held.iter().any(|o| o.conflicts(hp)))
}

/// The values `key` can take on a node of one of `types` launched under `reqs`: zones,
/// zone IDs and capacity types from the available offerings `reqs` allow, labels the types
/// decide from the types, any other key from `reqs` alone (a custom label the pool sets).
pub(super) fn producible_values<'t>(
    types: impl Iterator<Item = &'t InstanceType>,
    reqs: &Requirements,
    key: &str,
) -> BTreeSet<String> {
    let wanted = reqs.get(key);
    let allowed = |v: &str| wanted.is_none_or(|r| r.allows(v));
    let mut out = BTreeSet::new();
    match key {
        labels::ZONE | labels::ZONE_ID | labels::CAPACITY_TYPE => {
            for it in types {
                for o in it
                    .offerings
                    .iter()
                    .filter(|o| o.available && o.allowed_by(reqs))
                {
                    let v = match key {
                        labels::ZONE => Some(&o.zone),
                        labels::ZONE_ID => o.zone_id.as_ref(),
                        _ => Some(&o.capacity_type),
                    };
                    if let Some(v) = v.filter(|v| allowed(v) && !out.contains(*v)) {
                        out.insert(v.clone());
                    }
                }
            }
        }
        _ => {
            let mut decided = false;
            for it in types {
                if let Some(vals) = it.requirements.get(key).and_then(|r| r.finite_values()) {
                    decided = true;
                    out.extend(vals.iter().filter(|v| allowed(v)).cloned());
                }
            }
            if !decided && let Some(vals) = wanted.and_then(|r| r.finite_values()) {
                out.extend(vals.iter().cloned());
            }
        }
    }
    out
}

/// Whether an instance type can satisfy `reqs` on the keys the instance type decides.
/// With `only`, just those keys are checked (the rest were checked before).
#[inline]
pub(super) fn type_compatible(
    it: &InstanceType,
    reqs: &Requirements,
    only: Option<&[&str]>,
) -> bool {
    type_miss(it, reqs, only).is_none()
}

/// Why an instance type cannot satisfy a set of requirements ([`type_miss`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum TypeMiss<'r> {
    /// The type's label (or its absence) does not satisfy this requirement.
    Label(&'r Requirement),
    /// No available offering in an allowed zone and capacity type.
    Offering,
}

/// [`type_compatible`]'s answer with its reason: the first requirement the type fails, or
/// its offerings. One definition serves placement and `explain`.
pub(super) fn type_miss<'r>(
    it: &InstanceType,
    reqs: &'r Requirements,
    only: Option<&[&str]>,
) -> Option<TypeMiss<'r>> {
    // A key the type labels (well-known, or a catalog's own label) is the type's to decide;
    // another well-known key the type lacks is absent on its nodes; any other key is the
    // pool's or the pod's business, not the type's.
    let check = |r: &Requirement| -> bool {
        if labels::is_per_node(&r.key) || r.key == labels::NODEPOOL {
            return true;
        }
        // Which reservation, if any, is a fact of the offering, checked below with them.
        if labels::is_reservation_key(&r.key) {
            return true;
        }
        match it.requirements.get(&r.key) {
            Some(mine) => mine.compatible(r),
            None => !labels::is_well_known(&r.key) || r.allows_absent(),
        }
    };
    let (failed, offerings_matter) = match only {
        Some(keys) => (
            keys.iter().filter_map(|k| reqs.get(k)).find(|r| !check(r)),
            keys.iter()
                .any(|k| [labels::ZONE, labels::ZONE_ID, labels::CAPACITY_TYPE].contains(k)),
        ),
        None => (reqs.iter().find(|r| !check(r)), true),
    };
    if let Some(r) = failed {
        return Some(TypeMiss::Label(r));
    }
    (offerings_matter && !it.any_offering(reqs)).then_some(TypeMiss::Offering)
}

/// Why a pool leaves one of its instance types out before any pod is considered.
#[derive(Debug, Clone, Copy)]
pub(super) enum PoolTypeMiss<'r> {
    /// The pool's own requirements (or offerings under them) rule it out.
    Type(TypeMiss<'r>),
    /// The pool's DaemonSets do not fit on it.
    Daemons,
}

/// One instance type as pool requirements `reqs` see it, or why the pool leaves it out:
/// [`prepare_pool`]'s filter, and `explain`'s.
pub(super) fn pool_type<'r>(
    it: &Arc<InstanceType>,
    reqs: &'r Requirements,
    daemons: &super::daemons::Daemons,
    pool_daemons: &super::daemons::PoolDaemons,
) -> Result<TypeInfo, PoolTypeMiss<'r>> {
    if let Some(miss) = type_miss(it, reqs, None) {
        return Err(PoolTypeMiss::Type(miss));
    }
    let daemon = daemons.overhead(pool_daemons, it);
    let daemon_ports = daemons.host_ports(pool_daemons, it);
    // The DaemonSets must fit in full, extended resources too (a DaemonSet asking for a GPU
    // rules out the types without one, as in Karpenter).
    let allocatable = it.allocatable();
    if !daemon.fits_in(allocatable) {
        return Err(PoolTypeMiss::Daemons);
    }
    let usable = allocatable.minus(&daemon);
    // type_miss checked an allowed available offering exists, so there is a cheapest one.
    let price = it
        .cheapest_offering(reqs)
        .ok_or(PoolTypeMiss::Type(TypeMiss::Offering))?
        .price;
    Ok(TypeInfo {
        it: Arc::clone(it),
        usable,
        daemon,
        daemon_ports,
        min_price: price,
        efficiency: 1.0,
        size_rank: 0, // set by `prepare_pool` once the types are in order
    })
}

/// Per instance type of the pools, its EBS attach limit, when some in-flight node lacks a
/// CSINode count for the EBS CSI driver (otherwise empty: nothing reads it).
fn ebs_limits_by_type<'t>(
    nodes: &[crate::ExistingNode],
    pools: &'t [PoolState<'_>],
) -> FastMap<&'t str, u32> {
    let mut out = FastMap::default();
    if !nodes
        .iter()
        .any(|n| n.in_flight && !n.volume_limits.contains_key(EBS_CSI_DRIVER))
    {
        return out;
    }
    for t in pools.iter().flat_map(|ps| &ps.types) {
        if let Some(l) = t.it.ebs_attach_limit {
            out.insert(t.it.name.as_str(), l);
        }
    }
    out
}

/// A node's CSI limits: its CSINode's counts, and for an in-flight claim (no CSINode yet) the
/// EBS CSI count of its instance type (the lowest of the types it may still launch as). None
/// when it has none.
fn node_volume_limits(
    n: &crate::ExistingNode,
    ebs_by_type: &FastMap<&str, u32>,
) -> Option<VolumeLimits> {
    let mut limits = n.volume_limits.clone();
    if n.in_flight && !ebs_by_type.is_empty() && !limits.contains_key(EBS_CSI_DRIVER) {
        let by_type = n
            .requirements
            .get(labels::INSTANCE_TYPE)
            .and_then(|r| r.finite_values())
            .and_then(|names| {
                names
                    .iter()
                    .map(|t| ebs_by_type.get(t.as_str()).copied())
                    .collect::<Option<Vec<u32>>>()
            })
            .and_then(|l| l.into_iter().min());
        if let Some(l) = by_type {
            limits.insert(EBS_CSI_DRIVER.to_string(), l);
        }
    }
    (!limits.is_empty()).then_some(limits)
}

/// The share of the fractional optimum's spend a type needs to widen [`PoolState::ideal_hull`].
const HULL_SHARE: f64 = 0.10;

fn prepare_pool<'a>(
    pool: &'a NodePool,
    daemons: &super::daemons::Daemons,
    demand: &Resources,
) -> PoolState<'a> {
    let reqs = pool.node_requirements();
    let pool_daemons = daemons.for_pool(pool, &reqs);
    let mut types: Vec<TypeInfo> = pool
        .instance_types
        .iter()
        .filter_map(|it| pool_type(it, &reqs, daemons, &pool_daemons).ok())
        .collect();
    types.sort_by(|a, b| {
        a.min_price
            .total_cmp(&b.min_price)
            .then_with(|| a.it.name.cmp(&b.it.name))
    });
    let mut by_size: Vec<usize> = (0..types.len()).collect();
    by_size.sort_unstable_by_key(|&o| {
        let r = &types[o].usable;
        (std::cmp::Reverse(r.cpu), std::cmp::Reverse(r.memory), o)
    });
    for (rank, o) in by_size.into_iter().enumerate() {
        types[o].size_rank = rank as u32;
    }
    // Distinct zones borrowed first, then copied: a copy per offering (types × zones ×
    // capacity types) was most of preparing each of thousands of pools.
    let zones = types
        .iter()
        .flat_map(|t| t.it.offerings.iter())
        .filter(|o| o.available && o.allowed_by(&reqs))
        .map(|o| o.zone.as_str())
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .map(str::to_string)
        .collect();
    let has_min_values = reqs.iter().any(|r| r.min_values.is_some());
    let type_keys: BTreeSet<String> = types
        .iter()
        .flat_map(|t| t.it.requirements.keys())
        .filter(|k| !labels::is_well_known(k) && reqs.get(k).is_none())
        .map(str::to_string)
        .collect();
    let priced: Vec<(Resources, f64)> = types
        .iter()
        .map(|t| (t.usable.clone(), t.min_price))
        .collect();
    let prices = lower_bound::solve(demand, &priced);
    for t in &mut types {
        let worth = prices.value_of(&t.usable);
        t.efficiency = if worth > 0.0 {
            t.min_price / worth
        } else {
            f64::INFINITY
        };
    }
    // The type the fractional optimum spends most on.
    let ideal_room = prices
        .purchase
        .iter()
        .enumerate()
        .filter(|(_, x)| **x > 1e-9)
        .max_by(|a, b| {
            (a.1 * types[a.0].min_price)
                .total_cmp(&(b.1 * types[b.0].min_price))
                .then(b.0.cmp(&a.0))
        })
        .map(|(i, _)| types[i].usable.clone())
        .unwrap_or_default();
    // The most-spent type, and the others the optimum spends a material share on: a sliver
    // of a type bought to round off one resource would otherwise open growth to every shape.
    let spend: Vec<f64> = prices
        .purchase
        .iter()
        .zip(&types)
        .map(|(x, t)| x * t.min_price)
        .collect();
    let total: f64 = spend.iter().sum();
    let mut ideal_hull = ideal_room.clone();
    for (t, s) in types.iter().zip(&spend) {
        if *s > 1e-12 && *s >= HULL_SHARE * total {
            ideal_hull.max_with(&t.usable);
        }
    }
    let daemon_ports = types.iter().any(|t| !t.daemon_ports.is_empty());
    PoolState {
        has_min_values,
        ideal_room,
        ideal_hull,
        pool,
        reqs,
        types,
        daemon_ports,
        type_keys,
        in_use: Resources::default(),
        reserved: Resources::default(),
        zones,
        seq: 0,
    }
}
